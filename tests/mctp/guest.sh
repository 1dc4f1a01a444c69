#!/bin/sh
# tests/mctp, in the guest: I2C targets on i2c-crosswire and MCTP over
# I2C between its two adapters (mctp_test.py), one stream.
. "$TOP/tests/lib/tap.sh"
tap_run mctp_test /usr/bin/python3 ./mctp_test.py
