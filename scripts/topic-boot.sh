#!/bin/bash
# topic-boot.sh: each topic's last patch boots and passes its areas (the
# second half of make bisect-check, after the compile of every prefix).
# scripts/topic-boot-plan.py reads patches/topics and tests/AREA/needs:
# for each topic, the prefix of the series that ends at its last patch,
# and those of the topic's areas whose expected results that prefix can
# meet (every patch tests/AREA/needs names is in it).
#
# For each prefix but the whole series (make check's test kernel): the
# kernel variant series-NNNN (the test kernel's configuration on
# build/linux-series-NNNN, scripts/lib.sh) is configured and built; it
# boots once with nothing to run (booted and powered off, console free of
# kernel reports, scripts/scan-console.sh), then scripts/run-tests.sh runs
# the prefix's areas on it with their results under build/bisect/boot/NNNN.
# Writes build/bisect/boot.md (a line "series HEAD DATE", then the table
# scripts/bisect-check.sh puts into docs/bisect-check.md); exits 1 when a
# prefix does not build, boot or pass.
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts

out=$BUILD/bisect/boot
rm -rf "$out" "$BUILD/bisect/boot.md"
mkdir -p "$out"
plan=$(python3 "$S/topic-boot-plan.py" "$TOP") || die "no boot plan"
"$S/userspace.sh" test >"$out/userspace.log" 2>&1 ||
	die "building the tests' programs failed (see $out/userspace.log)"

rows=() failed=0
while IFS=$'\t' read -r num topics areas notes; do
	t0=$(date +%s)
	[ "$notes" = - ] && notes=
	if [[ $notes == *"the whole series"* ]]; then
		rows+=("| $num | $topics | — | ${notes//; /<br>} |")
		continue
	fi
	v=series-$num
	printf '>> prefix %s (%s)\n' "$num" "$topics"
	if ! { "$S/config.sh" "$v" && "$S/build.sh" "$v"; } >"$out/$num.build.log" 2>&1; then
		rows+=("| $num | $topics | **does not build** (build/bisect/boot/$num.build.log) | ${notes//; /<br>} |")
		failed=$((failed + 1))
		continue
	fi
	job=$out/$num.boot.sh
	echo 'echo booted' >"$job"
	result="boots"
	if ! "$S/vm.sh" --variant "$v" "bisect-$num" "$job" >"$out/$num.boot.log" 2>&1 ||
		! "$S/scan-console.sh" "$BUILD/vm/bisect-$num/console.log" >>"$out/$num.boot.log" 2>&1; then
		result="**does not boot cleanly** (build/bisect/boot/$num.boot.log)"
		failed=$((failed + 1))
	elif [ "$areas" != - ]; then
		rc=0
		# shellcheck disable=SC2086 # the areas, one word each
		RUN_TESTS_VARIANT=$v RUN_TESTS_OUT=$out/$num \
			"$S/run-tests.sh" ${areas//,/ } >"$out/$num.log" 2>&1 || rc=$?
		count=$(tail -n 1 "$out/$num.log")
		if [ $rc -eq 0 ] && [[ $count =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
			result="boots; $areas: $count"
		else
			result="**$areas: ${count:-no count line}** (build/bisect/boot/$num.log)"
			failed=$((failed + 1))
		fi
	fi
	secs=$(($(date +%s) - t0))
	info "$num: $result (${secs}s)"
	rows+=("| $num | $topics | $result | ${notes//; /<br>} |")
done <<<"$plan"

{
	echo "series $(git -C "$TREE" rev-parse --short HEAD) $(date -u +%Y-%m-%d)"
	echo "| last patch | topics | result | not run here |"
	echo "|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$BUILD/bisect/boot.md"
[ $failed -eq 0 ] || die "$failed prefix(es) failed (build/bisect/boot.md)"
info "every topic's last patch boots and passes the areas it can run"
