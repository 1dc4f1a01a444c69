"""The boot's initcall results, from the initcall_finish trace events that
trace_event=initcall:initcall_finish (platform/amd-pstate/vm-cppc.sh)
keeps in the trace buffer. Read them before anything clears the buffer."""
import re

TRACE = "/sys/kernel/tracing/trace"


def initcall_returns():
    """[(function, return value)] in the order the initcalls finished."""
    out = []
    try:
        with open(TRACE) as f:
            for line in f:
                m = re.search(r"\binitcall_finish: func=([A-Za-z0-9_.]+)\+\S+ ret=(-?\d+)", line)
                if m:
                    out.append((m.group(1), int(m.group(2))))
    except OSError:
        pass
    return out


def describe(calls, names):
    """'name ret, ...' of the named initcalls, in boot order, for messages."""
    got = [f"{f} {r}" for f, r in calls if f in names]
    return ", ".join(got) or f"none of {', '.join(names)} in {len(calls)} initcall events"
