#!/bin/sh
# tests/idmap, in the guest: three programs (kselftest harness), each its
# own stream (tests/lib/tap.sh). RENAME_WHITEOUT and ACLs on idmapped ext4
# are tests/idmap-ext4's. A missing program has no plan and exit
# status 127: a failure, never a silent pass.
. "$TOP/tests/lib/tap.sh"
tap_run idmap_test "$T_BIN/idmap_test"
tap_run mount_setattr_test "$T_BIN/mount_setattr_test"
tap_run leak_test "$T_BIN/leak_test"
