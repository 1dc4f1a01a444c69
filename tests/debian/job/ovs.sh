#!/bin/bash
# tests/debian/job/ovs.sh: test 5. Open vSwitch as Debian runs it
# (openvswitch-switch.service), other_config:hw-offload=true, the ports of
# a netdevsim device from the package's module. The hardware's truth is
# netdevsim's debugfs table (tc/offloaded, the series' netdevsim action
# offload): an OpenFlow meter appears there as a police action at OVS's
# index 0x10000000 + its datapath meter id (lib/netdev-offload-tc.c),
# mod-meter changes its rate in place, and a restart of the service or
# del-br leaves the table empty. (tests/ovs covers the rest, on the test
# kernel.)
. "$T_OUT/in/job/lib.sh"
echo 1..5
N=7
tab=/sys/kernel/debug/netdevsim/netdevsim$N/tc/offloaded
table() { grep . "$tab" 2>/dev/null; }
police() { table | grep '^action police '; }
# wait_for SECONDS CMD...: until CMD succeeds
wait_for() { local t=$1; shift; for _ in $(seq $((t * 2))); do "$@" && return 0; sleep 0.5; done; return 1; }
ports() { ls /sys/bus/netdevsim/devices/netdevsim$N/net/ 2>/dev/null | sort; }
two_ports() { [ "$(ports | wc -l)" = 2 ]; }
of() { timeout 120 ovs-ofctl -O OpenFlow13 "$@"; }
police_rate() { police | grep -c " rate_bytes_ps $1 "; }

modprobe netdevsim && echo "$N 2" >/sys/bus/netdevsim/new_device && wait_for 30 two_ports
for p in $(ports); do ip link set "$p" up; ethtool -K "$p" hw-tc-offload on; done
ovs-vsctl --timeout=120 set Open_vSwitch . other_config:hw-offload=true other_config:max-idle=600000
systemctl restart openvswitch-switch
[ "$(ovs-vsctl --timeout=120 get Open_vSwitch . other_config:hw-offload)" = '"true"' ] &&
	systemctl is-active -q openvswitch-switch ovs-vswitchd ovsdb-server && [ -f "$tab" ] && [ -z "$(table)" ]
ok $? "openvswitch-switch.service active with hw-offload=true; netdevsim$N ports $(ports | tr '\n' ' ')and its empty table"
ovs-vsctl --timeout=120 add-br br0 $(for p in $(ports); do echo -- add-port br0 "$p"; done)
of add-meter br0 meter=1,kbps,burst,bands=type=drop,rate=1000,burst_size=100
wait_for 60 test "$(police_rate 125000)" = 1
idx=$(police | awk '/ rate_bytes_ps 125000 / { print $4 }')
[ "$(police | wc -l)" = 1 ] && [ -n "$idx" ] && [ "$idx" -ge $((0x10000000)) ] &&
	tc actions list action police | grep -Eq "police (0x$(printf %x "$idx")|$idx) "
ok $? "add-meter: one police action in netdevsim's table, index ${idx:-none} (OVS's meter range), 1000 kbit/s = rate_bytes_ps 125000, also in tc: $(police | tr '\n' ' ')"
of mod-meter br0 meter=1,kbps,burst,bands=type=drop,rate=2000,burst_size=100
wait_for 60 test "$(police_rate 250000)" = 1
[ "$(police | wc -l)" = 1 ] && [ "$(police | awk '{ print $4 }')" = "$idx" ]
ok $? "mod-meter: the same index $idx updated in place to rate_bytes_ps 250000: $(police | tr '\n' ' ')"
systemctl restart openvswitch-switch
wait_for 120 test -z "$(police)"
empty=$?
systemctl is-active -q ovs-vswitchd && [ $empty = 0 ] && [ -z "$(table)" ]
ok $? "systemctl restart openvswitch-switch: ovs-vswitchd active again, the table empty: $(table | tr '\n' ' ')"
of add-meter br0 meter=1,kbps,burst,bands=type=drop,rate=1000,burst_size=100
wait_for 60 test "$(police_rate 125000)" = 1
again=$?
ovs-vsctl --timeout=120 del-br br0
wait_for 120 test -z "$(table)"
[ $again = 0 ] && [ -z "$(table)" ]
ok $? "a meter offloaded again (rc $again), then del-br: the table empty: $(table | tr '\n' ' ')"
