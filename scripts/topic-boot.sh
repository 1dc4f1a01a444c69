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
# the prefix's areas on it with their results under build/bisect/boot/NNNN,
# and RUN_TESTS_LACKS naming the patches after the prefix: a test of one of
# them reports a skip for it (scripts/results.py's LACKS), make check never.
#
#   topic-boot.sh [NNNN...]   only these prefixes. Every other row comes
#                             from the earlier build/bisect/boot.md of the
#                             same series, with the date of its run, and
#                             only if it still stands for today's tests
#                             (scripts/topic-boot-keep.py); else nothing
#                             runs. build/bisect/boot.keys holds each row's
#                             fingerprint of the tests, harness and kernel
#                             configuration it ran with.
# Writes build/bisect/boot.md (a line "series HEAD DATE", then the table
# scripts/bisect-check.sh puts into docs/bisect-check.md); exits 1 when a
# prefix does not build, boot or pass.
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts

out=$BUILD/bisect/boot
table=$BUILD/bisect/boot.md
keys=$BUILD/bisect/boot.keys
head=$(git -C "$TREE" rev-parse --short HEAD)
plan=$(python3 "$S/topic-boot-plan.py" "$TOP") || die "no boot plan"
today=$(date -u +%Y-%m-%d)

# fingerprint AREAS: what a row's result depends on besides the series:
# the areas' tests, the tools and platforms they use, the harness, the
# guest and the kernel configuration.
fingerprint() {
	local a paths=("$TOP/tests/lib" "$TOP/tests/skip-reasons" "$TOP/tests/areas" "$TOP/tools" "$TOP/platform"
		"$S/results.py" "$S/run-tests.sh" "$S/scan-console.sh" "$S/userspace.sh" "$S/lib.sh"
		"$S/vm.sh" "$S/config.sh" "$TOP/kconfig" "$TOP/guest")
	if [ "$1" != - ]; then
		for a in ${1//,/ }; do
			paths+=("$TOP/tests/$a")
		done
	fi
	find "${paths[@]}" -type f -not -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha1sum |
		sed "s|  $TOP/|  |" | sha1sum | cut -c1-16
}

declare -A keep=() keepdate=() newkeys=()
if [ $# -gt 0 ]; then
	for num in "$@"; do
		{ [[ $num =~ ^[0-9]{4}$ ]] && cut -f1 <<<"$plan" | grep -qxF -- "$num"; } ||
			die "topic-boot.sh: $num is no topic's last patch"
		! grep -q "^$num"$'\t'".*the whole series" <<<"$plan" ||
			die "topic-boot.sh: $num is the whole series: make check runs its areas"
	done
	[ -f "$table" ] && [ "$(head -n 1 "$table" | cut -d' ' -f2)" = "$head" ] ||
		die "topic-boot.sh $*: no build/bisect/boot.md of series $head to keep the other rows of (run it without arguments)"
	printf '%s\n' "$plan" >"$table.plan"
	kept=$(while IFS=$'\t' read -r num _ areas _; do
		echo "$num $(fingerprint "$areas")"
	done <<<"$plan" | python3 "$S/topic-boot-keep.py" "$TOP" "$table" "$keys" "$(IFS=,; echo "$*")" \
		"$table.plan") || die "topic-boot.sh $*: the other rows cannot be kept (above)"
	rm -f "$table.plan"
	while IFS=$'\t' read -r num result when; do
		[ -n "$num" ] || continue
		keep[$num]=$result keepdate[$num]=$when
	done <<<"$kept"
	if [ -f "$keys" ]; then
		while read -r num fp; do
			[ -n "${keep[$num]+x}" ] && newkeys[$num]=$fp
		done <"$keys"
	fi
	for num in "$@"; do
		rm -rf "${out:?}/$num" "$out/$num".*
	done
else
	rm -rf "$out" "$table" "$keys"
fi
mkdir -p "$out"
"$S/userspace.sh" test >"$out/userspace.log" 2>&1 ||
	die "building the tests' programs failed (see $out/userspace.log)"

rows=() failed=0
while IFS=$'\t' read -r num topics areas notes lacks; do
	t0=$(date +%s)
	[ "$notes" = - ] && notes=
	if [[ $notes == *"the whole series"* ]]; then
		rows+=("| $num | $topics | — | ${notes//; /<br>} | make check |")
		continue
	fi
	if [ -n "${keep[$num]+x}" ]; then
		rows+=("| $num | $topics | ${keep[$num]} | ${notes//; /<br>} | ${keepdate[$num]} |")
		continue
	fi
	fp=$(fingerprint "$areas") || die "fingerprinting what $num runs failed"
	newkeys[$num]=$fp
	v=series-$num
	printf '>> prefix %s (%s)\n' "$num" "$topics"
	if ! { "$S/config.sh" "$v" && "$S/build.sh" "$v"; } >"$out/$num.build.log" 2>&1; then
		rows+=("| $num | $topics | **does not build** (build/bisect/boot/$num.build.log) | ${notes//; /<br>} | $today |")
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
		[ "$lacks" = - ] && lacks=
		# shellcheck disable=SC2086 # the areas, one word each
		RUN_TESTS_VARIANT=$v RUN_TESTS_OUT=$out/$num RUN_TESTS_LACKS=$lacks \
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
	rows+=("| $num | $topics | $result | ${notes//; /<br>} | $today |")
done <<<"$plan"

{
	echo "series $head $today"
	echo "| last patch | topics | result | not run here | run on |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$table.tmp"
for num in "${!newkeys[@]}"; do
	echo "$num ${newkeys[$num]}"
done | sort >"$keys.tmp"
mv "$table.tmp" "$table"
mv "$keys.tmp" "$keys"
[ $failed -eq 0 ] || die "$failed prefix(es) failed (build/bisect/boot.md)"
info "every topic's last patch boots and passes the areas it can run"
