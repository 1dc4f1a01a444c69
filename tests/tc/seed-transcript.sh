#!/bin/sh
# The seed's transcript (010, merge of tc-action-offload), replayed on a
# netdevsim port, written to $T_OUT/seed-transcript.txt for the README.
# It proves nothing by itself: tc_offload_test.py checks the same steps.
out=${T_OUT:-/tmp}/seed-transcript.txt
echo "8 1" >/sys/bus/netdevsim/new_device
sleep 1
DEV=$(ls /sys/bus/netdevsim/devices/netdevsim8/net/)
{
	c() { echo "# $*"; "$@" 2>&1; }
	c ip link set "$DEV" up
	c ethtool -K "$DEV" hw-tc-offload on
	c tc qdisc add dev "$DEV" ingress
	# tc's default exceed action is reclassify, which 6.1 cannot offload
	c tc actions add action police rate 100mbit burst 10000k index 200 skip_sw
	c tc actions add action police rate 100mbit burst 10000k conform-exceed drop/pipe index 200 skip_sw
	c tc -s -d actions list action police
	c tc filter add dev "$DEV" protocol ip parent ffff: flower skip_sw ip_proto tcp action police index 200
	c tc -s -d filter show dev "$DEV" protocol ip parent ffff:
	c tc filter add dev "$DEV" protocol ipv6 parent ffff: flower skip_sw ip_proto tcp action police index 200
	c tc -s -d filter show dev "$DEV" protocol ipv6 parent ffff:
	c tc -s -d actions list action police
	c cat /sys/kernel/debug/netdevsim/netdevsim8/tc/offloaded
	c tc filter del dev "$DEV" ingress
	c tc actions del action police index 200
	c cat /sys/kernel/debug/netdevsim/netdevsim8/tc/offloaded
} >"$out"
echo 8 >/sys/bus/netdevsim/del_device
