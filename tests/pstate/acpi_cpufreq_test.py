#!/usr/bin/env python3
"""acpi-cpufreq on the emulated platform's P-states, in a guest where
amd-pstate did not load (tests/pstate-nocpc: amd_pstate=disable with _CPC,
and no _CPC at all). Seed 009: "while the amd-pstate fails to be
initialized, the kernel will fall back to initialize acpi-cpufreq".

What is expected comes from cppc.conf (the SSDT's _PSS has a P-state n per
PSS_Pn_FREQ, control = status = n; _PCT's two registers are CPU c's byte
at I/O port PSS_PORT + c, which QEMU's pc-testdev reads back as last
written) and from the 6.1 source:
- amd_pstate_init() (device_initcall) returns -ENODEV here, and
  acpi_cpufreq_init() (late_initcall) registers the driver: 0;
- acpi_cpufreq_cpu_init() takes SystemIO registers (cpu_freq_write_io())
  and makes a frequency table of the _PSS in kHz. The highest frequency
  is P0's, unless the CPU has a _CPC: then get_max_boost_ratio() makes it
  the _CPC nominal frequency times amd_get_highest_perf() / nominal
  performance (10-bit fixed point, SCHED_CAPACITY_SHIFT) - the
  amd_pstate=disable boot has a _CPC, the one without has not;
- with the userspace governor, scaling_setspeed makes acpi_cpufreq_target()
  write the P-state's control value into the register and sets
  policy->cur (scaling_cur_freq). With SystemIO registers 6.1 has no
  ->get() ("the current speed is unknown and not detectable via IO
  ports"), so there is no cpuinfo_cur_freq: the register itself is read
  here, through /dev/port (CONFIG_DEVPORT).
Output: TAP.
"""
import errno
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("TOP", "/"), "platform/amd-pstate"))
sys.path.insert(0, HERE)
from cppc_conf import load_conf, pstates as conf_pstates  # noqa: E402
from initcalls import describe, initcall_returns  # noqa: E402
from pstate_test import cpuinfo, family_cap  # noqa: E402

CONF = os.path.join(os.environ.get("TOP", "/"), "platform/amd-pstate/cppc.conf")
CPU_SYS = "/sys/devices/system/cpu"
results = []


def tap(ok, name):
    results.append(ok)
    print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}", flush=True)


def rd(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return f"<{errno.errorcode.get(e.errno, e.errno)}>"


def wr(path, value):
    try:
        with open(path, "w") as f:
            f.write(str(value))
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def port_byte(port):
    fd = os.open("/dev/port", os.O_RDONLY)
    try:
        return os.pread(fd, 1, port)[0]
    finally:
        os.close(fd)


def main():
    c = load_conf(CONF)
    pstates = [mhz * 1000 for mhz in conf_pstates(c)]
    cpus = sorted(int(d[3:]) for d in os.listdir(CPU_SYS)
                  if d.startswith("cpu") and d[3:].isdigit())
    pol = lambda cpu, attr: f"{CPU_SYS}/cpufreq/policy{cpu}/{attr}"  # noqa: E731

    calls = initcall_returns()
    names = ("amd_pstate_init", "acpi_cpufreq_init")
    got = [(f, r) for f, r in calls if f in names]
    tap(got == [("amd_pstate_init", -errno.ENODEV), ("acpi_cpufreq_init", 0)],
        "initcalls: amd_pstate_init returns -ENODEV, then acpi_cpufreq_init registers "
        f"the driver (0) ({describe(calls, names)})")

    drivers = [rd(pol(cpu, "scaling_driver")) for cpu in cpus]
    tap(drivers == ["acpi-cpufreq"] * len(cpus),
        f"every CPU's policy is acpi-cpufreq's ({drivers})")
    want = " ".join(map(str, pstates))
    avail = [rd(pol(cpu, "scaling_available_frequencies")) for cpu in cpus]
    tap(avail == [want] * len(cpus),
        f"scaling_available_frequencies are the _PSS frequencies in kHz, P0 first "
        f"({avail}, cppc.conf {want})")
    limits = [(rd(pol(cpu, "cpuinfo_min_freq")), rd(pol(cpu, "cpuinfo_max_freq"))) for cpu in cpus]
    if os.path.isdir(f"{CPU_SYS}/cpu0/acpi_cppc"):
        fam, model, _ = cpuinfo()
        ratio = (family_cap(fam, model) << 10) // c["NOMINAL_PERF"]
        top, why = c["NOMINAL_FREQ"] * 1000 * ratio >> 10, (
            f"with _CPC: nominal {c['NOMINAL_FREQ']} MHz x {family_cap(fam, model)}/"
            f"{c['NOMINAL_PERF']} in 10-bit fixed point")
    else:
        top, why = max(pstates), "without _CPC: P0"
    tap(limits == [(str(min(pstates)), str(top))] * len(cpus),
        f"cpuinfo_min_freq is the lowest P-state, cpuinfo_max_freq {top} ({why}) ({limits})")

    # Each CPU's register: set, and no other CPU's changes (all CPUs on
    # the userspace governor first: schedutil would move them meanwhile).
    govs = {cpu: wr(pol(cpu, "scaling_governor"), "userspace") for cpu in cpus}
    for cpu in cpus:
        gov = govs[cpu]
        regs = lambda: [port_byte(c["PSS_PORT"] + o) for o in cpus]  # noqa: E731
        others = [r for o, r in zip(cpus, regs()) if o != cpu]
        steps = []
        # every P-state, the one it is in last, so that each writes
        for n in [m for m in range(len(pstates)) if m != port_byte(c["PSS_PORT"] + cpu)] + \
                [port_byte(c["PSS_PORT"] + cpu)]:
            res = wr(pol(cpu, "scaling_setspeed"), pstates[n])
            steps.append((n, res, port_byte(c["PSS_PORT"] + cpu),
                          rd(pol(cpu, "scaling_cur_freq"))))
        after = [r for o, r in zip(cpus, regs()) if o != cpu]
        ok = gov == "ok" and after == others and all(
            res == "ok" and port == n and cur == str(pstates[n]) for n, res, port, cur in steps)
        tap(ok, f"cpu{cpu}: scaling_setspeed of each P-state writes its control value into the "
            f"CPU's register (port {c['PSS_PORT'] + cpu:#x}) and sets scaling_cur_freq; the other "
            f"CPUs' registers stay (P-state, write, register, scaling_cur_freq: governor {gov}, "
            f"{steps}; others {others} -> {after})")
    print(f"1..{len(results)}", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
