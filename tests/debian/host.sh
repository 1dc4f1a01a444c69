# tests/debian: a Debian 12 system, booted (issue 37): the cached image
# (scripts/debian-image.sh), Debian's stock kernel first, our packages
# installed with dpkg -i, then our kernel. The work is flow.sh's (bash);
# each boot's job writes its own TAP streams into the run directory,
# shared with the guest over virtio-9p. Alone: scripts/run-tests.sh debian.
. "$TOP/tests/lib/tap.sh"
exec bash ./flow.sh
