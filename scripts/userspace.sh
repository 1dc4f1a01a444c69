#!/bin/bash
# userspace.sh: build the user-space side on the host: guest/init's helper
# (guest/) and the shipped tools (tools/*/) into build/bin, each test
# area's guest programs (tests/*/Makefile) into build/tests/AREA, and the
# firmware tables of the emulated platforms (platform/*/Makefile) into
# build/platform/NAME. The guest runs them from the host's filesystem,
# shared read-only.
. "$(dirname "$0")/lib.sh"

mkdir -p "$BUILD/bin"
# Every directory's make is independent of the others (each writes its own
# files): they run side by side, JOBS at a time, each logged on its own.
# One at a time they took 11 s of a warm make check's 80 s before the tests.
# Stopped with Ctrl-C, the script starts no more of them; the (at most
# JOBS) makes already running are background jobs, which ignore it, and
# finish.
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "userspace.sh: JOBS is a number of jobs, not '$JOBS'"
pending=() failed=()
# build DIR LOG MAKE-ARGS...: make -C DIR MAKE-ARGS in the background
build() {
	local d=$1 log=$2
	shift 2
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	(logged "$log" make -C "$d" "$@") &
	pending+=("$! ${d#"$TOP"/}")
}
# guest/init's own helper (guest-setup), then the shipped tools.
for mk in "$TOP"/guest/Makefile "$TOP"/tools/*/Makefile; do
	[ -f "$mk" ] || continue
	d=$(dirname "$mk")
	build "$d" "$LOGS/tools-$(basename "$d").log" OUT="$BUILD/bin"
done
for mk in "$TOP"/platform/*/Makefile; do
	d=$(dirname "$mk")
	name=$(basename "$d")
	mkdir -p "$BUILD/platform/$name"
	build "$d" "$LOGS/platform-$name.log" OUT="$BUILD/platform/$name"
done
for mk in "$TOP"/tests/*/Makefile "$TOP"/bench/Makefile; do
	[ -f "$mk" ] || continue
	d=$(dirname "$mk")
	area=${d#"$TOP"/}
	area=${area#tests/}
	mkdir -p "$BUILD/tests/$area"
	build "$d" "$LOGS/tests-$area.log" OUT="$BUILD/tests/$area" KSRC="$TREE"
done
for p in "${pending[@]}"; do
	wait "${p%% *}" || failed+=("${p#* }")
done
[ ${#failed[@]} -eq 0 ] || die "building ${failed[*]} failed"
info "tools: $(ls "$BUILD/bin" | tr '\n' ' ')"
