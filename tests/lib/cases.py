"""One case of a guest-side Python test program as a TAP line (tests/tc,
tc-lifetime, ovs, runtimes, idmap-ext4): "ok N NAME", "ok N NAME # SKIP
WHY" when the case raised Skip (WHY must be a reason tests/skip-reasons
knows), or "not ok N NAME" followed by the failure as "# " lines; and
"case N NAME: S s", its time, on stderr (the stream's NAME.err), which
shows where an area's time goes. The plan, and what each program checks
around its cases, stay its own."""
import os
import sys
import time
import traceback


class Skip(Exception):
    """The case cannot run here; the message says why."""


def lacks(patch):
    """The reason to skip a test of PATCH on a kernel that lacks it (make
    bisect-check's prefixes set T_LACKS; make check never does), or None."""
    if patch in os.environ.get("T_LACKS", "").split(","):
        return f"needs patch {patch}, which this kernel lacks"
    return None


def _lines(err):
    return str(err) or "".join(traceback.format_exception(err))


def run_case(n, name, fn, *args):
    """Run fn(*args) as case n, print its TAP line and its time on stderr.

    An error raised while another was being handled (a case's cleanup in a
    finally block, say) is printed with the one it replaced."""
    t0 = time.monotonic()
    try:
        fn(*args)
    except Skip as e:
        print(f"ok {n} {name} # SKIP {e}")
    except Exception as e:  # noqa: BLE001 - any failure fails the case
        print(f"not ok {n} {name}")
        # A traceback (an error without a message) shows the chain itself.
        ctx = None if e.__suppress_context__ or not str(e) else e.__context__
        for err in (e, ctx) if ctx else (e,):
            for line in _lines(err).splitlines():
                print(f"# {line}")
    else:
        print(f"ok {n} {name}")
    sys.stdout.flush()
    print(f"case {n} {name}: {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
