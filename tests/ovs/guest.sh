#!/bin/sh
# tests/ovs, in the guest: Open vSwitch (the host's Debian
# openvswitch-switch, seen through the guest's root) offloading OpenFlow
# meters and the flows that use them to netdevsim, hw-offload=true.
# ovsdb-server and ovs-vswitchd run from /run and /tmp (tmpfs in the
# guest); the kernel datapath is built in (kconfig/tc.config).
. "$TOP/tests/lib/tap.sh"
tap_run ovs_offload_test /usr/bin/python3 ./ovs_offload_test.py
