#!/bin/sh
# tests/pstate-nocpc, in the guest: an AMD CPU booted with
# amd_pstate=passive but without _CPC objects and without the platform
# simulator. The driver must refuse to load with its message, and the
# suite's platform check must fail with a clear one. The platform's
# P-states (_PSS, _PCT) are there: acpi-cpufreq takes over (nocpc), and
# acpi_cpufreq_test checks what it does.
. "$TOP/tests/lib/tap.sh"
nocpc() {
	n=0
	t() { # STATUS DESCRIPTION
		n=$((n + 1))
		if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
	}
	msg='amd_pstate: the _CPC object is not present in SBIOS or ACPI disabled'
	dmesg | grep -q "$msg"
	t $? "without _CPC the driver logs: $msg"
	drv=$(cat /sys/devices/system/cpu/cpufreq/policy0/scaling_driver 2>/dev/null)
	[ -n "$drv" ] && [ "$drv" != amd-pstate ]
	t $? "without _CPC amd-pstate drives no CPU (scaling_driver: ${drv:-none})"
	[ ! -d /sys/devices/system/cpu/cpu0/acpi_cppc ]
	t $? "without _CPC there is no acpi_cppc directory"
	out=$(/usr/bin/python3 ../pstate/cppc_platform.py check 2>&1)
	rc=$?
	echo "# $out"
	case $out in *"no CPPC platform simulator is attached"*) ok=$rc ;; *) ok=0 ;; esac
	[ "$ok" = 1 ]
	t $? "a guest without the simulator fails with a clear message (exit $rc)"
	# Seed 009: "while the amd-pstate fails to be initialized, the kernel
	# will fall back to initialize acpi-cpufreq".
	[ "$drv" = acpi-cpufreq ]
	t $? "fallback: without _CPC acpi-cpufreq takes over (scaling_driver: ${drv:-none})"
	echo "1..$n"
}
tap_run nocpc nocpc
tap_run acpi_cpufreq /usr/bin/python3 ../pstate/acpi_cpufreq_test.py
