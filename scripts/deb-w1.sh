#!/bin/bash
# deb-w1.sh: the MODULES=all proof that needs no full build. Every C file
# of the kernel the series touches is compiled with W=1 in Debian's full
# configuration plus kconfig/debian.config (scripts/deb.sh config,
# MODULES=all: every module of Debian's), as the test kernel's build does
# in its own configuration (scripts/build.sh); a warning on a line the
# series added fails (scripts/added-lines-warnings.py). A file that is not
# part of that configuration is named and skipped: which objects a
# directory builds is asked of Kbuild itself (its real-obj-y/real-obj-m
# for that directory, composite objects expanded).
# Object directory: build/obj-deb-w1 (configured and prepared, no build).
. "$(dirname "$0")/lib.sh"

obj=$TREE/obj-deb-w1
log=$LOGS/w1-deb.log
probe=$BUILD/deb-w1-probe.mk
[ -e "$TREE/.git" ] || die "no $TREE (run: make tree)"
ln -sfn "$obj" "$BUILD/obj-deb-w1"
MODULES=all FLAVOUR=user "$TOP/scripts/deb.sh" config "$obj" >"$LOGS/w1-deb-config.log" 2>&1 ||
	die "configuring Debian's full configuration failed (see $LOGS/w1-deb-config.log)"
logged "$LOGS/w1-deb-prepare.log" "$TOP/scripts/deb.sh" make "$obj" -j"$JOBS" prepare ||
	die "make prepare in Debian's configuration failed"

# The objects Kbuild builds in directory DIR, in this configuration.
cat >"$probe" <<'EOF'
deb-w1-probe:
	@echo $(real-obj-y) $(real-obj-m)
EOF
built_in_dir() {
	(cd "$obj" && make -s -f "$TREE/scripts/Makefile.build" -f "$probe" obj="$1" srctree=.. objtree=. \
		KBUILD_BUILTIN=1 KBUILD_MODULES=1 CC=gcc-12 deb-w1-probe 2>/dev/null) | tr ' ' '\n'
}

mapfile -t cfiles < <(git -C "$TREE" diff --name-only --diff-filter=AM baseline HEAD -- '*.c' | grep -v '^tools/')
targets=() skipped=()
for f in "${cfiles[@]}"; do
	if built_in_dir "$(dirname "$f")" | grep -qxF "${f%.c}.o"; then
		targets+=("${f%.c}.s")
	else
		skipped+=("$f")
	fi
done
[ ${#skipped[@]} -eq 0 ] || info "not in Debian's configuration (not compiled): ${skipped[*]}"
[ ${#targets[@]} -gt 0 ] || die "none of the series' C files is built in Debian's configuration: the probe is broken"
(cd "$obj" && rm -f "${targets[@]}")
: >"$log"
"$TOP/scripts/deb.sh" make "$obj" -j"$JOBS" W=1 "${targets[@]}" >>"$log" 2>&1 ||
	die "W=1 compile of the series' files in Debian's configuration failed (see $log)"
new=$(git -C "$TREE" diff -U0 baseline HEAD | python3 "$TOP/scripts/added-lines-warnings.py" "$log")
if [ -n "$new" ]; then
	printf '%s\n' "$new" >&2
	die "W=1 warnings in lines the series added, in Debian's configuration (full log: $log)"
fi
info "W=1 in Debian's configuration: ${#targets[@]} file(s) the series touches, no new warnings"
