#!/bin/bash
# bisect-check.sh: every prefix of the series compiles (make bisect-check;
# not part of make check). For each patch N of patches/series, in a git
# worktree of the patched tree at patch N (build/linux-bisect), in the test
# kernel's configuration, compile with W=1 every C file that patches 1..N
# touched and that the test kernel builds, and fail on a compile error or
# on a warning in a line patches 1..N added (scripts/added-lines-warnings.py,
# as scripts/build.sh does for the whole series). Files the test kernel does
# not build (tools/, selftests) are left to their areas' own builds.
#
# The compile is to .s, into build/linux-bisect/obj-bisect; ccache serves
# every file a prefix leaves unchanged. Writes the table
# docs/bisect-check.md and the logs under build/bisect/; exits 1 when a
# prefix fails.
#
# Booting each topic's last patch and running its areas is not done here
# (see docs/bisect-check.md).
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts

"$S/deps.sh"
"$S/tree.sh" >/dev/null
testobj=$(variant_obj test)
if [ ! -f "$testobj/.config" ] || [ ! -f "$testobj/vmlinux" ]; then
	# Which files the test kernel builds is read from its objects.
	"$S/config.sh" test >/dev/null && "$S/build.sh" test >/dev/null ||
		die "building the test kernel failed"
fi

out=$BUILD/bisect
rm -rf "$out"
mkdir -p "$out"
wt=$BUILD/linux-bisect
obj=$wt/obj-bisect
if [ ! -f "$wt/Makefile" ]; then
	rm -rf "$wt"
	git -C "$TREE" worktree prune
	git -C "$TREE" worktree add -q --detach "$wt" baseline >&2
fi
mkdir -p "$obj"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
export KBUILD_BUILD_TIMESTAMP="pipeline" KBUILD_BUILD_USER=pipeline KBUILD_BUILD_HOST=qemu
MAKE=(make -C "$wt" O="$obj" -j"$JOBS" CC="ccache gcc" HOSTCC="ccache gcc")

mapfile -t commits < <(git -C "$TREE" rev-list --reverse baseline..HEAD)
mapfile -t names < <(grep -v '^#' "$TOP/patches/series")
[ "${#commits[@]}" -eq "${#names[@]}" ] ||
	die "build/linux has ${#commits[@]} patches, patches/series ${#names[@]} (run: make tree)"

rows=() failed=0
for i in "${!commits[@]}"; do
	c=${commits[$i]} name=${names[$i]%.patch} num=${names[$i]%%-*}
	log=$out/$num.log
	t0=$(date +%s)
	git -C "$wt" checkout -q -f --detach "$c"
	cp "$testobj/.config" "$obj/.config"
	result=
	if ! "${MAKE[@]}" olddefconfig >"$log" 2>&1; then
		result="**configuration failed** (build/bisect/$num.log)"
	fi
	n=0
	if [ -z "$result" ]; then
		mapfile -t cfiles < <(git -C "$wt" diff --name-only --diff-filter=AM baseline "$c" -- '*.c')
		for f in "${cfiles[@]}"; do
			[ -f "$testobj/${f%.c}.o" ] || continue
			n=$((n + 1))
			if ! "${MAKE[@]}" W=1 "${f%.c}.s" >>"$log" 2>&1; then
				result="**$f does not compile** (build/bisect/$num.log)"
				break
			fi
		done
	fi
	if [ -z "$result" ]; then
		new=$(git -C "$wt" diff -U0 baseline "$c" | python3 "$S/added-lines-warnings.py" "$log")
		if [ -n "$new" ]; then
			printf '%s\n' "$new" >"$out/$num.warnings"
			result="**$(wc -l <"$out/$num.warnings") W=1 warning(s) in added lines** (build/bisect/$num.warnings)"
		else
			result="compiles, no W=1 warning in added lines"
		fi
	fi
	case $result in '**'*) failed=$((failed + 1)) ;; esac
	secs=$(($(date +%s) - t0))
	printf '   %s: %d file(s): %s (%ds)\n' "$num" "$n" "$result" "$secs"
	rows+=("| $num | $name | $n | $result |")
done
git -C "$wt" checkout -q -f --detach "${commits[-1]}"

{
	echo "# Every prefix of the series compiles"
	echo
	echo "Made by \`make bisect-check\` (scripts/bisect-check.sh) on $(date -u +%Y-%m-%d),"
	echo "series at build/linux $(git -C "$TREE" rev-parse --short HEAD). For each"
	echo "patch N, the tree at patch N, in the test kernel's configuration:"
	echo "every C file patches 1..N touched that the test kernel builds,"
	echo "compiled with W=1; a compile error, or a warning in a line patches"
	echo "1..N added, fails the prefix. \"files\" counts the files compiled."
	echo
	echo "| patch | subject | files | result |"
	echo "|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Not checked here: booting each topic's last patch and running its"
	echo "areas. The areas test the whole series (make check), and several"
	echo "expect a later topic's fix (tests/idmap's whiteout tests need 0023,"
	echo "the KUnit count includes 0017's case), so a prefix kernel needs its"
	echo "own expected results first."
} >"$TOP/docs/bisect-check.md"
info "table: docs/bisect-check.md"
[ $failed -eq 0 ] || die "$failed of ${#commits[@]} prefixes fail"
info "all ${#commits[@]} prefixes compile without new W=1 warnings"
