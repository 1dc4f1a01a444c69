# tests/harness: the harness's own self-test, on the host (no VM): crafted
# areas (fixtures/) run through scripts/run-tests.sh and scripts/results.py
# with fake-vm.sh in place of QEMU. See selftest.py. And the kernel
# cache (scripts/kernel-cache.sh) on a fake tree: kernel-cache-test.sh.
. "$TOP/tests/lib/tap.sh"
tap_run selftest python3 ./selftest.py
# scripts/kernel-cache.sh on a fake tree: keys, store, restore, refusal
tap_run kernel-cache bash ./kernel-cache-test.sh
