#!/bin/bash
# run-tests.sh [AREA...]: boot one VM per test area (tests/AREA, with its
# own vm.conf) on the test kernel, run its guest.sh, then write every
# result to build/results.tap, every console to build/console.log, scan
# the consoles for kernel reports and print "N passed, N failed, N skipped"
# as the last line. Exit status 1 on any failure or report.
. "$(dirname "$0")/lib.sh"

if [ $# -gt 0 ]; then
	areas=("$@")
else
	mapfile -t areas < <(cd "$TOP/tests" && for d in */guest.sh; do dirname "$d"; done)
fi
[ ${#areas[@]} -gt 0 ] || die "no test areas found under tests/"

results=$BUILD/results.tap
rm -f "$results" "$BUILD/console.log"
flat=$(mktemp)
trap 'rm -f "$flat"' EXIT
mkdir -p "$BUILD/jobs"

for area in "${areas[@]}"; do
	dir=$TOP/tests/$area
	[ -f "$dir/guest.sh" ] || die "tests/$area has no guest.sh"
	run=$BUILD/vm/$area
	job=$BUILD/jobs/$area.sh
	cat >"$job" <<JOB
#!/bin/sh
export TOP='$TOP' TREE='$TREE' T_BIN='$BUILD/tests/$area' T_OUT='$run' PATH='$BUILD/bin':\$PATH
cd '$dir' && sh ./guest.sh >'$run/results.tap' 2>'$run/stderr.log'
JOB
	conf=()
	[ -f "$dir/vm.conf" ] && conf=(--conf "$dir/vm.conf")
	if phase "test:$area" "$TOP/scripts/vm.sh" "${conf[@]}" "$area" "$job"; then
		echo "ok - $area: guest booted, ran its suite and powered off" >>"$flat"
	else
		echo "not ok - $area: guest booted, ran its suite and powered off" >>"$flat"
		[ -s "$run/stderr.log" ] && tail -n 5 "$run/stderr.log" | sed 's/^/   | /'
	fi
	if "$TOP/scripts/scan-console.sh" "$run/console.log"; then
		echo "ok - $area: console free of kernel reports (BUG/WARNING/KASAN/kmemleak/lockdep)" >>"$flat"
	else
		echo "not ok - $area: console free of kernel reports (BUG/WARNING/KASAN/kmemleak/lockdep)" >>"$flat"
	fi
	if grep -qs '^RESULTS=kunit-console' "$dir/vm.conf"; then
		python3 "$TOP/scripts/results.py" kunit "$area" "$run/console.log" >>"$flat"
	else
		python3 "$TOP/scripts/results.py" tap "$area" "$run/results.tap" >>"$flat"
	fi
	# Checks the area's vm_post made on the host (vm.conf), if any.
	if [ -f "$run/host.tap" ]; then
		python3 "$TOP/scripts/results.py" tap "$area" "$run/host.tap" >>"$flat"
	fi
	{
		echo "===== $area ====="
		cat "$run/console.log" 2>/dev/null
	} >>"$BUILD/console.log"
done

# Numbered TAP, then the counts.
{
	echo "TAP version 13"
	echo "1..$(wc -l <"$flat")"
	awk '{ sub(/^(not ok|ok) -/, ($1 == "not" ? "not ok " : "ok ") NR " -"); print }' "$flat"
} >"$results"

grep '^not ok' "$results" | sed 's/^/   FAIL: /' || true

skipped=$(grep -c '^ok .*# SKIP' "$results" || true)
passed=$(($(grep -c '^ok ' "$results" || true) - skipped))
failed=$(grep -c '^not ok ' "$results" || true)
info "results: $results; consoles: $BUILD/console.log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
