#!/bin/sh
# tests/idmap, in the guest: three programs (kselftest harness) and
# whiteout_ext4.py (RENAME_WHITEOUT on an idmapped ext4), each its own
# stream (tests/lib/tap.sh). A missing program has no plan and exit
# status 127: a failure, never a silent pass.
. "$TOP/tests/lib/tap.sh"
tap_run idmap_test "$T_BIN/idmap_test"
tap_run mount_setattr_test "$T_BIN/mount_setattr_test"
tap_run leak_test "$T_BIN/leak_test"
tap_run whiteout_ext4 /usr/bin/python3 ./whiteout_ext4.py
