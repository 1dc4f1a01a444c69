#!/bin/bash
# run-bench.sh: run idmap-bench in two guests, the patched kernel (every
# configuration) and the unpatched baseline (plain tmpfs, for the cost of
# the series where no idmapped mount is used), then write the table,
# build/bench.json and the charts (scripts/bench-report.py).
#
#   BENCH_N=100000  BENCH_REPS=5  BENCH_VIEW=1000,10000,100000,1000000
#   BENCH_CONFIGS="plain idmapped nested bindfs ramfs view"
. "$(dirname "$0")/lib.sh"

N=${BENCH_N:-100000}
REPS=${BENCH_REPS:-5}
VIEW=${BENCH_VIEW:-1000,10000,100000,1000000}
CONFIGS=${BENCH_CONFIGS:-plain idmapped nested bindfs ramfs view}
bin=$BUILD/tests/bench/idmap-bench
[ -x "$bin" ] || die "$bin is missing (scripts/userspace.sh builds it)"
# Validate the arguments on the host before booting anything.
"$bin" --n="$N" --reps="$REPS" --view="$VIEW" --help >/dev/null
for c in $CONFIGS; do
	case $c in plain | idmapped | nested | bindfs | ramfs | view) ;;
	*) die "unknown benchmark configuration '$c' (plain idmapped nested bindfs ramfs view)" ;;
	esac
done

conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
cat >"$conf" <<CONF
# 1,000,000 files twice (tree and its copy) need a few GiB of tmpfs.
VM_MEM=6G
VM_TIMEOUT=5400
CONF

bench_vm() { # NAME VARIANT CONFIGS...
	local name=$1 variant=$2 job=$BUILD/jobs/$1.sh
	shift 2
	mkdir -p "$BUILD/jobs"
	cat >"$job" <<JOB
#!/bin/sh
echo "accel=${ACCEL:-tcg} kernel=\$(uname -r) cpus=\$(nproc) cpu=\$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)" >'$BUILD/vm/$name/machine.txt'
'$bin' --n=$N --reps=$REPS --view=$VIEW $* >'$BUILD/vm/$name/bench.jsonl'
JOB
	phase "bench:$name" "$TOP/scripts/vm.sh" --variant "$variant" --conf "$conf" "$name" "$job"
}

bench_vm bench-patched bench $CONFIGS
bench_vm bench-unpatched unpatched plain idmapped
python3 "$TOP/scripts/bench-report.py" "$BUILD" \
	"$BUILD/vm/bench-patched/bench.jsonl" "$BUILD/vm/bench-unpatched/bench.jsonl"
