#!/usr/bin/env python3
"""amd_pstate=disable on the emulated CPPC platform (_CPC present, the
simulator attached), in the guest. Seed 009: "while the amd-pstate fails to
be initialized, the kernel will fall back to initialize acpi-cpufreq". The
expectations come from the 6.1 source (drivers/cpufreq/amd-pstate.c
amd_pstate_param(), amd_pstate_init()) and from cppc.conf. Output: TAP.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../pstate"))
from cppc_platform import NoSimulator, Platform  # noqa: E402

CPU_SYS = "/sys/devices/system/cpu"
n = 0
failed = 0


def tap(ok, name, skip=None):
    global n, failed
    n += 1
    failed += not ok
    print(f"{'ok' if ok else 'not ok'} {n} - {name}" + (f" # SKIP {skip}" if skip else ""),
          flush=True)


def rd(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def main():
    try:
        plat = Platform()
        plat.check()
    except NoSimulator as e:
        print(f"Bail out! {e}", flush=True)
        return 1
    c = plat.conf
    cpus = sorted(int(d[3:]) for d in os.listdir(CPU_SYS) if d[3:].isdigit() and
                  d.startswith("cpu"))
    cmdline = rd("/proc/cmdline").split()
    print(f"# cmdline: {' '.join(cmdline)}", flush=True)
    log = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
    msg = "amd_pstate: driver is explicitly disabled"
    tap(msg in log and "amd_pstate=disable" in cmdline,
        f"amd_pstate=disable: the driver logs '{msg}' (amd_pstate_param())")
    highest = [rd(f"{CPU_SYS}/cpu{cpu}/acpi_cppc/highest_perf") for cpu in cpus]
    tap(highest == [str(c["HIGHEST_PERF"])] * len(cpus),
        f"amd_pstate=disable: the _CPC objects are there (acpi_cppc/highest_perf {highest} "
        f"= cppc.conf {c['HIGHEST_PERF']})")
    drv = [rd(f"{CPU_SYS}/cpufreq/policy{cpu}/scaling_driver") for cpu in cpus]
    tap(all(d != "amd-pstate" for d in drv),
        f"amd_pstate=disable: amd-pstate drives no CPU despite _CPC (scaling_driver {drv})")
    st = [plat.cpu(cpu) for cpu in cpus]
    tap(all(s["enabled_count"] == 0 and s["enable"] == 0 and s["changes"] == 0 for s in st),
        "amd_pstate=disable: the platform never saw CPPC ENABLE nor a DESIRED change "
        f"(enabled {[s['enabled_count'] for s in st]}, changes {[s['changes'] for s in st]})")
    # amd_pstate.shared_mem=1 is on the command line (disable.conf): 6.1 has
    # no such parameter (amd-pstate.c has no module_param; init/main.c
    # unknown_bootoption() drops a dotted unknown parameter silently).
    tap("amd_pstate.shared_mem=1" in cmdline and
        not os.path.exists("/sys/module/amd_pstate/parameters/shared_mem") and
        os.path.exists("/sys/module/cpufreq/parameters/off"),
        "amd_pstate.shared_mem=1 (seed 009) is on the command line but no parameter of 6.1 "
        "(no /sys/module/amd_pstate/parameters/shared_mem; built-in ones are listed: "
        "cpufreq/parameters/off)")
    tap(drv == ["acpi-cpufreq"] * len(cpus),
        f"fallback: acpi-cpufreq takes over when amd-pstate is disabled (scaling_driver {drv}; "
        "the platform's SSDT gives _PSS and _PCT; acpi_cpufreq_test checks the driver)")
    print(f"1..{n}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
