#!/bin/sh
# tests/pstate, in the guest: amd-pstate on the emulated CPPC platform
# (platform/amd-pstate; the simulator runs on the host, see vm.conf), then
# the tree's amd-pstate-ut module, whose case results are read from the
# kernel log (its selftest script reports ok whatever happened). Each is a
# stream of its own (tests/lib/tap.sh).
. "$TOP/tests/lib/tap.sh"
tap_run pstate_test /usr/bin/python3 ./pstate_test.py

# amd-pstate-ut: one result per case of the module; the plan is the number
# of cases in its source (amd_pstate_ut_cases[]), so a case that never
# reports is missing from a planned stream.
ut() {
	ko=${KOBJ:-$TOP/build/obj-test}/drivers/cpufreq/amd-pstate-ut.ko
	src=$TREE/drivers/cpufreq/amd-pstate-ut.c
	cases=$(sed -n '/amd_pstate_ut_cases\[\] = {/,/^};/p' "$src" | grep -c '{"amd_pstate_ut_')
	echo "1..$cases"
	echo "# amd-pstate-ut: $ko ($cases cases in $src)"
	dmesg -C
	insmod "$ko" || { echo "Bail out! amd-pstate-ut does not load"; exit 1; }
	rmmod amd_pstate_ut
	# "amd_pstate_ut: 1    amd_pstate_ut_acpi_cpc_valid	 success!"
	dmesg | grep 'amd_pstate_ut' | sed 's/^/# /'
	n=0
	dmesg | sed -n 's/.*amd_pstate_ut: *\([0-9][0-9]*\) *\([a-z_]*\)[[:space:]]*\(success\|fail\)!.*/\1 \2 \3/p' |
		while read -r num name res; do
			n=$((n + 1))
			if [ "$res" = success ]; then
				echo "ok $n - $name"
			else
				echo "not ok $n - $name"
			fi
		done
}
tap_run amd-pstate-ut ut
