#!/bin/bash
# run-bench-mctp.sh: MCTP over I2C throughput (bench/mctp_bench.py) on the
# bench-mctp kernel (no debugging): messages/s and bytes/s for MTU 68 and
# 254 at each simulated bus clock of i2c-crosswire, then the table and
# build/bench-mctp.json (scripts/bench-mctp-report.py).
#
#   MCTP_CLOCKS=100000,400000,1000000  MCTP_SIZES=64,4096  MCTP_REPS=5
#   MCTP_COUNT=5  BENCH_CLOCK=icount|wall
#
# With BENCH_CLOCK=icount (the default under TCG, as for run-bench.sh)
# guest time is 1 ns per instruction plus the time the guest sleeps, and
# i2c-crosswire sleeps for as long as each transfer's bits take at the
# simulated clock: figures are deterministic, CPU cost and bus time
# together.
. "$(dirname "$0")/lib.sh"
# Benchmarks run one VM with QEMU's own choice of TCG threads (one under
# -icount, which refuses thread=multi): never one a test run left behind.
unset VM_TCG_THREAD

CLOCK=${BENCH_CLOCK:-icount}
[ "${ACCEL:-tcg}" = kvm ] && CLOCK=wall
case $CLOCK in icount | wall) ;; *) die "BENCH_CLOCK=$CLOCK: expected icount or wall" ;; esac
for v in "${MCTP_CLOCKS:-}" "${MCTP_SIZES:-}"; do
	[[ $v =~ ^([0-9]+(,[0-9]+)*)?$ ]] || die "'$v': expected N1,N2,..."
done
[ -x "$BUILD/bin/mctp-echo" ] || die "$BUILD/bin/mctp-echo is missing (scripts/userspace.sh builds it)"

name=bench-mctp
conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
echo 'VM_TIMEOUT=3600' >"$conf"
[ "$CLOCK" = icount ] && printf '%s\n' 'VM_SMP=1' 'VM_QEMU_ARGS=(-icount shift=0,sleep=off)' >>"$conf"
mkdir -p "$BUILD/jobs"
job=$BUILD/jobs/$name.sh
cat >"$job" <<JOB
#!/bin/sh
export TOP='$TOP' KOBJ='$BUILD/obj-bench-mctp'
export MCTP_CLOCKS='${MCTP_CLOCKS:-100000,400000,1000000}' MCTP_SIZES='${MCTP_SIZES:-64,4096}'
export MCTP_REPS='${MCTP_REPS:-5}' MCTP_COUNT='${MCTP_COUNT:-5}'
echo "accel=${ACCEL:-tcg} clock=$CLOCK kernel=\$(uname -r)" >'$BUILD/vm/$name/machine.txt'
/usr/bin/python3 '$TOP/bench/mctp_bench.py' >'$BUILD/vm/$name/bench.jsonl'
JOB
phase "bench:$name" "$TOP/scripts/vm.sh" --variant bench-mctp --conf "$conf" "$name" "$job"
python3 "$TOP/scripts/bench-mctp-report.py" "$BUILD" "$BUILD/vm/$name/bench.jsonl" "$BUILD/vm/$name/machine.txt"
