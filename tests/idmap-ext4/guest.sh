#!/bin/sh
# tests/idmap-ext4, in the guest: the VFS fixes of the series on ext4, a
# filesystem 6.1 already lets idmap, so each runs on what the stable tree
# has: ACLs read through the idmapped mount (patch 0001) and
# RENAME_WHITEOUT by a caller the mount cannot map (patch 0023). Each
# program is its own stream (tests/lib/tap.sh).
. "$TOP/tests/lib/tap.sh"
tap_run acl_ext4 /usr/bin/python3 ./acl_ext4.py
tap_run whiteout_ext4 /usr/bin/python3 ./whiteout_ext4.py
