#!/bin/bash
# run-bench.sh: run idmap-bench in two guests, the patched kernel (every
# configuration) and the unpatched baseline (plain tmpfs, for the cost of
# the series where no idmapped mount is used), then write the table,
# build/bench.json and the charts (scripts/bench-report.py).
#
#   BENCH_N=100000  BENCH_REPS=5  BENCH_VIEW=1000,10000,100000,1000000
#   BENCH_CONFIGS="plain idmapped nested bindfs ramfs view"
#   BENCH_CLOCK=icount|wall  BENCH_LAYOUT=both|flat|tree
#
# BENCH_CLOCK=icount (the default under TCG) runs QEMU with
# -icount shift=0,sleep=off and one vCPU (APs do not come up in that
# mode): guest time advances by 1 ns per guest
# instruction, so CLOCK_MONOTONIC in the guest counts the instructions the
# workload executed (kernel and user space, FUSE daemon included). That is
# deterministic and immune to the host's load, which the 2-10% targets
# need; it does not model caches or I/O. BENCH_CLOCK=wall measures TCG
# wall-clock time instead (noisy: +-30% run to run on this machine).
. "$(dirname "$0")/lib.sh"
# Benchmarks run one VM with QEMU's own choice of TCG threads (one under
# -icount, which refuses thread=multi): never one a test run left behind.
unset VM_TCG_THREAD

N=${BENCH_N:-100000}
REPS=${BENCH_REPS:-5}
VIEW=${BENCH_VIEW:-1000,10000,100000,1000000}
CLOCK=${BENCH_CLOCK:-icount}
LAYOUT=${BENCH_LAYOUT:-both}
[ "${ACCEL:-tcg}" = kvm ] && CLOCK=wall
case $CLOCK in icount | wall) ;; *) die "BENCH_CLOCK=$CLOCK: expected icount or wall" ;; esac
CONFIGS=${BENCH_CONFIGS:-plain idmapped nested bindfs ramfs view}
bin=$BUILD/tests/bench/idmap-bench
[ -x "$bin" ] || die "$bin is missing (scripts/userspace.sh builds it)"
# Validate the arguments on the host before booting anything.
"$bin" --n="$N" --reps="$REPS" --view="$VIEW" --layout="$LAYOUT" --help >/dev/null
for c in $CONFIGS; do
	case $c in plain | idmapped | nested | bindfs | ramfs | view) ;;
	*) die "unknown benchmark configuration '$c' (plain idmapped nested bindfs ramfs view)" ;;
	esac
done

conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
cat >"$conf" <<CONF
# 1,000,000 files twice (tree and its copy) need a few GiB of tmpfs.
# Under icount bindfs at N=100,000 alone takes ~50 min per layout: the
# timeout only catches a hung guest.
VM_MEM=6G
VM_TIMEOUT=21600
CONF
[ "$CLOCK" = icount ] && printf '%s\n' 'VM_SMP=1' 'VM_QEMU_ARGS=(-icount shift=0,sleep=off)' >>"$conf"

bench_vm() { # NAME VARIANT CONFIGS...
	local name=$1 variant=$2 job=$BUILD/jobs/$1.sh
	shift 2
	mkdir -p "$BUILD/jobs"
	cat >"$job" <<JOB
#!/bin/sh
echo "accel=${ACCEL:-tcg} clock=$CLOCK kernel=\$(uname -r) cpus=\$(nproc) cpu=\$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)" >'$BUILD/vm/$name/machine.txt'
'$bin' --n=$N --reps=$REPS --view=$VIEW --layout=$LAYOUT $* >'$BUILD/vm/$name/bench.jsonl'
JOB
	phase "bench:$name" "$TOP/scripts/vm.sh" --variant "$variant" --conf "$conf" "$name" "$job"
}

bench_vm bench-patched bench $CONFIGS
bench_vm bench-unpatched unpatched plain idmapped
python3 "$TOP/scripts/bench-report.py" "$BUILD" \
	"$BUILD/vm/bench-patched/bench.jsonl" "$BUILD/vm/bench-unpatched/bench.jsonl"
