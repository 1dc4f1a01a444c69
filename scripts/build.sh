#!/bin/bash
# build.sh VARIANT: build bzImage (and modules, when enabled) in
# build/obj-VARIANT with ccache. For the patched tree, also compile every
# C file the series touches with W=1 and fail on warnings in lines the
# series added. A build of the same inputs made before, in this clone or
# another, is taken from the kernel cache instead (scripts/kernel-cache.sh),
# and a build made here is kept there.
. "$(dirname "$0")/lib.sh"

variant=${1:?usage: build.sh VARIANT}
line=$(variant_line "$variant")
read -r _ which _ <<<"$line"
src=$(variant_tree "$which")
obj=$(variant_obj "$variant")
kbuild_env
MAKE=(make -C "$src" O="$obj" -j"$JOBS" "${KBUILD_ARGS[@]}")

key=$("$TOP/scripts/kernel-cache.sh" key "$variant") || key=
if [ -n "$key" ] && "$TOP/scripts/kernel-cache.sh" restore "$variant" "$key"; then
	[ "$which" != patched ] ||
		info "W=1: the series' files compiled with no new warnings when this build was made ($LOGS/w1-$variant.log)"
	exit 0
fi
# From here the directory is no longer the build its stamp names.
rm -f "$obj/.pipeline-kernel"

check_disk $((4 * 1024 * 1024))
targets=(bzImage)
grep -q '^CONFIG_MODULES=y' "$obj/.config" && targets+=(modules)
logged "$LOGS/build-$variant.log" "${MAKE[@]}" "${targets[@]}" ||
	die "building the $variant kernel failed"
if grep -q '^CONFIG_MODULES=y' "$obj/.config"; then
	rm -rf "$obj/modroot"
	logged "$LOGS/modules-install-$variant.log" "${MAKE[@]}" INSTALL_MOD_PATH="$obj/modroot" modules_install ||
		die "installing the $variant modules failed"
fi
# bzImage must hold this build's kernel (scripts/kcc says why).
piggy_holds_kernel "$obj" ||
	die "$obj/arch/x86/boot/bzImage does not hold the kernel just built (piggy.o lacks the compressed image piggy.S names)"
info "$variant: $(cat "$obj/include/config/kernel.release") $(du -h "$obj/arch/x86/boot/bzImage" | cut -f1)"

if [ "$which" != patched ]; then
	[ -z "$key" ] || "$TOP/scripts/kernel-cache.sh" store "$variant" "$key" || info "$variant: not cached"
	exit 0
fi
# W=1 on what the series touches. Compiling to .s leaves the .o alone.
mapfile -t cfiles < <(git -C "$src" diff --name-only --diff-filter=AM baseline HEAD -- '*.c')
w1log=$LOGS/w1-$variant.log
: >"$w1log"
targets=()
for f in "${cfiles[@]}"; do
	[ -f "$obj/${f%.c}.o" ] || continue # not built in this configuration
	targets+=("${f%.c}.s")
done
n=${#targets[@]}
# One make for all of them: Kbuild's single-target builds take several
# targets at once, and each make pays for the top-level Makefile and
# prepare. The .s files of an earlier run go first: make would keep an
# up-to-date one, and its warnings would be missing from this log.
if [ "$n" -gt 0 ]; then
	(cd "$obj" && rm -f "${targets[@]}")
	"${MAKE[@]}" W=1 "${targets[@]}" >>"$w1log" 2>&1 || die "W=1 compile of the series' files failed (see $w1log)"
fi
new=$(git -C "$src" diff -U0 baseline HEAD | python3 "$TOP/scripts/added-lines-warnings.py" "$w1log")
if [ -n "$new" ]; then
	printf '%s\n' "$new" >&2
	die "W=1 warnings in lines the series added (full log: $w1log)"
fi
info "W=1: $n file(s) the series touches, no new warnings"
[ -z "$key" ] || "$TOP/scripts/kernel-cache.sh" store "$variant" "$key" || info "$variant: not cached"
