#!/bin/bash
# tests/debian/flow.sh (host side; run by host.sh with T_OUT=RUN, TOP):
#  1. the image: built or taken from the cache (scripts/debian-image.sh);
#     an overlay RUN/disk.qcow2 that all boots of this run share;
#  2. boot "stock": Debian's kernel and initrd, read from the image with
#     debugfs (as debvm does); job/stock.sh installs our packages;
#  3. boot "ours": the kernel and initrd our package installed, copied out
#     by the guest from its /boot (a qcow2 overlay cannot be read from
#     here without a kernel driver); job/ours.sh runs tests 1-6.
# Each boot adds a stream of its own: booted, ran its job, powered off;
# and its console free of kernel reports (scripts/scan-console.sh).
# DEBIAN_DEBS: the directory of our packages (default build/deb-test,
# where make check and make debian-test put the test flavour).
set -uo pipefail
. "$TOP/tests/lib/tap.sh"
S=$TOP/scripts
RUN=$T_OUT
DEBS=${DEBIAN_DEBS:-$TOP/build/deb-test}

image() {
	echo 1..1
	local t0=$(date +%s)
	if img=$("$S/debian-image.sh" 2>"$RUN/image.log" | tail -n 1) && [ -f "$img" ]; then
		echo "ok 1 - the Debian 12 image: $img ($(($(date +%s) - t0)) s)"
		echo "$img" >"$RUN/image-path"
	else
		sed 's/^/# /' "$RUN/image.log"
		echo "not ok 1 - the Debian 12 image could not be built (see above)"
	fi
}

# bad input changes nothing: an unreachable archive and too little disk
# each stop the build with a message saying so, and leave the cache empty
bad_input() {
	local c=$RUN/bad-cache out rc
	echo 1..2
	mkdir -p "$c"
	printf 'deb http://127.0.0.1:9/debian bookworm main\n' >"$RUN/bad.list"
	out=$(DEBIAN_IMAGE_CACHE=$c DEBIAN_IMAGE_SOURCES=$RUN/bad.list "$S/debian-image.sh" 2>&1)
	rc=$?
	printf '%s\n' "$out" | tail -n 3 | sed 's/^/# /'
	[ $rc != 0 ] && grep -q 'the Debian archive is unreachable' <<<"$out" && [ -z "$(ls -A "$c")" ] &&
		echo "ok 1 - an unreachable archive: the build stops saying so, nothing in the cache" ||
		echo "not ok 1 - an unreachable archive: rc $rc, cache: $(ls -A "$c")"
	out=$(DEBIAN_IMAGE_CACHE=$c DEBIAN_IMAGE_NEED_MB=$((1 << 40)) "$S/debian-image.sh" 2>&1)
	rc=$?
	printf '%s\n' "$out" | tail -n 1 | sed 's/^/# /'
	[ $rc != 0 ] && grep -q 'too little disk' <<<"$out" && [ -z "$(ls -A "$c")" ] &&
		echo "ok 2 - too little disk: the build stops saying so, nothing in the cache" ||
		echo "not ok 2 - too little disk: rc $rc, cache: $(ls -A "$c")"
	rmdir "$c"
}

# the files the guest reads: job scripts, tap.sh, tools, our packages
stage() {
	mkdir -p "$RUN/in/lib" "$RUN/in/tools" "$RUN/in/debs"
	cp -r "$TOP/tests/debian/job" "$RUN/in/"
	cp "$TOP/tests/lib/tap.sh" "$RUN/in/lib/"
	cp "$TOP/build/bin/mctp-conf" "$TOP/build/bin/mctp-echo" "$TOP/build/bin/smbus3-block" "$RUN/in/tools/" 2>/dev/null
	local d
	for d in "$DEBS"/linux-image-*.deb "$DEBS"/linux-headers-*.deb "$DEBS"/linux-libc-dev_*.deb; do
		[ -f "$d" ] && case $d in *-dbg_*) ;; *) cp "$d" "$RUN/in/debs/" ;; esac
	done
	d=$(ls "$RUN"/in/debs/linux-image-*.deb 2>/dev/null | head -n 1)
	[ -n "$d" ] && dpkg-deb -f "$d" Package | sed 's/^linux-image-//' >"$RUN/in/release"
	return 0
}

# The packages are those of today's series and configuration: SOURCE
# names the key scripts/deb.sh built them under, and deb.sh key computes
# today's for the same MODULES and FLAVOUR. A build/deb-test left from
# another series would otherwise be installed and tested as this one.
current() {
	local have want mods fl
	echo 1..1
	have=$(sed -n 's/^key //p' "$DEBS/SOURCE" 2>/dev/null)
	mods=$(sed -n 's/^MODULES=\([a-z]*\) FLAVOUR=.*/\1/p' "$DEBS/SOURCE" 2>/dev/null)
	fl=$(sed -n 's/^MODULES=[a-z]* FLAVOUR=\([a-z]*\) .*/\1/p' "$DEBS/SOURCE" 2>/dev/null)
	# the module list they were built with (for MODULES=host, the
	# machine's modules then, not now)
	want=$(DEB_MODULE_LIST=$DEBS/modules MODULES=${mods:-vm} FLAVOUR=${fl:-test} "$S/deb.sh" key 2>"$RUN/deb-key.err")
	if [ -n "$have" ] && [ "$have" = "$want" ]; then
		echo "ok 1 - the packages in $DEBS are of this series and configuration (MODULES=$mods FLAVOUR=$fl, key $have)"
	else
		sed 's/^/# deb.sh key: /' "$RUN/deb-key.err"
		echo "# $DEBS/SOURCE: key ${have:-none}; deb.sh key now: ${want:-none}"
		echo "not ok 1 - the packages in $DEBS are not of this series and configuration (run: make deb MODULES=${mods:-vm} FLAVOUR=${fl:-test})"
	fi
}

# boot_files IMAGE DIR: Debian's kernel and initrd, out of the image
boot_files() {
	local rel
	rel=$(debugfs -R 'ls -p /boot' "$1" 2>/dev/null | awk -F/ '$6 ~ /^vmlinuz-/ { sub(/^vmlinuz-/, "", $6); print $6 }' | sort -V | tail -n 1)
	[ -n "$rel" ] || return 1
	mkdir -p "$2"
	debugfs -R "dump /boot/vmlinuz-$rel $2/vmlinuz-$rel" "$1" 2>/dev/null &&
		debugfs -R "dump /boot/initrd.img-$rel $2/initrd.img-$rel" "$1" 2>/dev/null &&
		[ -s "$2/vmlinuz-$rel" ] && [ -s "$2/initrd.img-$rel" ]
}

# vm PHASE KERNEL INITRD: the boot's own stream
vm() {
	local phase=$1 rc
	echo 1..2
	"$S/debian-vm.sh" "$RUN" "$phase" "$2" "$3" 2>"$RUN/vm-$phase.err"
	rc=$?
	if [ $rc = 0 ] && [ "$(cat "$RUN/job-$phase.rc" 2>/dev/null)" = 0 ]; then
		echo "ok 1 - $phase: booted $(basename "$2"), ran job/$phase.sh and powered off ($(awk -v p="$phase" '$1 == p { print $2 }' "$RUN/boot-times.tsv" | tail -n 1) s)"
	else
		sed 's/^/# /' "$RUN/vm-$phase.err"
		tail -n 20 "$RUN/console-$phase.log" 2>/dev/null | sed 's/^/# console: /'
		echo "not ok 1 - $phase: QEMU rc $rc, job status $(cat "$RUN/job-$phase.rc" 2>/dev/null || echo missing)"
	fi
	if "$S/scan-console.sh" "$RUN/console-$phase.log" 2>"$RUN/scan-$phase.err"; then
		echo "ok 2 - $phase: console free of kernel reports"
	else
		sed 's/^/# /' "$RUN/scan-$phase.err"
		echo "not ok 2 - $phase: console holds a kernel report"
	fi
}

tap_run packages-current current
tap_run image-bad-input bad_input
tap_run image image
img=$(cat "$RUN/image-path" 2>/dev/null) || exit 1
stage
qemu-img create -q -f qcow2 -F raw -b "$img" "$RUN/disk.qcow2" || exit 1
boot_files "$img" "$RUN/boot-stock" || { echo "no kernel in $img" >&2; exit 1; }
k=$(ls "$RUN"/boot-stock/vmlinuz-*) i=$(ls "$RUN"/boot-stock/initrd.img-*)
tap_run stock-vm vm stock "$k" "$i"
rel=$(cat "$RUN/in/release" 2>/dev/null)
if [ -n "$rel" ] && [ -f "$RUN/boot/vmlinuz-$rel" ]; then
	tap_run ours-vm vm ours "$RUN/boot/vmlinuz-$rel" "$RUN/boot/initrd.img-$rel"
else
	tap_run ours-vm printf '1..1\nnot ok 1 - ours: no kernel to boot: no linux-image package in %s (DEBIAN_DEBS), or its install failed\n' "$DEBS"
fi
rm -f "$RUN/disk.qcow2"
