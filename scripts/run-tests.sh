#!/bin/bash
# run-tests.sh [-j N] [AREA...]: run the test areas (default: every
# area tests/areas declares), N side by side (default
# RUN_TESTS_JOBS, else 2), longest first. A guest area boots its own VM on
# the test kernel (scripts/vm.sh, tests/AREA/vm.conf) and runs guest.sh; a
# host area (host.sh) runs on the host, no VM. scripts/results.py checks
# each area: its VM's status and console, every program's stream on its
# own, the count against tests/AREA/expected. Then build/results.tap holds
# every result, build/console.log every console, and the output ends with
# one line per area, a time table and, last,
# "N passed, N failed, N skipped". Exit status 1 on any failure. The
# declaration tests/areas is checked on every run (its own result,
# "areas: ..."): a declared area without its guest.sh/host.sh or expected,
# or an area there but not declared, fails the run.
#
# Environment: RUN_TESTS_JOBS (lanes), VM_TCG_THREAD (by default single for
# a VM that runs beside another, see below), RUN_TESTS_VARIANT (kernel variant,
# default test), RUN_TESTS_OUT (directory for results.tap, console.log and
# the areas' run directories, default build/), RUN_TESTS_LACKS (the
# patches the kernel lacks, NNNN,...: only scripts/topic-boot.sh sets it,
# for a prefix of the series; the guest sees it as T_LACKS, and a test of
# such a patch skips, see scripts/results.py).
#
# For the harness self-test (tests/harness) only, two options: --self-test-
# areas=DIR (the areas, in place of tests/) and --self-test-vm=PROG (a
# stand-in for scripts/vm.sh). They are options, not environment
# variables, so that nothing a caller's environment holds can point make
# check at other areas or another VM; the variables they replaced,
# RUN_TESTS_DIR and RUN_TESTS_VM, fail the run when set.
. "$(dirname "$0")/lib.sh"

for v in RUN_TESTS_DIR RUN_TESTS_VM; do
	[ -z "${!v+set}" ] ||
		die "$v is set in the environment (${!v}): run-tests.sh runs tests/ on scripts/vm.sh; only the harness self-test redirects them, with --self-test-areas/--self-test-vm"
done
lanes=${RUN_TESTS_JOBS:-2}
args=()
self_dir= self_vm=
while [ $# -gt 0 ]; do
	case $1 in
	--self-test-areas=*) self_dir=${1#*=}; shift ;;
	--self-test-vm=*) self_vm=${1#*=}; shift ;;
	-j) lanes=${2:-}; shift 2 || shift ;;
	-j*) lanes=${1#-j}; shift ;;
	--jobs=*) lanes=${1#--jobs=}; shift ;;
	-h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) die "run-tests.sh: unknown option $1 (usage: run-tests.sh [-j N] [AREA...])" ;;
	*) args+=("$1"); shift ;;
	esac
done
[[ $lanes =~ ^[1-9][0-9]*$ ]] || die "run-tests.sh: -j wants a number of lanes, not '$lanes'"
# A VM started while another runs or is about to (more than one lane, and
# another area running or queued) runs its vCPUs in one host thread
# (VM_TCG_THREAD=single, scripts/vm.sh): two VMs of two vCPUs each in four
# threads on a 2-core host spin away whole time slices on a lock or an IPI
# whose holder's thread is waiting for a core (measured: docs/harness.md,
# "Two VMs side by side"). A VM started alone keeps QEMU's default, a
# thread per vCPU. A VM_TCG_THREAD set by the caller is used as it is.
tcg_thread_given=${VM_TCG_THREAD+1}

TESTS=${self_dir:-$TOP/tests}
VM_SH=${self_vm:-$TOP/scripts/vm.sh}
VARIANT=${RUN_TESTS_VARIANT:-test}
LACKS=${RUN_TESTS_LACKS:-}
[[ -z $LACKS || $LACKS =~ ^[0-9]{4}(,[0-9]{4})*$ ]] ||
	die "RUN_TESTS_LACKS wants patch numbers NNNN,NNNN,..., not '$LACKS'"
# On the real areas, a kernel lacks patches only as a prefix of the series
# (variant series-NNNN), and then exactly the patches after NNNN: a stray
# RUN_TESTS_LACKS can never turn make check's failures into skips.
if [ -n "$LACKS" ] && [ -z "$self_dir" ]; then
	[[ $VARIANT =~ ^series-([0-9]{4})$ ]] ||
		die "RUN_TESTS_LACKS is only for a prefix of the series (RUN_TESTS_VARIANT=series-NNNN), not variant $VARIANT"
	# The same parser as make outgoing's and topic-boot-plan.py's.
	after=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from outgoing import read_series
s = [l.split("-", 1)[0] for l in read_series(sys.argv[2])]
print(",".join(s[s.index(sys.argv[3]) + 1:]) if sys.argv[3] in s else "")' \
		"$TOP/scripts" "$TOP/patches/series" "${BASH_REMATCH[1]}") ||
		die "reading patches/series failed"
	[ "$LACKS" = "$after" ] ||
		die "RUN_TESTS_LACKS=$LACKS, but variant $VARIANT lacks the patches after it: ${after:-none}"
fi
OUT=${RUN_TESTS_OUT:-$BUILD}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RUNS=$OUT/vm
RESULTS=$TOP/scripts/results.py
declared=()

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-tests.XXXXXX")
mkdir -p "$tmp/jobs"
declare -A area_of=()
cleanup() {
	local pid
	# Each lane is a process group of its own (set -m below): its VM goes too.
	for pid in "${!area_of[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The declared areas (tests/areas), each with its kind; the check of the
# declaration goes into the report as a result of its own.
declare -A kind=()
python3 "$RESULTS" areas --tests "$TESTS" --out "$tmp/areas.json" >"$tmp/areas" ||
	die "checking $TESTS/areas failed"
# A manual area is a host area that runs only when named (tests/areas).
while read -r a k; do
	if [ "$k" = manual ]; then
		kind[$a]=host
		continue
	fi
	kind[$a]=$k
	declared+=("$a")
done <"$tmp/areas"
if [ ${#args[@]} -gt 0 ]; then
	areas=()
	for a in "${args[@]}"; do
		a=${a%/}
		[ -n "${kind[$a]:-}" ] || die "tests/$a is not an area tests/areas declares"
		printf '%s\n' "${areas[@]}" | grep -qxF -- "$a" || areas+=("$a")
	done
else
	areas=("${declared[@]}")
fi
[ ${#areas[@]} -gt 0 ] || die "no test areas declared in $TESTS/areas"

# The name scripts/vm.sh gets: its runs live in $BUILD/vm/NAME.
vm_name() {
	if [ "$RUNS" = "$BUILD/vm" ]; then
		echo "$1"
	else
		realpath -m --relative-to="$BUILD/vm" "$RUNS/$1"
	fi
}

# Nothing from an earlier run may be read: the combined files go first,
# each area's run directory when the area starts.
rm -f "$OUT/results.tap" "$OUT/console.log"

host_area() { # AREA RUN: tests/AREA/host.sh on the host, streams in RUN
	(cd "$TESTS/$1" && T_OUT=$2 T_STREAMS=1 T_LACKS=$LACKS TOP=$TOP sh ./host.sh) >"$2/guest.log" 2>&1 </dev/null
}

# run_area AREA: in a lane (a background subshell); writes $tmp/AREA.json.
run_area() {
	local area=$1 dir=$TESTS/$1 run=$RUNS/$1 t0 since rc=0 secs job conf host=
	t0=$(date +%s.%N)
	# Files are stamped with the kernel's coarse clock: "since" comes
	# from a file stamped the same way, before the run directory goes.
	: >"$tmp/$area.start"
	since=$(stat -c %.9Y "$tmp/$area.start")
	rm -rf "$run"
	mkdir -p "$run"
	if [ "${kind[$area]}" = host ]; then
		host=--host
		phase "test:$area" host_area "$area" "$run" || rc=$?
	else
		job=$tmp/jobs/$area.sh
		cat >"$job" <<JOB
#!/bin/sh
export TOP='$TOP' TREE='$TREE' T_BIN='$BUILD/tests/$area' T_OUT='$run' T_STREAMS=1 T_LACKS='$LACKS' KOBJ='$BUILD/obj-$VARIANT' PATH='$BUILD/bin':\$PATH
cd '$dir' && sh ./guest.sh >'$run/guest.log' 2>&1
JOB
		conf=(--variant "$VARIANT")
		[ -f "$dir/vm.conf" ] && conf+=(--conf "$dir/vm.conf")
		phase "test:$area" "$VM_SH" "${conf[@]}" "$(vm_name "$area")" "$job" || rc=$?
	fi
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
	python3 "$RESULTS" area "$area" --tests "$TESTS" --run "$run" --vm-rc "$rc" \
		--since "$since" --seconds "$secs" --lacks "$LACKS" $host --out "$tmp/$area.json"
}

# Longest first: the last measured time of each area, else a guess.
# (A fresh clone has no build/logs/area-times.tsv: these are the areas'
# times in a warm fresh clone's make check of 2026-12-07, 1738046.)
declare -A weight=([debian]=444 [tc]=439 [ovs]=307 [tc-lifetime]=137 [runtimes]=135 [i2c-abi]=122
	[debian-config]=122 [idmap]=121 [mctp]=109 [pstate]=79 [pstate-nocpc]=67 [harness]=65
	[idmap-ext4]=63 [outgoing]=49 [kunit]=32)
if [ -f "$LOGS/area-times.tsv" ]; then
	while IFS=$'\t' read -r a s; do
		[[ $s =~ ^[0-9]+ ]] && weight[$a]=${BASH_REMATCH[0]}
	done <"$LOGS/area-times.tsv"
fi
mapfile -t queue < <(for i in "${!areas[@]}"; do
	printf '%s\t%s\t%s\n' "${weight[${areas[$i]}]:-60}" "$i" "${areas[$i]}"
done | sort -t $'\t' -k1,1nr -k2,2n | cut -f3)

echo ">> tests: ${#areas[@]} area(s) in $lanes lane(s): ${queue[*]}"
t_all=$(date +%s.%N)
set -m
running=0
while [ ${#queue[@]} -gt 0 ] || [ $running -gt 0 ]; do
	while [ $running -lt "$lanes" ] && [ ${#queue[@]} -gt 0 ]; do
		a=${queue[0]}
		queue=("${queue[@]:1}")
		if [ -z "$tcg_thread_given" ]; then
			if [ "$lanes" -gt 1 ] && { [ $running -gt 0 ] || [ ${#queue[@]} -gt 0 ]; }; then
				export VM_TCG_THREAD=single
			else
				unset VM_TCG_THREAD
			fi
		fi
		(run_area "$a") >"$tmp/$a.log" 2>&1 &
		area_of[$!]=$a
		running=$((running + 1))
		printf '>> test:%s started\n' "$a"
	done
	pid=
	wait -n -p pid || true
	[ -n "$pid" ] || continue
	[ -n "${area_of[$pid]:-}" ] || continue
	a=${area_of[$pid]}
	unset "area_of[$pid]"
	running=$((running - 1))
	# The area's own output, in one block.
	grep -v '^>> test:' "$tmp/$a.log" || true
	if [ -f "$tmp/$a.json" ]; then
		python3 "$RESULTS" summary "$tmp/$a.json"
	else
		echo "   error: $a: its results were not collected (see above)"
	fi
done
set +m
wall=$(echo "$(date +%s.%N) - $t_all" | bc)

# Remember each area's time for the next run's order.
{
	[ -f "$LOGS/area-times.tsv" ] && cat "$LOGS/area-times.tsv"
	for a in "${areas[@]}"; do
		[ -f "$tmp/$a.json" ] || continue
		python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("%s\t%.0f" % (d["area"], d["seconds"] or 0))' "$tmp/$a.json" || true
	done
} | awk -F '\t' '{ t[$1] = $2; if (!($1 in o)) o[$1] = n++ } END { for (a in t) print o[a] "\t" a "\t" t[a] }' |
	sort -n | cut -f2- >"$tmp/area-times.tsv" && mv "$tmp/area-times.tsv" "$LOGS/area-times.tsv"

# The phases before the tests count in the time table when make check
# (scripts/pipeline.sh, which empties phase-times.tsv first) runs us.
times=() total=()
if [ -n "${PIPELINE_T0:-}" ] || ps -o args= -p "$PPID" 2>/dev/null | grep -q 'pipeline\.sh'; then
	times=(--times "$LOGS/phase-times.tsv")
	[ -n "${PIPELINE_T0:-}" ] && total=(--total "$(($(date +%s) - PIPELINE_T0))")
fi
files=("$tmp/areas.json")
for a in "${areas[@]}"; do
	files+=("$tmp/$a.json")
done
info "results: $OUT/results.tap; consoles: $OUT/console.log"
python3 "$RESULTS" report --tap "$OUT/results.tap" --console "$OUT/console.log" --runs "$RUNS" \
	--wall "$wall" --lanes "$lanes" "${times[@]}" "${total[@]}" "${files[@]}"
