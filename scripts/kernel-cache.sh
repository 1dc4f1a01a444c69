#!/bin/bash
# kernel-cache.sh key|restore|store VARIANT [KEY]: whole kernel builds kept
# outside the clone, like ccache but for a build's result, so that a second
# clone of the same series does not build the same kernel again.
#
# What ccache leaves: a fresh clone's build of the test kernel with every
# object in ccache still took 186-192 s (make check, 2026-12-07), most of
# it system time: per object, make's shell, scripts/kcc, ccache, fixdep,
# nm and objtool (which runs on every object, hit or not), ~2,000 times.
# This cache keeps the object directory a build left, keyed by exactly
# what the build reads, and build.sh restores it instead of running make.
#
#   key VARIANT      print the variant's key, or nothing and status 1 for
#                    a variant that is not cached: only kernels of the
#                    series' tree (patched) and of copies of it with
#                    patches reverted (without-SPEC, the ABI tests'
#                    kernel) are; the benchmark's baseline, make
#                    bisect-check's prefixes and make mutants' trees are
#                    built with ccache as before.
#   restore VARIANT KEY
#                    make build/obj-VARIANT the cached build KEY; status 1
#                    (nothing changed) when there is none.
#   store VARIANT KEY
#                    keep build/obj-VARIANT, just built and checked, as KEY.
#   config-key VARIANT, config-get VARIANT KEY DEST, config-put VARIANT KEY SRC
#                    the same for what config.sh makes of the variant's
#                    fragments on its tree: a .config (19-38 s of Kconfig
#                    runs and the builds of its programs in a fresh clone).
#
# The key: the variant's name (the series' kernels are also W=1-checked,
# a verdict kept with them), what the source tree's files hold (its git
# tree object, plus a hash of what they hold that it does not: git diff,
# untracked files; for without-SPEC, the series' tree's and the contents
# of the files the revert wrote), the object directory's .config (what
# config.sh made of the fragments), the compiler, assembler and linker
# versions, and the scripts that run the build (this one, build.sh, kcc,
# lib.sh with the make variables, the W=1 filter) and SCHEME below. A
# change to any of them is a new key; nothing is ever updated in place.
#
# A restored directory is made to look built here: the absolute paths a
# build records (the compiler, scripts/kcc, in every object's .cmd file;
# objtool's own build; the build and source links of the installed
# modules) are rewritten from the clone it was built in to this one, and
# its files dated now, so a later make in it (a developer's edit, or
# abi-base's build, which starts from a copy of the test kernel's objects)
# rebuilds only what changes after.
#
# Entries are never changed once complete: a store builds its entry beside
# the cache and renames it in (another clone storing the same key at once
# keeps the first), and an old entry is renamed away before it is deleted,
# so a restore copying it fails instead of copying part of it. A restored
# copy must hold as many files as the entry recorded. The key is taken
# again after the build: a tree edited while make ran stores nothing.
#
# KERNEL_CACHE: the directory (default /var/cache/mw517/kernel, else
# ~/.cache/mw517/kernel when that is not writable); KERNEL_CACHE=off turns
# the cache off (a cold build). The two newest entries of each variant are
# kept; a build is not stored when the disk would keep less than
# KERNEL_CACHE_MIN_FREE_MB (default 4096) free. Builds given other make
# variables (make check KCFLAGS=..., MAKEFLAGS) are keyed by them too;
# trees outside the clone (BUILD or TREE set elsewhere) are not cached.
. "$(dirname "$0")/lib.sh"

# Part of every key: count it up when a change here changes what an entry
# holds or how it is restored (not for messages or checks).
SCHEME=1
cmd=${1:?usage: kernel-cache.sh key|restore|store|config-key|config-get|config-put VARIANT [KEY [FILE]]}
variant=${2:?usage: kernel-cache.sh key|restore|store|config-key|config-get|config-put VARIANT [KEY [FILE]]}

# content_key DIR: what the files of the git tree DIR hold, whatever its
# commits are called (every clone's git am makes commits of its own). No
# user's git settings may hide a file or a mode from it.
content_key() {
	local t sum g=(git -C "$1" -c core.excludesFile=/dev/null -c core.fileMode=true -c core.autocrlf=false)
	t=$("${g[@]}" rev-parse 'HEAD^{tree}') || return 1
	sum=$({
		"${g[@]}" diff --no-color --no-ext-diff --no-textconv --binary HEAD || echo "diff failed $RANDOM"
		"${g[@]}" ls-files -z --others --exclude-standard |
			(cd "$1" && xargs -0 -r sha256sum --)
	} | sha256sum | cut -d' ' -f1)
	echo "$t $sum"
}

# tree_dir: the variant's source tree as config.sh left it, never made
# again here (variant_tree would copy abi-base's tree anew if build/linux
# changed, deleting the object directory inside it); status 1 for a
# variant that is not cached, or a copy that is no longer the series'.
tree_dir() {
	local which
	read -r _ which _ < <(variant_line "$variant")
	case $which in
	patched) echo "$TREE" ;;
	without-[0-9]*)
		[ -f "$BUILD/linux-$which.changed" ] &&
			[ "$(cat "$BUILD/linux-$which.head" 2>/dev/null)" = "$(tree_key "$TREE")" ] || return 1
		echo "$BUILD/linux-$which"
		;;
	*) return 1 ;;
	esac
}

# obj_dir: the variant's object directory (variant_obj's, not made here)
obj_dir() {
	local src
	src=$(tree_dir) || return 1
	[ -d "$src/obj-$variant" ] || return 1
	echo "$src/obj-$variant"
}

# the make variables given on make's command line (MAKEFLAGS after "--"),
# not its options (-j, the jobserver)
make_vars() {
	case " ${MAKEFLAGS:-} " in *" -- "*) echo "${MAKEFLAGS#* -- }" ;; esac
}

# probe TOOL: its version, or that it is absent (no error message: those
# name this script's path, which differs between clones)
probe() {
	if command -v "$1" >/dev/null 2>&1; then
		echo "$1 $("$1" --version 2>&1 | head -n1)"
	else
		echo "$1 absent"
	fi
}

# tree_lines: what the variant's tree holds and the toolchain, for a key;
# status 1 for a variant that is not cached.
tree_lines() {
	local src f
	[ "${KERNEL_CACHE:-}" != off ] || return 1
	# relocate() rewrites paths under the clone only
	case $TREE/ in "$TOP"/*) ;; *) return 1 ;; esac
	src=$(tree_dir) || return 1
	echo "scheme $SCHEME variant $variant tree $src" | sed "s|$TOP/|TOP/|g"
	content_key "$TREE" || echo "no tree key $RANDOM"
	# what W=1's check of added lines compares with
	git -C "$TREE" rev-parse 'baseline^{tree}' 2>&1
	if [ "$src" != "$TREE" ]; then
		# the files the revert wrote, as they are now
		while read -r f; do
			echo "$f $(sha256sum <"$src/$f" 2>/dev/null || echo absent)"
		done <"$src.changed"
	fi
	# the toolchain, Debian revisions included; what objtool links
	# and the image is compressed and the modules installed with
	dpkg-query -W gcc-12 binutils libelf1 lz4 kmod libssl3 2>&1
	probe gcc
	# make variables given from outside (make check KCFLAGS=...)
	echo "make $(make_vars)" | sed "s|$TOP/|TOP/|g"
	for f in KCFLAGS KAFLAGS KCPPFLAGS ARCH LLVM CROSS_COMPILE INSTALL_MOD_STRIP KBUILD_EXTRA_WARN W C \
		USERCFLAGS USERLDFLAGS KCONFIG_ALLCONFIG; do
		echo "$f=${!f:-}"
	done
}

key() {
	local obj f lines
	lines=$(tree_lines) || return 1
	obj=$(obj_dir) || return 1
	[ -f "$obj/.config" ] || return 1
	{
		echo "$lines"
		sha256sum <"$obj/.config"
		for f in build.sh kcc lib.sh added-lines-warnings.py; do
			sha256sum <"$TOP/scripts/$f"
		done
		echo "${KBUILD_ARGS[@]}" | sed "s|$TOP/|TOP/|g"
	} | sha256sum | cut -c1-16
}

# config_key: the key of what config.sh makes of the variant's fragments:
# its tree, the fragments, config.sh itself, the programs Kconfig asks
# (the compiler and binutils above; PAHOLE_VERSION, RUST_IS_AVAILABLE,
# LLD_VERSION).
config_key() {
	local f frags lines
	lines=$(tree_lines) || return 1
	read -r _ _ frags < <(variant_line "$variant")
	{
		echo "$lines"
		echo "config $frags"
		for f in $frags; do sha256sum <"$TOP/kconfig/$f.config"; done
		sha256sum <"$TOP/scripts/config.sh"
		for f in pahole rustc bindgen ld.lld; do probe "$f"; done
		# GCC_PLUGINS: whether gcc's plugin headers are installed
		ls "$(gcc -print-file-name=plugin)/include/plugin-version.h" 2>&1 || true
	} | sha256sum | cut -c1-16
}

# relocate OBJ OLDTOP OLDPTOP: the paths of the clone OLDTOP (OLDPTOP with
# symbolic links resolved, as Kbuild and readlink -f record some),
# recorded by the build in OBJ, made this clone's (TOP and its resolved
# path): one pass, so that a new path containing an old one is not
# rewritten twice.
relocate() {
	local obj=$1 l t
	export KC_O1=$2/ KC_N1=$TOP/ KC_O2=${3:-$2}/ KC_N2
	KC_N2=$(cd "$TOP" && pwd -P)/
	[ "$KC_O1" != "$KC_N1" ] || [ "$KC_O2" != "$KC_N2" ] || return 0
	{ grep -rlIZ -F -e "$KC_O1" -e "$KC_O2" "$obj" || true; } |
		xargs -0 -r perl -pi -e 's/(\Q$ENV{KC_O2}\E|\Q$ENV{KC_O1}\E)/$1 eq $ENV{KC_O2} ? $ENV{KC_N2} : $ENV{KC_N1}/ge'
	find "$obj" -type l -print0 | while IFS= read -r -d '' l; do
		t=$(readlink "$l")
		case $t in
		"$KC_O2"*) ln -sfn "$KC_N2${t#"$KC_O2"}" "$l" ;;
		"$KC_O1"*) ln -sfn "$KC_N1${t#"$KC_O1"}" "$l" ;;
		esac
	done
}

count_files() { find "$1" | wc -l; }

# stamp OBJ: what marks OBJ as the build of a key: the key, and the size
# and time of its bzImage (a make run in OBJ by hand changes them).
stamp() {
	stat -c '%s %Y' "$1/arch/x86/boot/bzImage" 2>/dev/null || echo none
}

restore() {
	local key=${1:?usage: kernel-cache.sh restore VARIANT KEY} cache entry obj real old oldp want
	cache=$(cache_dir kernel KERNEL_CACHE)
	entry=$cache/$key
	obj=$(variant_obj "$variant")
	real=$(readlink -f "$obj")
	# This directory is that build already (build.sh ran, or restored it).
	if [ "$(cat "$real/.pipeline-kernel" 2>/dev/null)" = "$key $(stamp "$real")" ]; then
		info "$variant: up to date (the build of key $key)"
		return 0
	fi
	[ -f "$entry/ORIGIN" ] && [ -d "$entry/obj" ] || return 1
	old=$(sed -n 's/^top //p' "$entry/ORIGIN")
	oldp=$(sed -n 's/^ptop //p' "$entry/ORIGIN")
	want=$(sed -n 's/^files //p' "$entry/ORIGIN")
	[ -n "$old" ] && [ -n "$want" ] || return 1
	touch "$entry" 2>/dev/null || true
	rm -rf "$real.restore"
	if ! cp -a "$entry/obj" "$real.restore" 2>/dev/null || [ "$(count_files "$real.restore")" != "$want" ]; then
		rm -rf "$real.restore"
		info "$variant: copying the cached build $entry failed or was incomplete; building instead"
		return 1
	fi
	relocate "$real.restore" "$old" "$oldp"
	# the configuration is part of the key: it must be the one config.sh made
	if ! cmp -s "$real.restore/.config" "$obj/.config" || ! piggy_holds_kernel "$real.restore"; then
		rm -rf "$real.restore"
		info "$variant: the cached build $entry is not of this configuration or lacks its kernel; building instead"
		return 1
	fi
	# Built now, as far as make can tell: one time for every file, later
	# than this clone's sources (the patched ones are as new as its git
	# am), so that a make in it later sees only what changes after.
	find "$real.restore" \( -type f -o -type d \) -print0 | xargs -0 -r touch -c -d "@$(date +%s)"
	# config.sh's stamp of the configuration (scripts/config.sh: what
	# abi-base starts from) is this clone's, written for this .config just
	# now; the cached one names the commits of the clone it came from.
	rm -f "$real.restore/.pipeline-config" "$real.restore/.pipeline-kernel"
	[ ! -f "$real/.pipeline-config" ] || cp -p "$real/.pipeline-config" "$real.restore/"
	# the old directory goes aside first: an interrupt leaves one or the
	# other whole, and neither stamped as this build
	rm -f "$real/.pipeline-kernel"
	rm -rf "$real.old"
	[ ! -e "$real" ] || mv -T "$real" "$real.old" || die "cannot move $real aside for the cached build"
	if ! mv -T "$real.restore" "$real"; then
		[ ! -e "$real.old" ] || mv -T "$real.old" "$real"
		die "cannot replace $real with the cached build"
	fi
	rm -rf "$real.old"
	echo "$key $(stamp "$real")" >"$real/.pipeline-kernel"
	[ ! -f "$entry/w1.log" ] || cp "$entry/w1.log" "$LOGS/w1-$variant.log"
	printf 'restored from the kernel cache: %s (built %s)\n' "$entry" "$(sed -n 's/^built //p' "$entry/ORIGIN")" >"$LOGS/build-$variant.log"
	info "$variant: the cached build $key ($(sed -n 's/^built //p' "$entry/ORIGIN"); $entry)"
}

# drop DIR: an entry renamed away, then deleted
drop() {
	local t
	t=$(dirname "$1")/.drop.$$.$RANDOM
	mv -T "$1" "$t" 2>/dev/null && rm -rf "$t"
}

store() {
	local key=${1:?usage: kernel-cache.sh store VARIANT KEY} cache obj real stage avail size e n=0 now
	cache=$(cache_dir kernel KERNEL_CACHE)
	obj=$(obj_dir) || { info "$variant: not cached: its tree changed while it was built"; return 0; }
	real=$(readlink -f "$obj")
	# the build's inputs as they are now: a tree edited while make ran
	# gives another key, and this build is then nobody's
	now=$(key) || now=
	if [ "$now" != "$key" ]; then
		info "$variant: not cached: the inputs changed while it was built (key $key, now ${now:-none})"
		return 0
	fi
	echo "$key $(stamp "$real")" >"$real/.pipeline-kernel"
	mkdir -p "$cache" 2>/dev/null || { info "$variant: not cached: $cache cannot be made"; return 0; }
	[ ! -f "$cache/$key/ORIGIN" ] || return 0
	size=$(du -sk "$real" | cut -f1)
	avail=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
	if [ "$avail" -lt $((size + ${KERNEL_CACHE_MIN_FREE_MB:-4096} * 1024)) ]; then
		info "$variant: not cached: $((avail / 1024)) MiB free in $cache, the build is $((size / 1024)) MiB"
		return 0
	fi
	# what a store killed on the way left (older than a day)
	find "$cache" -mindepth 1 -maxdepth 1 \( -name '*.tmp.*' -o -name '.drop.*' \) -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
	stage=$cache/$key.tmp.$$
	rm -rf "$stage"
	# an interrupt or a failed copy leaves nothing in the cache
	trap 'rm -rf "$stage"' EXIT
	if ! mkdir -p "$stage" || ! cp -a "$real" "$stage/obj"; then
		rm -rf "$stage"
		info "$variant: not cached: copying $real failed"
		return 0
	fi
	[ ! -f "$LOGS/w1-$variant.log" ] || cp "$LOGS/w1-$variant.log" "$stage/w1.log"
	if ! printf 'variant %s\ntop %s\nptop %s\nfiles %s\nbuilt %s\n' "$variant" "$TOP" "$(cd "$TOP" && pwd -P)" \
		"$(count_files "$stage/obj")" "$(date -u '+%Y-%m-%d %H:%M UTC')" >"$stage/ORIGIN" ||
		! mv -T "$stage" "$cache/$key" 2>/dev/null; then
		# another clone stored this key first, or the disk is full
		rm -rf "$stage"
		trap - EXIT
		[ -f "$cache/$key/ORIGIN" ] || info "$variant: not cached: writing $cache/$key failed"
		return 0
	fi
	trap - EXIT
	# the two newest of this variant stay
	for e in $(ls -dt "$cache"/*/ 2>/dev/null); do
		e=${e%/}
		case $e in *.tmp.*) continue ;; esac
		grep -qx "variant $variant" "$e/ORIGIN" 2>/dev/null || continue
		n=$((n + 1))
		[ $n -le 2 ] || drop "$e" || true
	done
	info "$variant: build kept in the kernel cache as $key ($((size / 1024)) MiB)"
}

# config_get KEY DEST / config_put KEY SRC: config.sh's result, a .config
config_get() {
	local f
	f=$(cache_dir kernel KERNEL_CACHE)/config/${1:?}.config
	[ -f "$f" ] && cp "$f" "${2:?}.cached" && mv "${2:?}.cached" "$2"
}
config_put() {
	local d
	d=$(cache_dir kernel KERNEL_CACHE)/config
	mkdir -p "$d" 2>/dev/null && cp "${2:?}" "$d/${1:?}.config.tmp.$$" && mv "$d/$1.config.tmp.$$" "$d/$1.config" ||
		{ rm -f "$d/$1.config.tmp.$$"; return 0; }
	# configurations are small: the newest 20 stay
	{ ls -t "$d"/*.config 2>/dev/null | tail -n +21 | xargs -r rm -f; } || true
}

case $cmd in
key) key ;;
config-key) config_key ;;
config-get) config_get "${3:-}" "${4:-}" ;;
config-put) config_put "${3:-}" "${4:-}" ;;
restore) restore "${3:-}" ;;
store) store "${3:-}" || info "$variant: not cached (storing failed)" ;;
*) die "usage: kernel-cache.sh key|restore|store|config-key|config-get|config-put VARIANT [KEY [FILE]]" ;;
esac
