#!/usr/bin/env python3
"""amd-pstate on the emulated CPPC platform (seed 009), in the guest.

Each test names a behaviour of the driver as Documentation/admin-guide/
pm/amd-pstate.rst describes it. Expected numbers are computed here from
platform/amd-pstate/cppc.conf (the values the SSDT was generated from),
following the document's definitions; what the platform received is read
from the simulator's status page, i.e. as the firmware side saw it.
Output: TAP.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cppc_platform import NoSimulator, Platform  # noqa: E402

CPU_SYS = "/sys/devices/system/cpu"
results = []


def tap(ok, name, skip=None):
    n = len(results) + 1
    results.append(ok)
    line = f"{'ok' if ok else 'not ok'} {n} - {name}"
    if skip:
        line += f" # SKIP {skip}"
    print(line, flush=True)


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def check(name, got, want):
    ok = got == want
    if not ok:
        diag(f"{name}: got {got!r}, expected {want!r}")
    tap(ok, name)
    return ok


def rd(path):
    with open(path) as f:
        return f.read().strip()


def wr(path, value):
    """Write like `echo value > path`; return None or the errno name."""
    try:
        with open(path, "w") as f:
            f.write(str(value))
        return None
    except OSError as e:
        return os.strerror(e.errno)


def policy(cpu, attr):
    return f"{CPU_SYS}/cpufreq/policy{cpu}/{attr}"


def cpuinfo():
    fam = model = None
    flags = set()
    for line in open("/proc/cpuinfo"):
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "cpu family" and fam is None:
            fam = int(v)
        elif k == "model" and model is None:
            model = int(v)
        elif k == "flags" and not flags:
            flags = set(v.split())
    return fam, model, flags


def div_round_closest(x, d):
    return (x + d // 2) // d


def family_cap(fam, model):
    """amd_get_highest_perf() (arch/x86/kernel/cpu/amd.c): the highest
    performance some families really reach, whatever their _CPC says
    ("in some of ASICs, the highest CPPC performance is not the one in the
    _CPC table")."""
    if fam == 0x17 and (0x30 <= model < 0x40 or 0x70 <= model < 0x80):
        return 166
    if fam == 0x19 and (0x20 <= model < 0x30 or 0x40 <= model < 0x70):
        return 166
    return 255


# Plausible ways to get each rule wrong. Expected(..., mistake=M) computes
# the expectations with M instead of the rule; the platform's values are
# only good for testing the rule if some expectation then differs
# (checked first). One mistake is beyond any platform: "highest = the
# family cap alone" agrees with min(_CPC, cap) whenever _CPC >= cap, and
# _CPC < cap makes the tree's amd-pstate-ut fail (see cppc.conf).
MISTAKES = {
    "highest_cpc": "highest_perf = the _CPC value (no family cap)",
    "highest_255": "highest_perf = 255",
    "max_freq_exact": "max_freq = nominal_freq * highest/nominal, exact (no 10-bit fixed point)",
    "max_freq_cpc": "max_freq from the _CPC highest rather than the driver's",
    "lnl_freq_exact": "lowest_nonlinear_freq exact (no 10-bit fixed point)",
    "min_freq_linear": "cpuinfo_min_freq = nominal_freq * lowest/nominal (not the _CPC lowest frequency)",
    "min_freq_lnl": "cpuinfo_min_freq = lowest_nonlinear_freq",
    "perf_floor": "DESIRED = f * highest / max_freq truncated, not rounded",
    "perf_nominal": "DESIRED = f * nominal_perf / nominal_freq",
    "perf_noclamp": "DESIRED not clamped to [lowest, highest]",
    "perf_clamp_lnl": "DESIRED clamped to lowest non-linear, not lowest",
    "delivered_nominal": "delivered performance = nominal_perf * delivered/reference counters",
}


class Expected:
    """What the document (and the driver it describes) derives from the
    _CPC values in cppc.conf on this CPU; with a mistake, what a wrong
    reading of one rule would expect instead."""

    def __init__(self, c, fam, model, mistake=None):
        m = mistake
        self.cap = family_cap(fam, model)
        if m == "highest_cpc":
            self.highest_perf = c["HIGHEST_PERF"]
        elif m == "highest_255":
            self.highest_perf = 255
        else:
            self.highest_perf = min(c["HIGHEST_PERF"], self.cap)
        self.nominal_perf = c["NOMINAL_PERF"]
        self.lowest_perf = c["LOWEST_PERF"]
        # The level DESIRED is kept at or above (the driver's min_perf).
        self.floor_perf = c["LOWEST_NONLINEAR_PERF"] if m == "perf_clamp_lnl" else self.lowest_perf
        # Frequencies scale linearly with performance from the nominal point,
        # ratios in 10-bit fixed point as the driver computes them; kHz.
        nf, npf = c["NOMINAL_FREQ"], self.nominal_perf
        self.nominal_freq = nf * 1000
        hp = c["HIGHEST_PERF"] if m == "max_freq_cpc" else self.highest_perf
        if m == "max_freq_exact":
            self.max_freq = nf * hp * 1000 // npf
        else:
            self.max_freq = (nf * ((hp << 10) // npf) >> 10) * 1000
        lnl = c["LOWEST_NONLINEAR_PERF"]
        if m == "lnl_freq_exact":
            self.lowest_nonlinear_freq = nf * lnl * 1000 // npf
        else:
            self.lowest_nonlinear_freq = (nf * ((lnl << 10) // npf) >> 10) * 1000
        if m == "min_freq_linear":
            self.min_freq = nf * self.lowest_perf * 1000 // npf
        elif m == "min_freq_lnl":
            self.min_freq = self.lowest_nonlinear_freq
        else:
            self.min_freq = c["LOWEST_FREQ"] * 1000
        # The counters' ratio is relative to the reference performance.
        self.ratio_perf = c["NOMINAL_PERF"] if m == "delivered_nominal" else c["REFERENCE_PERF"]
        self.mistake = m
        # scaling_setspeed values for the userspace governor: the lowest
        # non-linear and nominal frequencies, one in the boost range, one
        # just above the lowest (whose level is clamped to lowest_perf).
        self.speeds = (self.lowest_nonlinear_freq, self.nominal_freq,
                       (self.nominal_freq + self.max_freq) // 2, self.min_freq + 1)

    def perf_for(self, freq_khz):
        """DESIRED for a target frequency: scaled to highest_perf at max_freq,
        rounded to the closest level, kept within [lowest, highest]."""
        if self.mistake == "perf_floor":
            p = freq_khz * self.highest_perf // self.max_freq
        elif self.mistake == "perf_nominal":
            p = div_round_closest(freq_khz * self.nominal_perf, self.nominal_freq)
        else:
            p = div_round_closest(freq_khz * self.highest_perf, self.max_freq)
        if self.mistake == "perf_noclamp":
            return p
        return max(self.floor_perf, min(self.highest_perf, p))

    def observables(self, speeds):
        """Every number the tests below compare with what the kernel or the
        platform shows, for the given scaling_setspeed values."""
        return (self.highest_perf, self.max_freq, self.lowest_nonlinear_freq, self.min_freq,
                self.ratio_perf, self.perf_for(self.min_freq), self.perf_for(self.nominal_freq),
                tuple(self.perf_for(f) for f in speeds))


def spin(cpu, seconds):
    """A busy loop pinned to cpu, in a child process."""
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {cpu})
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        os._exit(0)
    return pid


def watch(plat, cpu, seconds, period=0.05):
    """Sample the DESIRED the simulator sees on cpu, from a light task on
    that cpu (its wake-ups are what lets the governor re-evaluate an
    otherwise idle CPU)."""
    os.sched_setaffinity(0, {cpu})
    seen = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        seen.append(plat.cpu(cpu)["desired"])
        time.sleep(period)
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    return seen


def main():
    try:
        plat = Platform()
        plat.check()
    except NoSimulator as e:
        print(f"Bail out! {e}", flush=True)
        return 1
    c = plat.conf
    fam, model, flags = cpuinfo()
    exp = Expected(c, fam, model)
    cpus = sorted(int(m.group(1)) for d in os.listdir(CPU_SYS)
                  if (m := re.fullmatch(r"cpu(\d+)", d)))
    diag(f"family {fam:#x} model {model:#x} (cap {exp.cap}), {len(cpus)} CPUs; expected "
         f"highest_perf {exp.highest_perf}, max_freq {exp.max_freq}, lowest_nonlinear_freq "
         f"{exp.lowest_nonlinear_freq}, min_freq {exp.min_freq}, DESIRED at min_freq "
         f"{exp.perf_for(exp.min_freq)}, setspeeds {exp.speeds} -> "
         f"{[exp.perf_for(f) for f in exp.speeds]}")

    # The platform's values must tell each rule from its likely mistakes,
    # or a test below could pass with the rule wrong.
    same = [what for m, what in MISTAKES.items()
            if Expected(c, fam, model, m).observables(exp.speeds) == exp.observables(exp.speeds)]
    for what in same:
        diag(f"cppc.conf on this CPU cannot tell the rule from: {what}")
    tap(not same, f"cppc.conf on this CPU (family {fam:#x} model {model:#x}) tells each of "
        f"{len(MISTAKES)} rule mistakes from the rule ({len(same)} indistinguishable)")

    # --- loading and capabilities ---------------------------------------
    loaded = True
    for cpu in cpus:
        loaded &= check(f"cpu{cpu}: scaling_driver is amd-pstate",
                        rd(policy(cpu, "scaling_driver"))
                        if os.path.exists(policy(cpu, "scaling_driver"))
                        else "(no cpufreq policy)", "amd-pstate")
    if not loaded:
        print("Bail out! amd-pstate is not the cpufreq driver: nothing else can be tested",
              flush=True)
        return 1
    for cpu in cpus:
        st = plat.cpu(cpu)
        tap(st["enable"] == 1 and st["enabled_count"] >= 1,
            f"cpu{cpu}: CPPC ENABLE set at boot (simulator saw enable={st['enable']}, "
            f"{st['enabled_count']} enabling write(s))")
    cpu = cpus[0]
    check(f"amd_pstate_highest_perf = min(_CPC highest {c['HIGHEST_PERF']}, the family's cap "
          f"{exp.cap})",
          int(rd(policy(cpu, "amd_pstate_highest_perf"))), exp.highest_perf)
    check("amd_pstate_max_freq = nominal_freq * highest/nominal",
          int(rd(policy(cpu, "amd_pstate_max_freq"))), exp.max_freq)
    check("amd_pstate_lowest_nonlinear_freq = nominal_freq * lowest_nonlinear/nominal",
          int(rd(policy(cpu, "amd_pstate_lowest_nonlinear_freq"))), exp.lowest_nonlinear_freq)
    check("cpuinfo_min_freq = _CPC lowest frequency",
          int(rd(policy(cpu, "cpuinfo_min_freq"))), exp.min_freq)
    check("cpuinfo_max_freq = amd_pstate_max_freq (boost on)",
          int(rd(policy(cpu, "cpuinfo_max_freq"))), exp.max_freq)
    acpi = f"{CPU_SYS}/cpu{cpu}/acpi_cppc"
    for attr, key in (("highest_perf", "HIGHEST_PERF"), ("nominal_perf", "NOMINAL_PERF"),
                      ("lowest_nonlinear_perf", "LOWEST_NONLINEAR_PERF"),
                      ("lowest_perf", "LOWEST_PERF"), ("reference_perf", "REFERENCE_PERF"),
                      ("nominal_freq", "NOMINAL_FREQ"), ("lowest_freq", "LOWEST_FREQ")):
        check(f"acpi_cppc/{attr} = the _CPC value", int(rd(f"{acpi}/{attr}")), c[key])

    # --- governors put the expected DESIRED into the register -------------
    govs = rd(policy(cpu, "scaling_available_governors")).split()
    diag(f"governors: {' '.join(govs)}")
    for cpu in cpus:
        wr(policy(cpu, "scaling_governor"), "performance")
        check(f"cpu{cpu}: performance governor -> DESIRED = highest_perf",
              plat.wait_desired(cpu, exp.highest_perf), exp.highest_perf)
    cpu = cpus[0]
    want = exp.perf_for(exp.min_freq)
    wr(policy(cpu, "scaling_governor"), "powersave")
    check("powersave governor -> DESIRED = the level of cpuinfo_min_freq",
          plat.wait_desired(cpu, want), want)

    # Feedback counters move, and say what the platform delivered.
    wr(policy(cpu, "scaling_governor"), "performance")
    plat.wait_desired(cpu, exp.highest_perf)
    time.sleep(0.1)

    def ctrs():
        m = re.match(r"ref:(\d+) del:(\d+)", rd(f"{acpi}/feedback_ctrs"))
        return int(m.group(1)), int(m.group(2))
    r0, d0 = ctrs()
    time.sleep(0.5)
    r1, d1 = ctrs()
    moving = r1 > r0 and d1 > d0
    tap(moving, f"acpi_cppc/feedback_ctrs move (ref +{r1 - r0}, del +{d1 - d0} in 0.5 s)")
    delivered = exp.ratio_perf * (d1 - d0) / (r1 - r0) if moving else 0
    tap(abs(delivered - exp.highest_perf) <= 0.02 * exp.highest_perf,
        f"feedback counters: delivered performance = reference_perf {exp.ratio_perf} x "
        f"delivered/reference = {delivered:.1f}, the requested {exp.highest_perf} (within 2%)")

    wr(policy(cpu, "scaling_governor"), "userspace")
    for khz in exp.speeds:
        want = exp.perf_for(khz)
        err = wr(policy(cpu, "scaling_setspeed"), khz)
        check(f"userspace governor: scaling_setspeed {khz} -> DESIRED {want}",
              (err, plat.wait_desired(cpu, want)), (None, want))

    # --- bad input: refused or clamped as the cpufreq core does ----------
    # The core parses with sscanf("%u"): no number is EINVAL, a number
    # followed by junk is that number; a frequency outside the policy's
    # limits is clamped to them.
    for bad in ("abc", " ", "-x"):
        check(f"scaling_setspeed {bad!r} is refused",
              wr(policy(cpu, "scaling_setspeed"), bad), os.strerror(22))
    err = wr(policy(cpu, "scaling_setspeed"), 4000000000)
    check("scaling_setspeed above cpuinfo_max_freq -> clamped: DESIRED = highest_perf",
          (err, plat.wait_desired(cpu, exp.highest_perf)), (None, exp.highest_perf))
    want = exp.perf_for(exp.min_freq)
    err = wr(policy(cpu, "scaling_setspeed"), "12abc")
    check("scaling_setspeed '12abc' is read as 12 and clamped: DESIRED = lowest level",
          (err, plat.wait_desired(cpu, want)), (None, want))
    wr(policy(cpu, "scaling_setspeed"), exp.nominal_freq)
    err = wr(policy(cpu, "scaling_setspeed"), 1)
    check("scaling_setspeed below cpuinfo_min_freq -> clamped: DESIRED = lowest level",
          (err, plat.wait_desired(cpu, want)), (None, want))
    wr(policy(cpu, "scaling_governor"), "performance")
    for attr in ("scaling_max_freq", "scaling_min_freq"):
        check(f"{attr} 'garbage' is refused", wr(policy(cpu, attr), "garbage"), os.strerror(22))
    wr(policy(cpu, "scaling_max_freq"), 1)
    check("scaling_max_freq 1 -> clamped to cpuinfo_min_freq",
          int(rd(policy(cpu, "scaling_max_freq"))), exp.min_freq)
    check("... and the performance governor follows: DESIRED = lowest level",
          plat.wait_desired(cpu, want), want)
    wr(policy(cpu, "scaling_max_freq"), 2000000000)
    check("scaling_max_freq 2000000000 -> clamped to cpuinfo_max_freq",
          int(rd(policy(cpu, "scaling_max_freq"))), exp.max_freq)
    wr(policy(cpu, "scaling_min_freq"), 2000000000)
    got = (int(rd(policy(cpu, "scaling_min_freq"))), int(rd(policy(cpu, "scaling_max_freq"))))
    check("scaling_min_freq 2000000000 -> clamped to scaling_max_freq", got,
          (exp.max_freq, exp.max_freq))
    wr(policy(cpu, "scaling_min_freq"), 0)
    check("scaling_min_freq 0 -> clamped to cpuinfo_min_freq",
          int(rd(policy(cpu, "scaling_min_freq"))), exp.min_freq)
    # Beyond freq QoS's s32 range: whatever the core makes of it, the
    # limits stay inside cpuinfo's and the register inside the capabilities.
    for attr in ("scaling_max_freq", "scaling_min_freq"):
        wr(policy(cpu, attr), 4294967295)
        lo, hi = int(rd(policy(cpu, "scaling_min_freq"))), int(rd(policy(cpu, "scaling_max_freq")))
        tap(exp.min_freq <= lo <= hi <= exp.max_freq and
            exp.lowest_perf <= plat.cpu(cpu)["desired"] <= exp.highest_perf,
            f"{attr} 4294967295: limits stay within cpuinfo ({lo}..{hi}), "
            f"DESIRED within the capabilities ({plat.cpu(cpu)['desired']})")
    wr(policy(cpu, "scaling_min_freq"), exp.min_freq)
    wr(policy(cpu, "scaling_max_freq"), exp.max_freq)
    check("limits restored: DESIRED = highest_perf",
          plat.wait_desired(cpu, exp.highest_perf), exp.highest_perf)

    # --- boost -------------------------------------------------------------
    boost = f"{CPU_SYS}/cpufreq/boost"
    check("boost is supported and on (highest_perf > nominal_perf)", rd(boost), "1")
    for bad in ("2", "-1", "yes"):
        check(f"boost {bad!r} is refused", wr(boost, bad), os.strerror(22))
    check("boost 0 is accepted", wr(boost, 0), None)
    check("boost off: scaling_max_freq = cpuinfo_max_freq = nominal frequency",
          (int(rd(policy(cpu, "scaling_max_freq"))), int(rd(policy(cpu, "cpuinfo_max_freq")))),
          (exp.nominal_freq, exp.nominal_freq))
    want = exp.perf_for(exp.nominal_freq)
    check(f"boost off: performance governor -> DESIRED {want} (nominal)",
          plat.wait_desired(cpu, want), want)
    wr(boost, 1)
    check("boost on again: scaling_max_freq = amd_pstate_max_freq",
          int(rd(policy(cpu, "scaling_max_freq"))), exp.max_freq)
    check("boost on again: DESIRED = highest_perf",
          plat.wait_desired(cpu, exp.highest_perf), exp.highest_perf)

    # --- dynamic governors: load raises DESIRED, idle lowers it ----------
    # Load and idle alternate between the CPUs (the README's timeline plot).
    for gov, cycles in (("ondemand", 1), ("schedutil", 3)):
        if gov not in govs:
            tap(False, f"{gov}: governor available")
            continue
        for cpu in cpus:
            wr(policy(cpu, "scaling_governor"), gov)
        t_start = plat.header()["elapsed_ns"] / 1e9
        for cycle in range(cycles):
            for cpu in cpus:
                idle = watch(plat, cpu, 1.0)
                pid = spin(cpu, 1.5)
                busy = watch(plat, cpu, 1.5)
                os.waitpid(pid, 0)
                after = watch(plat, cpu, 1.5)
                busy_max, idle_end = max(busy), after[-1]
                tap(busy_max == exp.highest_perf and busy_max > idle[-1],
                    f"{gov} cycle {cycle + 1} cpu{cpu}: busy loop raises DESIRED "
                    f"({idle[-1]} -> {busy_max}, highest {exp.highest_perf})")
                tap(idle_end < exp.nominal_perf,
                    f"{gov} cycle {cycle + 1} cpu{cpu}: idle lowers DESIRED again "
                    f"({busy_max} -> {idle_end}, below nominal {exp.nominal_perf})")
        if gov == "schedutil" and os.environ.get("T_OUT"):
            # The host plots this window of the simulator's timeline.
            with open(os.path.join(os.environ["T_OUT"], "cppc-window"), "w") as f:
                f.write(f"{t_start:.3f} {plat.header()['elapsed_ns'] / 1e9:.3f} {gov}\n")

    # --- the register never held a value outside [lowest, highest] --------
    for cpu in cpus:
        st = plat.cpu(cpu)
        tap(st["out_of_range"] == 0 and exp.lowest_perf <= st["desired_min"] and
            st["desired_max"] <= exp.highest_perf,
            f"cpu{cpu}: every DESIRED the platform saw was within [lowest {exp.lowest_perf}, "
            f"the driver's highest {exp.highest_perf}] (seen {st['desired_min']}.."
            f"{st['desired_max']}, {st['changes']} changes)")

    # --- what QEMU cannot emulate ----------------------------------------
    why_msr = ("TCG has no AMD CPPC MSRs (CPUID 8000_0008 EBX[27] 'cppc' is clear; "
               "unknown MSRs read 0 and ignore writes)")
    if "cppc" in flags:
        tap(False, "MSR (full MSR) implementation: CPU has CPPC MSRs but this suite "
            "only emulates the shared-memory platform")
    else:
        tap(True, "MSR (full MSR) implementation", skip=why_msr)
        tap(True, "fast switch and adjust_perf (schedutil's direct path)",
            skip="only with the MSR implementation; " + why_msr)
    why_aperf = "TCG implements no APERF/MPERF ('aperfmperf' not in /proc/cpuinfo)"
    if "aperfmperf" in flags:
        tap(False, "APERF/MPERF-based frequency: present but not covered by this suite")
    else:
        tap(True, "APERF/MPERF-based frequency sampling", skip=why_aperf)
        tap(True, "trace event amd_cpu:amd_pstate_perf fires on requests",
            skip="amd_pstate_sample() needs moving APERF/MPERF; " + why_aperf)

    for cpu in cpus:
        wr(policy(cpu, "scaling_governor"), "performance")
    print(f"1..{len(results)}", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
