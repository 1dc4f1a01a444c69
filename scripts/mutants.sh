#!/bin/bash
# mutants.sh [PATCHNUM...]: evidence that the tests see the patches. For
# each functional patch listed in mutants/list (or only those named),
# build the full series plus that patch's recorded mutation (a small diff
# in mutants/ that undoes the patch's behaviour) as kernel variant
# "mutant", run the patch's test areas on it, and require at least one
# named test to fail. Writes the table patch -> failing tests to
# docs/mutants.md (build/mutants/table.md when only some patches are
# named) and exits 1 when a mutant survives. Not part of make check.
#
# The mutant tree is a git worktree (build/linux-mutant) of the patched
# tree; its objects sit inside it like every variant's (variant_obj), so
# ccache serves everything but the mutated files: one mutant costs an
# incremental build plus its areas.
#
# MUTANTS_AREAS=AREA,... runs the named mutants against those areas instead
# of mutants/list's (to see whether another area notices a patch, e.g.
# MUTANTS_AREAS=runtimes scripts/mutants.sh 0005 0007); the table then
# goes to build/mutants/table.md, never to docs/mutants.md.
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts
list=$TOP/mutants/list
[ -f "$list" ] || die "no mutants/list"

want=("$@")
out=$BUILD/mutants
mkdir -p "$out"
table=$out/table.md
[ ${#want[@]} -eq 0 ] && [ -z "${MUTANTS_AREAS:-}" ] && table=$TOP/docs/mutants.md

"$S/deps.sh"
"$S/tree.sh" >/dev/null
phase tools "$S/userspace.sh" test >/dev/null
# tests/i2c-abi compares with the kernel from before the SMBus 3.0 patches.
if awk '!/^#/ && $2 ~ /i2c-abi/' "$list" | grep -q .; then
	"$S/config.sh" abi-base >/dev/null && "$S/build.sh" abi-base >/dev/null ||
		die "building the abi-base kernel failed"
fi

wt=$BUILD/linux-mutant
head=$(git -C "$TREE" rev-parse HEAD)
reset_tree() {
	if [ ! -f "$wt/Makefile" ]; then
		worktree_add "$wt" "$head"
	fi
	# -f: a run stopped midway leaves its mutation in the tree
	git -C "$wt" checkout -q -f --detach "$head"
	git -C "$wt" reset -q --hard "$head"
	git -C "$wt" clean -q -fdx -e '/obj-*'
}

rows=() survived=0 n=0
while read -r num areas diff what; do
	case $num in '' | '#'*) continue ;; esac
	areas=${MUTANTS_AREAS:-$areas}
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$num"; then
		continue
	fi
	n=$((n + 1))
	# A patch may have several mutations: outputs are named by the diff.
	key=${diff%.diff}
	patch=$(sed -n "s/^\($num-.*\.patch\)$/\1/p" "$TOP/patches/series")
	[ -n "$patch" ] || die "mutants/list names patch $num, which patches/series does not list"
	[ -f "$TOP/mutants/$diff" ] || die "mutants/list: $TOP/mutants/$diff does not exist"
	printf '>> mutant %s (%s): %s\n' "$num" "$diff" "$what"
	t0=$(date +%s)
	reset_tree
	if ! git -C "$wt" apply "$TOP/mutants/$diff" 2>"$out/$key.apply.log"; then
		rows+=("| $num | \`$diff\` | $areas | **mutation does not apply** (see $out/$key.apply.log) | — |")
		survived=$((survived + 1))
		continue
	fi
	if ! { "$S/config.sh" mutant && "$S/build.sh" mutant; } >"$out/$key.build.log" 2>&1; then
		rows+=("| $num | \`$diff\` | $areas | **does not build** (see $out/$key.build.log) | — |")
		survived=$((survived + 1))
		continue
	fi
	# The areas on the mutant kernel; their results in a directory of
	# their own, so that a mutant never touches the test kernel's.
	RUN_TESTS_VARIANT=mutant RUN_TESTS_OUT=$out/$key RUN_TESTS_LACKS='' \
		"$S/run-tests.sh" ${areas//,/ } >"$out/$key.log" 2>&1 || true
	# (no failing test: grep finds nothing, which must not end the run)
	failing=$(grep '^not ok' "$out/$key/results.tap" 2>/dev/null |
		sed -e 's/^not ok [0-9]* - //' -e 's/|/\\|/g' | head -n 6 || true)
	secs=$(($(date +%s) - t0))
	if [ -z "$failing" ]; then
		rows+=("| $num | \`$diff\` | $areas | **survived: no test failed** | ${secs}s |")
		survived=$((survived + 1))
		info "survived: no test failed ($out/$key.log)"
	else
		count=$(grep -c '^not ok' "$out/$key/results.tap")
		rows+=("| $num | \`$diff\` | $areas | $count: $(printf '%s' "$failing" | paste -sd ';' | sed 's/;/<br>/g') | ${secs}s |")
		info "killed: $count test(s) failed"
	fi
done <"$list"
[ $n -gt 0 ] || die "no mutant matched: ${want[*]}"

{
	echo "# Mutants: which tests see each patch"
	echo
	echo "Made by \`make mutants\` (scripts/mutants.sh) on $(date -u +%Y-%m-%d):"
	echo "for each functional patch, the full series plus the mutation in"
	echo "\`mutants/\` that undoes the patch's behaviour, booted on the debug"
	echo "kernel, with the patch's test areas run on it. A mutant is killed"
	echo "when at least one named test fails; the first failing tests are"
	echo "listed. Patches without a mutant, and why, are the comment lines"
	echo "of \`mutants/list\`."
	echo
	echo "| patch | mutation | areas | failing tests (count: first names) | time |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	sed -n 's/^# *\(no mutant:.*\)/- \1/p' "$list"
} >"$table"
info "table: $table"
[ $survived -eq 0 ] || die "$survived of $n mutant(s) survived or could not be run"
info "all $n mutants killed"
