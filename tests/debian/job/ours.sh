#!/bin/bash
# tests/debian/job/ours.sh: boot 2, our kernel and the initrd its package
# built, read back from the image. Tests 1-6 of issue 37.
. "$T_OUT/in/job/lib.sh"
rel=$(cat "$IN/release")
tap_run ours-boot boot_test "$rel" "linux-image-$rel"
tap_run ours-modules modules_test "$rel"
tap_run ours-podman podman_test idmap
tap_run ours-nspawn nspawn_test idmap
tap_run ours-ovs bash "$IN/job/ovs.sh"
tap_run ours-i2c-mctp bash "$IN/job/i2c-mctp.sh"
lsmod >"$T_OUT/lsmod-ours.txt"
