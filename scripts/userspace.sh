#!/bin/bash
# userspace.sh: build the user-space side on the host: guest/init's helper
# (guest/) and the shipped tools (tools/*/) into build/bin, each test
# area's guest programs (tests/*/Makefile) into build/tests/AREA, and the
# firmware tables of the emulated platforms (platform/*/Makefile) into
# build/platform/NAME. The guest runs them from the host's filesystem,
# shared read-only.
. "$(dirname "$0")/lib.sh"

mkdir -p "$BUILD/bin"
# guest/init's own helper (guest-setup), then the shipped tools.
for mk in "$TOP"/guest/Makefile "$TOP"/tools/*/Makefile; do
	[ -f "$mk" ] || continue
	d=$(dirname "$mk")
	logged "$LOGS/tools-$(basename "$d").log" make -C "$d" OUT="$BUILD/bin" ||
		die "building ${d#"$TOP"/} failed"
done
for mk in "$TOP"/platform/*/Makefile; do
	d=$(dirname "$mk")
	name=$(basename "$d")
	mkdir -p "$BUILD/platform/$name"
	logged "$LOGS/platform-$name.log" make -C "$d" OUT="$BUILD/platform/$name" ||
		die "building platform/$name failed"
done
for mk in "$TOP"/tests/*/Makefile "$TOP"/bench/Makefile; do
	[ -f "$mk" ] || continue
	d=$(dirname "$mk")
	area=${d#"$TOP"/}
	area=${area#tests/}
	mkdir -p "$BUILD/tests/$area"
	logged "$LOGS/tests-$area.log" make -C "$d" OUT="$BUILD/tests/$area" KSRC="$TREE" ||
		die "building $area's guest programs failed"
done
info "tools: $(ls "$BUILD/bin" | tr '\n' ' ')"
