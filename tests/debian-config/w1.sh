#!/bin/sh
# The MODULES=all proof beside the configuration test: every C file of the
# kernel the series touches, compiled with W=1 in Debian's full
# configuration plus kconfig/debian.config (scripts/deb-w1.sh), no warning
# on a line the series added; and the files it cannot compile there are
# exactly the ones below, each for its reason (a new file of the series
# that Debian's configuration leaves out fails here until it is listed).
# TAP.
NOT_BUILT="fs/mnt_idmapping_kunit.c fs/ramfs/file-nommu.c net/mctp/test/route-test.c"
# fs/mnt_idmapping_kunit.c: MNT_IDMAPPING_KUNIT_TEST depends on KUNIT, off in Debian
# fs/ramfs/file-nommu.c: built only without an MMU (fs/ramfs/Makefile)
# net/mctp/test/route-test.c: #included by net/mctp/route.c under MCTP_TEST (KUNIT)
out=$("$TOP/scripts/deb-w1.sh" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	echo "ok 1 - W=1 in Debian's full configuration: $(echo "$out" | sed -n 's/.*configuration: \([0-9]*\) file(s).*/\1/p') files the series touches, no warning on its lines"
else
	echo "not ok 1 - W=1 in Debian's full configuration: the series' files compile without a warning on its lines"
	echo "$out" | tail -n 30 | sed 's/^/# /'
fi
skipped=$(echo "$out" | sed -n 's/.*(not compiled): //p')
if [ "$skipped" = "$NOT_BUILT" ]; then
	echo "ok 2 - the series' C files Debian's configuration does not build are the known three"
else
	echo "not ok 2 - the series' C files Debian's configuration does not build are the known three"
	echo "# not built: ${skipped:-none}; expected: $NOT_BUILT"
fi
echo "1..2"
[ $rc -eq 0 ]
