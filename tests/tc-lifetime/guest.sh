#!/bin/sh
# tests/tc-lifetime, in the guest: the lifetime of netdevsim's offloaded
# action and filter entries under what tc users (Open vSwitch among them)
# do: replace a shared meter, replace refused by the tc core, a full
# table, a block shared by two ports, two network namespaces, device
# removal. An area of its own, separate from tests/tc, so that make
# mutants can check patches 0019-0021 in two minutes, not twenty.
. "$TOP/tests/lib/tap.sh"
tap_run nsim_lifetime_test /usr/bin/python3 ./nsim_lifetime_test.py
# The per-test check for kernel reports (tests/lib/kmsg.py) that this
# area, tests/ovs and tests/runtimes use, in the area that runs it
# fastest; last, since it fills the kernel's ring buffer.
tap_run kmsg_test /usr/bin/python3 ../lib/kmsg_test.py
