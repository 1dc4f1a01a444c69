#!/bin/sh
# tests/runtimes, in the guest: podman and crun (the host's Debian
# packages, seen through the guest's root) giving containers idmapped
# tmpfs volumes, and io_uring through an idmapped tmpfs mounted in a user
# namespace.
. "$TOP/tests/lib/tap.sh"
tap_run runtimes_test /usr/bin/python3 ./runtimes_test.py
tap_run io_uring_test "$T_BIN/io_uring_test"
