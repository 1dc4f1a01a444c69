#!/bin/sh
# tests/tc, in the guest: netdevsim's tc action/filter offload
# (tc_offload_test.py), then the tree's own tdc suites for the police and
# gact actions and the matchall and flower classifiers; tests that need a
# device run on a netdevsim port with hw-tc-offload on (tdc -d). Each is a
# stream of its own (tests/lib/tap.sh); tdc's must report every test id
# selected here once, and a case whose setup or teardown failed (tdc says
# "skipped") fails.
. "$TOP/tests/lib/tap.sh"
PY=/usr/bin/python3
sh ./seed-transcript.sh
tap_run tc_offload_test $PY ./tc_offload_test.py

# tdc writes next to itself: run a copy.
tdc=/tmp/tc-testing
cp -r "$TREE/tools/testing/selftests/tc-testing" $tdc || exit 1
echo "9 1" >/sys/bus/netdevsim/new_device
sleep 1
dev=$(ls /sys/bus/netdevsim/devices/netdevsim9/net/)
ip link set "$dev" up
ethtool -K "$dev" hw-tc-offload on
files="tc-tests/actions/police.json tc-tests/actions/gact.json
       tc-tests/filters/matchall.json tc-tests/filters/tests.json"
# d052 adds 1,000,000 flower filters: hours under TCG with KASAN.
slow=d052
ids=$(cd $tdc && $PY -c '
import json, sys
for f in sys.argv[2:]:
    for t in json.load(open(f)):
        if t["id"] not in sys.argv[1].split():
            print(t["id"])' "$slow" $files)
[ -n "$ids" ] || exit 1
# -N: four of the selected cases require tdc's nsPlugin, and once loaded
# it runs every command of every case through "ip netns exec tcut" unless
# told -N: an exec of ip, a mount namespace and a sysfs mount more per
# command, ~470 of them, under the debug kernel. This VM is the test's
# own, so its initial namespace isolates as well; the netdevsim port then
# stays where it was set up instead of moving into tcut.
# tdc_direct.py runs tdc.py as it is, but a command that is a plain argv
# (an absolute path and words: 440 of the 470 it runs) without /bin/sh -c:
# one exec fewer each.
tdc_run() { cd $tdc && exec $PY "$TOP/tests/tc/tdc_direct.py" -N -d "$dev" -f $files -e $ids; }
# shellcheck disable=SC2086
tap_tdc_ids tdc $ids
tap_run tdc tdc_run
excluded() {
	echo "1..1"
	echo "ok 1 $slow - Add 1M filters with the same action # SKIP 1,000,000 filters take hours under TCG with KASAN"
}
tap_run tdc-excluded excluded
echo 9 >/sys/bus/netdevsim/del_device
