#!/bin/sh
# tests/i2c-abi, part 2, on the test kernel: the i2c-dev ABI with SMBus 3.0
# blocks against part 1's transcript (see vm.conf), new programs, fuzzing.
. "$TOP/tests/lib/tap.sh"
tap_run abi_test /usr/bin/python3 ./abi_test.py
