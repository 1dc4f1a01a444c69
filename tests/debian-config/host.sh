# tests/debian-config: make deb's configuration, on the host (no kernel
# build, no VM): Debian's own configuration plus kconfig/debian.config
# gives exactly the listed differences, the module sets are as intended,
# bad input stops scripts/deb.sh. See config_test.py. Needs build/linux
# (the series applied), which make check makes before the areas run, and
# linux-config-6.1 (scripts/deps.sh installs it).
. "$TOP/tests/lib/tap.sh"
tap_run config nice -n 10 python3 ./config_test.py
