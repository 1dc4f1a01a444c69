#!/usr/bin/env python3
"""amd-pstate on the emulated CPPC platform (seed 009), in the guest.

Each test names a behaviour of the driver as Documentation/admin-guide/
pm/amd-pstate.rst describes it. Expected numbers are computed here from
platform/amd-pstate/cppc.conf (the values the SSDT was generated from),
following the document's definitions; what the platform received is read
from the simulator's status page, i.e. as the firmware side saw it.
Output: TAP.
"""
import errno
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cppc_platform import NoSimulator, Platform  # noqa: E402
from initcalls import describe, initcall_returns  # noqa: E402

CPU_SYS = "/sys/devices/system/cpu"
results = []
# Written into the MIN and MAX request registers after boot: below lowest
# and above highest, so the simulator's clamp makes them [lowest, highest]
# as before, and neither is a value the driver would write.
MIN_SENTINEL = 1
MAX_SENTINEL = 0xffff


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


def limit(cpu, attr, want, timeout=5.0):
    """scaling_min_freq or scaling_max_freq once it equals want, or the last
    value read after timeout seconds. A write to either only updates a freq
    QoS request; the policy's min/max follow later, from a work item
    (cpufreq_notifier_min/max() -> schedule_work(&policy->update)), so a
    read right after the write can still show the old limit."""
    deadline = time.monotonic() + timeout
    while True:
        got = int(rd(policy(cpu, attr)))
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


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


def watch(plat, cpu, seconds, period=0.05, until=None, limit=None):
    """Sample the DESIRED the simulator sees on cpu, from a light task on
    that cpu (its wake-ups are what lets the governor re-evaluate an
    otherwise idle CPU), at least once. With until, go on after seconds
    while the last sample fails until(), up to limit seconds in all."""
    limit = seconds if limit is None else limit
    os.sched_setaffinity(0, {cpu})
    seen = []
    start = time.monotonic()
    while True:
        now = time.monotonic()
        if seen and now - start >= seconds and (
                until is None or until(seen[-1]) or now - start >= limit):
            break
        seen.append(plat.cpu(cpu)["desired"])
        time.sleep(period)
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    return seen


# --- tracefs: the cpu_frequency event -------------------------------------
TRACING = "/sys/kernel/tracing"
CPU_FREQUENCY = f"{TRACING}/events/power/cpu_frequency/enable"


def trace_clear():
    with open(f"{TRACING}/trace", "w"):
        pass  # opening "trace" with O_TRUNC empties the ring buffer


def trace_events():
    """[(state, cpu_id)] of the cpu_frequency events in the buffer, in order."""
    ev = []
    with open(f"{TRACING}/trace") as f:
        for line in f:
            m = re.search(r"\bcpu_frequency: state=(\d+) cpu_id=(\d+)", line)
            if m:
                ev.append((int(m.group(1)), int(m.group(2))))
    return ev


def test_trace(plat, exp, cpus):
    """cpufreq_freq_transition_end() (called by amd_pstate_update_freq() on
    this path, passive mode without fast switch) emits cpu_frequency with the
    target frequency for each CPU of the policy, and sets policy->cur, which
    scaling_cur_freq shows (no APERF/MPERF under TCG, no ->get in 6.1's
    amd-pstate: drivers/cpufreq/cpufreq.c show_scaling_cur_freq())."""
    if not os.path.exists(CPU_FREQUENCY):
        tap(False, f"trace_cpu_frequency: {CPU_FREQUENCY} exists (tracefs mounted, "
            "CONFIG_EVENT_TRACING)")
        return
    wr(f"{TRACING}/tracing_on", 1)
    err = wr(CPU_FREQUENCY, 1)
    if err:
        tap(False, f"trace_cpu_frequency: enabling the event failed ({err})")
        return
    for cpu in cpus:
        gov = policy(cpu, "scaling_governor")
        speed = policy(cpu, "scaling_setspeed")
        steps = (
            ("governor powersave", lambda: wr(gov, "powersave"), exp.min_freq),
            ("governor performance", lambda: wr(gov, "performance"), exp.max_freq),
            # userspace starts at the current frequency (policy->cur)
            ("governor userspace", lambda: wr(gov, "userspace"), exp.max_freq),
            (f"scaling_setspeed {exp.speeds[0]}", lambda: wr(speed, exp.speeds[0]),
             exp.speeds[0]),
            (f"scaling_setspeed {exp.speeds[2]}", lambda: wr(speed, exp.speeds[2]),
             exp.speeds[2]),
            ("scaling_setspeed 1 (clamped)", lambda: wr(speed, 1), exp.min_freq),
        )
        for what, act, freq in steps:
            trace_clear()
            err = act()
            want = exp.perf_for(freq)
            desired = plat.wait_desired(cpu, want)
            ev = trace_events()
            ok = (err is None and ev and all(c == cpu for _, c in ev) and ev[-1] == (freq, cpu)
                  and desired == want)
            if not ok:
                diag(f"{what} on cpu{cpu}: write {err or 'ok'}, events {ev}, DESIRED {desired}")
            tap(ok, f"trace_cpu_frequency: cpu{cpu} {what} -> event state={freq} cpu_id={cpu} "
                f"(only cpu{cpu}'s; DESIRED {want} in the register)")
            check(f"scaling_cur_freq: cpu{cpu} {what} -> {freq} (policy->cur, the last target)",
                  int(rd(policy(cpu, "scaling_cur_freq"))), freq)
        wr(gov, "performance")
        plat.wait_desired(cpu, exp.highest_perf)
    wr(CPU_FREQUENCY, 0)


# --- Debian's cpupower (linux-cpupower) -------------------------------------
CPUPOWER = "/usr/bin/cpupower"


def cpupower(*args):
    p = subprocess.run([CPUPOWER, *args], capture_output=True, text=True,
                       env={**os.environ, "LC_ALL": "C", "LANG": "C"})
    return p.returncode, p.stdout + p.stderr


def speed_exact(text):
    """kHz from cpupower's --no-rounding print_speed() (utils/helpers/misc.c)."""
    m = re.fullmatch(r"(\d+)\.(\d{6}) GHz|(\d+)\.(\d{3}) MHz|(\d+) kHz", text.strip())
    if not m:
        return None
    if m.group(1):
        return int(m.group(1)) * 1000000 + int(m.group(2))
    if m.group(3):
        return int(m.group(3)) * 1000 + int(m.group(4))
    return int(m.group(5))


def speed_rounded(khz):
    """cpupower's print_speed() without --no-rounding, as the seed shows it
    ("4.68 GHz", "400 MHz")."""
    if khz > 1000000:
        if khz % 10000 >= 5000:
            khz += 10000
        return f"{khz // 1000000}.{khz % 1000000 // 10000:02d} GHz"
    if khz > 100000:
        if khz % 1000 >= 500:
            khz += 1000
        return f"{khz // 1000} MHz"
    if khz > 1000:
        if khz % 100 >= 50:
            khz += 100
        return f"{khz // 1000}.{khz % 1000 // 100} MHz"
    return ""


def field(out, pattern):
    m = re.search(pattern, out, re.M)
    return m.groups() if m else None


def test_cpupower(plat, exp, c, cpu):
    """cpupower frequency-info / frequency-set on one CPU: what it reports
    against cppc.conf, what it sets in the platform's registers."""
    if not os.access(CPUPOWER, os.X_OK):
        tap(False, f"cpupower: {CPUPOWER} (Debian's linux-cpupower) is installed")
        return
    cp = ("-c", str(cpu))
    wr(policy(cpu, "scaling_governor"), "performance")
    plat.wait_desired(cpu, exp.highest_perf)
    rc, out = cpupower(*cp, "frequency-info", "-n")
    diag(out)
    name = f"cpupower_frequency_info: cpu{cpu}"
    check(f"{name}: exit status", rc, 0)
    check(f"{name}: driver: amd-pstate", field(out, r"^\s*driver: (\S+)$"), ("amd-pstate",))
    lim = field(out, r"hardware limits: (.+) - (.+)$")
    check(f"{name}: hardware limits = cpuinfo_min_freq (_CPC lowest frequency) - "
          "amd_pstate_max_freq", lim and tuple(map(speed_exact, lim)),
          (exp.min_freq, exp.max_freq))
    govs = field(out, r"available cpufreq governors: (.+)$")
    # A list cpupower copies from sysfs: no register is behind it.
    check(f"{name}: lists the governors scaling_available_governors lists (sysfs only)",
          govs and govs[0].split(), rd(policy(cpu, "scaling_available_governors")).split())
    pol = field(out, r"frequency should be within (.+) and (.+)\.$")
    gov = field(out, r'The governor "(\S+)" may decide')
    desired = plat.cpu(cpu)["desired"]
    check(f"{name}: current policy = [cpuinfo_min_freq, amd_pstate_max_freq], performance, "
          f"and the register holds performance's DESIRED {exp.highest_perf}",
          (pol and tuple(map(speed_exact, pol)), gov, desired),
          ((exp.min_freq, exp.max_freq), ("performance",), exp.highest_perf))
    cur = field(out, r"current CPU frequency: (.+) \(asserted by call to kernel\)$")
    check(f"{name}: current CPU frequency (kernel) = amd_pstate_max_freq under performance, "
          f"the frequency of the DESIRED {exp.highest_perf} the register holds",
          (cur and speed_exact(cur[0]), desired), (exp.max_freq, exp.highest_perf))
    tap("current CPU frequency: Unable to call hardware" in out
        and not os.path.exists(policy(cpu, "cpuinfo_cur_freq")),
        f"{name}: no hardware frequency (6.1's amd-pstate has no ->get: no cpuinfo_cur_freq)")
    check(f"{name}: boost Supported: yes, Active: yes (highest {exp.highest_perf} > nominal "
          f"{c['NOMINAL_PERF']}), and the register holds DESIRED {exp.highest_perf}, above nominal",
          (field(out, r"Supported: (\w+)$"), field(out, r"Active: (\w+)$"), desired),
          (("yes",), ("yes",), exp.highest_perf))
    rows = (("Highest Performance", "Maximum Frequency", exp.highest_perf, exp.max_freq),
            ("Nominal Performance", "Nominal Frequency", c["NOMINAL_PERF"], exp.nominal_freq),
            ("Lowest Non-linear Performance", "Lowest Non-linear Frequency",
             c["LOWEST_NONLINEAR_PERF"], exp.lowest_nonlinear_freq),
            ("Lowest Performance", "Lowest Frequency", c["LOWEST_PERF"], exp.min_freq))
    for perf, freq, want_perf, want_freq in rows:
        got = field(out, rf"AMD PSTATE {perf}: (\d+)\. {freq}: (.+)\.$")
        check(f"{name}: AMD PSTATE {perf} {want_perf}, {freq} {want_freq} kHz",
              got and (int(got[0]), speed_exact(got[1])), (want_perf, want_freq))
    # The default (rounded) output, as seed 009 shows it.
    rc, out = cpupower(*cp, "frequency-info")
    want = [f"AMD PSTATE {perf}: {p}. {freq}: {speed_rounded(f)}." for perf, freq, p, f in rows]
    got = [ln.strip() for ln in out.splitlines() if "AMD PSTATE" in ln]
    check(f"{name}: the seed's AMD PSTATE block, rounded as cpupower prints it", got, want)

    # frequency-set: each setting must reach the platform's DESIRED register.
    name = f"cpupower_frequency_set: cpu{cpu}"

    def fset(*args):
        rc, out = cpupower(*cp, "frequency-set", *args)
        if rc:
            diag(out)
        return rc
    rc = fset("-g", "powersave")
    want = exp.perf_for(exp.min_freq)
    check(f"{name}: -g powersave -> scaling_governor powersave, DESIRED {want}",
          (rc, rd(policy(cpu, "scaling_governor")), plat.wait_desired(cpu, want)),
          (0, "powersave", want))
    rc = fset("-d", str(exp.lowest_nonlinear_freq))
    want = exp.perf_for(exp.lowest_nonlinear_freq)
    check(f"{name}: -d {exp.lowest_nonlinear_freq} (powersave) -> scaling_min_freq, DESIRED {want}",
          (rc, limit(cpu, "scaling_min_freq", exp.lowest_nonlinear_freq), plat.wait_desired(cpu, want)),
          (0, exp.lowest_nonlinear_freq, want))
    rc = fset("-d", str(exp.min_freq))
    want = exp.perf_for(exp.min_freq)
    check(f"{name}: -d {exp.min_freq} -> scaling_min_freq back, DESIRED {want}",
          (rc, limit(cpu, "scaling_min_freq", exp.min_freq), plat.wait_desired(cpu, want)),
          (0, exp.min_freq, want))
    rc = fset("-g", "performance")
    check(f"{name}: -g performance -> DESIRED {exp.highest_perf}",
          (rc, rd(policy(cpu, "scaling_governor")), plat.wait_desired(cpu, exp.highest_perf)),
          (0, "performance", exp.highest_perf))
    rc = fset("-u", str(exp.nominal_freq))
    want = exp.perf_for(exp.nominal_freq)
    check(f"{name}: -u {exp.nominal_freq} (performance) -> scaling_max_freq, DESIRED {want}",
          (rc, limit(cpu, "scaling_max_freq", exp.nominal_freq), plat.wait_desired(cpu, want)),
          (0, exp.nominal_freq, want))
    rc = fset("-u", str(exp.max_freq))
    check(f"{name}: -u {exp.max_freq} -> scaling_max_freq back, DESIRED {exp.highest_perf}",
          (rc, limit(cpu, "scaling_max_freq", exp.max_freq), plat.wait_desired(cpu, exp.highest_perf)),
          (0, exp.max_freq, exp.highest_perf))
    f = exp.speeds[0]
    rc = fset("-f", str(f))
    want = exp.perf_for(f)
    check(f"{name}: -f {f} -> governor userspace, scaling_setspeed {f}, DESIRED {want}",
          (rc, rd(policy(cpu, "scaling_governor")), rd(policy(cpu, "scaling_setspeed")),
           plat.wait_desired(cpu, want)), (0, "userspace", str(f), want))
    rc, out = cpupower(*cp, "frequency-info", "-f")
    check(f"cpupower_frequency_info: cpu{cpu}: -f -> {f} kHz, = scaling_cur_freq, the "
          f"frequency of the register's DESIRED {want}",
          (field(out, r"current CPU frequency: (\d+) \(asserted by call to kernel\)"),
           int(rd(policy(cpu, "scaling_cur_freq"))), plat.cpu(cpu)["desired"]),
          ((str(f),), f, want))
    rc = fset("-g", "performance")
    plat.wait_desired(cpu, exp.highest_perf)

    # boost: amd-pstate's set_boost through cpufreq/boost; cpupower 6.1 reads it
    # (amd_pstate_boost_init(): active = cpuinfo_max_freq == amd_pstate_max_freq).
    boost = f"{CPU_SYS}/cpufreq/boost"
    name = f"cpupower_boost: cpu{cpu}"
    nominal = exp.perf_for(exp.nominal_freq)
    wr(boost, 0)
    desired = plat.wait_desired(cpu, nominal)
    rc, out = cpupower(*cp, "frequency-info", "-b")
    check(f"{name}: cpufreq/boost 0 -> -b says Supported: yes, Active: no; DESIRED "
          f"{exp.highest_perf} -> {nominal} (nominal) in the register",
          (field(out, r"Supported: (\w+)$"), field(out, r"Active: (\w+)$"), desired),
          (("yes",), ("no",), nominal))
    rc, out = cpupower(*cp, "frequency-info", "-l")
    check(f"{name}: boost off -> -l hardware limits {exp.min_freq} {exp.nominal_freq} "
          "(nominal frequency), DESIRED nominal",
          (field(out, r"^(\d+) (\d+)$"), plat.cpu(cpu)["desired"]),
          ((str(exp.min_freq), str(exp.nominal_freq)), exp.perf_for(exp.nominal_freq)))
    wr(boost, 1)
    desired = plat.wait_desired(cpu, exp.highest_perf)
    rc, out = cpupower(*cp, "frequency-info", "-b")
    check(f"{name}: cpufreq/boost 1 -> Active: yes; DESIRED {nominal} -> {exp.highest_perf} "
          "in the register",
          (field(out, r"Active: (\w+)$"), desired), (("yes",), exp.highest_perf))
    # 6.1's cpupower cannot switch boost (cpupower-set.c knows only
    # --perf-bias): the sysfs file is the only way. The register must not
    # move: the simulator counts every change of DESIRED.
    before = plat.cpu(cpu)
    rc, out = cpupower(*cp, "set", "--turbo-boost", "0")
    time.sleep(0.5)  # a boost switch would reach the register within a governor run
    after = plat.cpu(cpu)
    check(f"{name}: 6.1's cpupower has no boost switch (set --turbo-boost refused, boost "
          f"still 1, DESIRED still {exp.highest_perf} and not changed since)",
          (rc != 0, rd(boost), after["desired"], after["changes"] - before["changes"]),
          (True, "1", exp.highest_perf, 0))


def main():
    boot_calls = initcall_returns()  # before test_trace() clears the buffer
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
    # 6.1 never writes the MIN and MAX request registers (drivers/acpi/
    # cppc_acpi.c cppc_set_perf(): "Skip writing MIN/MAX until Linux knows
    # how to come up with useful values"). The simulator starts them at the
    # _CPC lowest and highest; MAX still holding the _CPC highest, not the
    # driver's max_perf, shows nothing wrote it during boot. Then sentinels
    # the simulator clamps to the same range go in; the end of this test
    # checks that they survived everything the driver did in between.
    minmax_boot = [(plat.reg32(cpu, "REG_MIN"), plat.reg32(cpu, "REG_MAX")) for cpu in cpus]
    check(f"min_max_never_written: after boot MIN/MAX still hold the simulator's start values "
          f"(_CPC lowest {c['LOWEST_PERF']}, _CPC highest {c['HIGHEST_PERF']}; the driver's "
          f"max_perf would be {exp.highest_perf})", minmax_boot,
          [(c["LOWEST_PERF"], c["HIGHEST_PERF"])] * len(cpus))
    for cpu in cpus:
        plat.write_reg32(cpu, "REG_MIN", MIN_SENTINEL)
        plat.write_reg32(cpu, "REG_MAX", MAX_SENTINEL)
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
    # The counters are the simulator's: 6.1's amd-pstate never reads them
    # (only acpi_cppc/feedback_ctrs does, cppc_acpi.c show_feedback_ctrs()),
    # so these two test the simulator, not the driver.
    tap(moving, f"simulator_feedback_ctrs: acpi_cppc/feedback_ctrs move (ref +{r1 - r0}, "
        f"del +{d1 - d0} in 0.5 s)")
    delivered = exp.ratio_perf * (d1 - d0) / (r1 - r0) if moving else 0
    tap(abs(delivered - exp.highest_perf) <= 0.02 * exp.highest_perf,
        f"simulator_feedback_ctrs: delivered performance = reference_perf {exp.ratio_perf} x "
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
          limit(cpu, "scaling_max_freq", exp.min_freq), exp.min_freq)
    check("... and the performance governor follows: DESIRED = lowest level",
          plat.wait_desired(cpu, want), want)
    wr(policy(cpu, "scaling_max_freq"), 2000000000)
    check("scaling_max_freq 2000000000 -> clamped to cpuinfo_max_freq",
          limit(cpu, "scaling_max_freq", exp.max_freq), exp.max_freq)
    wr(policy(cpu, "scaling_min_freq"), 2000000000)
    got = (limit(cpu, "scaling_min_freq", exp.max_freq),
           limit(cpu, "scaling_max_freq", exp.max_freq))
    check("scaling_min_freq 2000000000 -> clamped to scaling_max_freq", got,
          (exp.max_freq, exp.max_freq))
    wr(policy(cpu, "scaling_min_freq"), 0)
    check("scaling_min_freq 0 -> clamped to cpuinfo_min_freq",
          limit(cpu, "scaling_min_freq", exp.min_freq), exp.min_freq)
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
          (limit(cpu, "scaling_max_freq", exp.nominal_freq),
           int(rd(policy(cpu, "cpuinfo_max_freq")))),
          (exp.nominal_freq, exp.nominal_freq))
    want = exp.perf_for(exp.nominal_freq)
    check(f"boost off: performance governor -> DESIRED {want} (nominal)",
          plat.wait_desired(cpu, want), want)
    wr(boost, 1)
    check("boost on again: scaling_max_freq = amd_pstate_max_freq",
          limit(cpu, "scaling_max_freq", exp.max_freq), exp.max_freq)
    check("boost on again: DESIRED = highest_perf",
          plat.wait_desired(cpu, exp.highest_perf), exp.highest_perf)

    # --- the cpu_frequency trace event, scaling_cur_freq --------------------
    test_trace(plat, exp, cpus)

    # --- Debian's cpupower against the platform ---------------------------
    test_cpupower(plat, exp, c, cpus[-1])

    # --- seed 009's knobs 6.1 does not have / the fallback driver ---------
    # amd_pstate.shared_mem=1 (seed 009) is no parameter of 6.1: amd-pstate.c
    # has no module_param, only the early_param amd_pstate=passive|disable.
    # Built-in parameters are in /sys/module/MOD/parameters (cpufreq.off is).
    check("no_shared_mem_param: /sys/module/amd_pstate/parameters/shared_mem does not exist "
          "(built-in parameters are listed: cpufreq/parameters/off does)",
          (os.path.exists("/sys/module/amd_pstate/parameters/shared_mem"),
           os.path.exists("/sys/module/cpufreq/parameters/off")), (False, True))
    # acpi-cpufreq is built in and the platform has _PSS and _PCT too, as
    # a real part's firmware: only the order of the initcalls and
    # acpi_cpufreq_init()'s "if (cpufreq_get_current_driver()) return
    # -EEXIST" keep it out (boot_calls: read at the start, before any
    # test cleared the trace buffer).
    names = ("amd_pstate_init", "acpi_cpufreq_init")
    check("drivers_exclusive: amd_pstate_init (device_initcall) registers amd-pstate (0), "
          "then acpi_cpufreq_init (late_initcall) is refused with -EEXIST although the "
          f"platform has _PSS ({describe(boot_calls, names)})",
          [(f, r) for f, r in boot_calls if f in names],
          [("amd_pstate_init", 0), ("acpi_cpufreq_init", -errno.EEXIST)])
    drivers = {rd(policy(cpu, "scaling_driver")) for cpu in cpus}
    check("drivers_exclusive: amd-pstate drives every policy (scaling_driver)",
          drivers, {"amd-pstate"})

    # --- dynamic governors: load raises DESIRED, idle lowers it ----------
    # Load and idle alternate between the CPUs (the README's timeline plot).
    for gov, cycles in (("ondemand", 1), ("schedutil", 3)):
        if gov not in govs:
            tap(False, f"{gov}: governor available")
            continue
        for cpu in cpus:
            wr(policy(cpu, "scaling_governor"), gov)
        t_start = plat.header()["elapsed_ns"] / 1e9
        # Idle must lower DESIRED; how soon depends on the guest's clock,
        # which runs on while a busy host keeps QEMU off its core (make
        # check saw ondemand still at highest 1 s and 1.5 s after a
        # change): wait up to 10 s for it below nominal.
        low = {"until": lambda d: d < exp.nominal_perf, "limit": 10.0}
        for cycle in range(cycles):
            for cpu in cpus:
                # From a low DESIRED: the last governor or loop may have
                # left it at highest.
                idle = watch(plat, cpu, 1.0, **low)
                pid = spin(cpu, 1.5)
                busy = watch(plat, cpu, 1.5)
                os.waitpid(pid, 0)
                after = watch(plat, cpu, 1.5, **low)
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

    # --- MIN/MAX: the sentinels written at the start are still there --------
    check(f"min_max_never_written: MIN/MAX still hold the sentinels {MIN_SENTINEL}/"
          f"{MAX_SENTINEL:#x} after every governor, limit, boost and cpupower change",
          [(plat.reg32(cpu, "REG_MIN"), plat.reg32(cpu, "REG_MAX")) for cpu in cpus],
          [(MIN_SENTINEL, MAX_SENTINEL)] * len(cpus))

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
