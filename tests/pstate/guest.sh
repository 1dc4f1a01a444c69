#!/bin/sh
# tests/pstate, in the guest: amd-pstate on the emulated CPPC platform
# (platform/amd-pstate; the simulator runs on the host, see vm.conf), then
# the tree's amd-pstate-ut module, whose case results are read from the
# kernel log (its selftest script reports ok whatever happened).
PY=/usr/bin/python3
$PY ./pstate_test.py

ko=$TOP/build/obj-test/drivers/cpufreq/amd-pstate-ut.ko
echo "# amd-pstate-ut: $ko"
dmesg -C
if ! insmod "$ko"; then
	echo "not ok 1 - amd-pstate-ut: module loads"
	echo "1..1"
	exit 0
fi
rmmod amd_pstate_ut
# "amd_pstate_ut: 1    amd_pstate_ut_acpi_cpc_valid	 success!"
dmesg | sed -n 's/.*amd_pstate_ut: *\([0-9][0-9]*\) *\([a-z_]*\)[[:space:]]*\(success\|fail\)!.*/\1 \2 \3/p' >/tmp/ut.txt
dmesg | grep 'amd_pstate_ut' | sed 's/^/# /'
n=0
while read -r num name res; do
	n=$((n + 1))
	if [ "$res" = success ]; then echo "ok $n - amd-pstate-ut: $name"; else echo "not ok $n - amd-pstate-ut: $name"; fi
done </tmp/ut.txt
# The module has four cases; fewer lines means it did not run them all.
[ "$n" -ge 4 ] || { n=$((n + 1)); echo "not ok $n - amd-pstate-ut: reported all of its cases ($((n - 1)) of 4)"; }
echo "1..$n"
