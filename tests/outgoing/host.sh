# tests/outgoing: make outgoing's per-topic patch sets, on the host (no
# kernel build, no VM): scripts/outgoing.sh into a scratch directory, then
# each topic checked on its own - see outgoing_test.py. Needs build/linux's
# tag baseline, which make check makes before the areas run.
. "$TOP/tests/lib/tap.sh"
tap_run outgoing python3 ./outgoing_test.py
