# tests/debian-config: make deb's configuration, on the host (no VM, no
# kernel build): Debian's own configuration plus kconfig/debian.config
# gives exactly the listed differences, the module sets are as intended,
# bad input stops scripts/deb.sh (config_test.py); and the MODULES=all
# proof: the series' C files compiled with W=1 in Debian's full
# configuration (w1.sh: make prepare and the 16-18 files; warm 16 s, 9
# CPU-seconds; in a fresh clone 41 CPU-seconds).
# Needs build/linux (the series applied), which make check makes before
# the areas run, and linux-config-6.1 (scripts/deps.sh installs it).
. "$TOP/tests/lib/tap.sh"
tap_run config nice -n 10 python3 ./config_test.py
tap_run w1 nice -n 10 sh ./w1.sh
