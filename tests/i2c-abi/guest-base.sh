#!/bin/sh
# tests/i2c-abi, part 1, in the guest of the kernel from before the SMBus 3.0
# patches (vm.conf boots it from vm_pre): the ABI transcript and the new
# program's fallback.
. "$TOP/tests/lib/tap.sh"
tap_run abi_base /usr/bin/python3 ./abi_base.py
