#!/bin/bash
# bisect-check.sh [--compile-only | --boot-only [NNNN...]]: every prefix of the
# series compiles, and each topic's last patch boots and passes its areas
# (make bisect-check; not part of make check).
#
# Compile: for each patch N of patches/series, in a git worktree of the
# patched tree at patch N (build/linux-bisect), in the test kernel's
# configuration, compile with W=1 every C file that patches 1..N touched
# and that the test kernel builds, and fail on a compile error or on a
# warning in a line patches 1..N added (scripts/added-lines-warnings.py,
# as scripts/build.sh does for the whole series). Files the test kernel
# does not build (tools/, selftests) are left to their areas' own builds.
# The compile is to .s, into build/linux-bisect/obj-bisect; ccache serves
# every file a prefix leaves unchanged.
#
# Boot: scripts/topic-boot.sh (a kernel per topic's last patch, booted,
# with the topic's areas that its tests/AREA/needs allow).
#
# Writes docs/bisect-check.md from both tables (build/bisect/compile.md,
# build/bisect/boot.md; --compile-only or --boot-only reuses the other
# one from an earlier run of the same series; --boot-only NNNN... boots
# only those prefixes and keeps the other rows, each with its date) and the
# logs under build/bisect/; exits 1 when a prefix fails.
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts
stages=compile,boot
boots=()
case ${1:-} in
--compile-only) stages=compile ;;
--boot-only) stages=boot boots=("${@:2}") ;;
'') ;;
*) die "usage: bisect-check.sh [--compile-only | --boot-only [NNNN...]]" ;;
esac

"$S/deps.sh"
"$S/tree.sh" >/dev/null
testobj=$(variant_obj test)
if [ ! -f "$testobj/.config" ] || [ ! -f "$testobj/vmlinux" ]; then
	# Which files the test kernel builds is read from its objects.
	"$S/config.sh" test >/dev/null && "$S/build.sh" test >/dev/null ||
		die "building the test kernel failed"
fi

out=$BUILD/bisect
mkdir -p "$out"
head=$(git -C "$TREE" rev-parse --short HEAD)

# The compile table, build/bisect/compile.md; counts the prefixes that
# fail in failed. Called as a plain command, so that set -e holds in it.
compile_stage() {
	local wt=$BUILD/linux-bisect log=$out/compile c name num i t0 result n f new secs
	local obj=$wt/obj-bisect rows=() bad=0 commits names cfiles
	rm -rf "$out/compile" "$out/compile.md"
	mkdir -p "$out/compile"
	if [ ! -f "$wt/Makefile" ]; then
		worktree_add "$wt" baseline
	fi
	mkdir -p "$obj"
	kbuild_env
	local MAKE=(make -C "$wt" O="$obj" -j"$JOBS" "${KBUILD_ARGS[@]}")

	mapfile -t commits < <(git -C "$TREE" rev-list --reverse baseline..HEAD)
	mapfile -t names < <(grep -v '^#' "$TOP/patches/series")
	[ "${#commits[@]}" -eq "${#names[@]}" ] ||
		die "build/linux has ${#commits[@]} patches, patches/series ${#names[@]} (run: make tree)"

	for i in "${!commits[@]}"; do
		c=${commits[$i]} name=${names[$i]%.patch} num=${names[$i]%%-*}
		log=$out/compile/$num.log
		t0=$(date +%s)
		git -C "$wt" checkout -q -f --detach "$c"
		cp "$testobj/.config" "$obj/.config"
		result=
		if ! "${MAKE[@]}" olddefconfig >"$log" 2>&1; then
			result="**configuration failed** (build/bisect/compile/$num.log)"
		fi
		n=0
		if [ -z "$result" ]; then
			mapfile -t cfiles < <(git -C "$wt" diff --name-only --diff-filter=AM baseline "$c" -- '*.c')
			for f in "${cfiles[@]}"; do
				[ -f "$testobj/${f%.c}.o" ] || continue
				n=$((n + 1))
				if ! "${MAKE[@]}" W=1 "${f%.c}.s" >>"$log" 2>&1; then
					result="**$f does not compile** (build/bisect/compile/$num.log)"
					break
				fi
			done
		fi
		if [ -z "$result" ]; then
			new=$(git -C "$wt" diff -U0 baseline "$c" | python3 "$S/added-lines-warnings.py" "$log")
			if [ -n "$new" ]; then
				printf '%s\n' "$new" >"$out/compile/$num.warnings"
				result="**$(wc -l <"$out/compile/$num.warnings") W=1 warning(s) in added lines** (build/bisect/compile/$num.warnings)"
			else
				result="compiles, no W=1 warning in added lines"
			fi
		fi
		case $result in '**'*) bad=$((bad + 1)) ;; esac
		secs=$(($(date +%s) - t0))
		printf '   %s: %d file(s): %s (%ds)\n' "$num" "$n" "$result" "$secs"
		rows+=("| $num | $name | $n | $result |")
	done
	git -C "$wt" checkout -q -f --detach "${commits[-1]}"
	{
		echo "series $head $(date -u +%Y-%m-%d)"
		echo "| patch | subject | files | result |"
		echo "|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	} >"$out/compile.md"
	if [ $bad -gt 0 ]; then
		info "$bad of ${#commits[@]} prefixes fail to compile"
		failed=1
		return 0
	fi
	info "all ${#commits[@]} prefixes compile without new W=1 warnings"
}

# A table from an earlier run counts only if it was made for this series
# (its first line: "series HEAD DATE").
have_table() {
	[ -f "$out/$1.md" ] && [ "$(head -n 1 "$out/$1.md" | cut -d' ' -f2)" = "$head" ]
}
for t in compile boot; do
	case $stages in
	*$t*) ;;
	*) have_table "$t" || die "no $t table for series $head in build/bisect (run: make bisect-check)" ;;
	esac
done

failed=0
case $stages in *compile*) compile_stage ;; esac
case $stages in *boot*) "$S/topic-boot.sh" "${boots[@]}" || failed=1 ;; esac
for t in compile boot; do
	have_table "$t" || die "the $t stage wrote no table for series $head"
done
{
	echo "# Every prefix of the series compiles; each topic's last patch boots"
	echo
	echo "Made by \`make bisect-check\` (scripts/bisect-check.sh) with the series"
	echo "at build/linux $head; the compile table on $(head -n 1 "$out/compile.md" | cut -d' ' -f3),"
	echo "the boots on the dates in their last column."
	echo
	echo "## Every prefix compiles"
	echo
	echo "For each patch N, the tree at patch N, in the test kernel's configuration:"
	echo "every C file patches 1..N touched that the test kernel builds,"
	echo "compiled with W=1; a compile error, or a warning in a line patches"
	echo "1..N added, fails the prefix. \"files\" counts the files compiled."
	echo
	tail -n +2 "$out/compile.md"
	echo
	echo "## Each topic's last patch boots and passes its areas"
	echo
	echo "For each topic of patches/topics, the series up to its last patch"
	echo "(scripts/topic-boot.sh): the kernel in the test kernel's configuration,"
	echo "booted once with nothing to run (booted, powered off, console free of"
	echo "kernel reports), then the topic's areas (scripts/run-tests.sh, with"
	echo "the count each area's tests/AREA/expected demands). An area runs only"
	echo "on a prefix that holds every patch its tests/AREA/needs names: its"
	echo "expected results assume them; the column \"not run here\" says what"
	echo "was not and why. The areas run knowing the patches after the prefix"
	echo "(RUN_TESTS_LACKS): a test of one of them reports a skip that names it,"
	echo "and scripts/results.py accepts that skip only there, never in make check."
	echo
	tail -n +2 "$out/boot.md"
} >"$TOP/docs/bisect-check.md"
info "table: docs/bisect-check.md"
[ $failed -eq 0 ] || die "make bisect-check failed (see above)"
