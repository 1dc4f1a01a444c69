#!/bin/bash
# fake-vm.sh: scripts/vm.sh's stand-in for the harness self-test
# (RUN_TESTS_VM): the same arguments and run directory
# ($BUILD/vm/NAME: job.sh, console.log, status), the same hooks (vm_pre,
# vm_post), the same exit status, but the job runs on the host, no QEMU.
# A fixture area's vm.conf may set:
#   FAKE_CONSOLE=FILE    the console log (a file of the area), else a clean
#                        one (kmemleak's scans as guest/init makes them);
#                        "none": no console log; "empty": an empty one
#   FAKE_STATUS=none     no status file, as when the guest panics
#   FAKE_TIMEOUT=S       the job is killed after S seconds, as vm.sh kills
#                        a hung guest after VM_TIMEOUT: no status file,
#                        exit status 124
# and in the environment FAKE_VM_DIE=NAME makes the run of NAME stop
# before it clears its run directory, as vm.sh does without a kernel.
# Each run appends "NAME VM_TCG_THREAD" (or "unset") to $BUILD/tcg-threads.
. "$(dirname "$0")/../../scripts/lib.sh"

conf=
while [ $# -gt 0 ]; do
	case $1 in
	--variant) shift 2 ;;
	--conf) conf=$2; shift 2 ;;
	*) break ;;
	esac
done
name=${1:?usage: fake-vm.sh [--variant V] [--conf FILE] NAME JOB}
job=$2
FAKE_CONSOLE= FAKE_STATUS= FAKE_TIMEOUT=
# shellcheck disable=SC1090
[ -n "$conf" ] && . "$conf"
[ "${FAKE_VM_DIE:-}" = "$name" ] && die "no test kernel (fake: FAKE_VM_DIE)"
# How QEMU would have been told to run the vCPUs (scripts/run-tests.sh).
echo "$name ${VM_TCG_THREAD-unset}" >>"$BUILD/tcg-threads"

run=$BUILD/vm/$name
rm -rf "$run"
mkdir -p "$run"
cp "$job" "$run/job.sh"
if declare -F vm_pre >/dev/null; then
	vm_pre "$run" || die "$name: vm_pre failed"
fi
set +e
if [ -n "$FAKE_TIMEOUT" ]; then
	timeout -k 1 "$FAKE_TIMEOUT" sh "$run/job.sh" </dev/null
else
	sh "$run/job.sh" </dev/null
fi
rc=$?
set -e
hung=
if [ -n "$FAKE_TIMEOUT" ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
	# A hung guest: killed, it writes no status, its console ends in the job.
	hung=1 FAKE_STATUS=none
	printf '%s\n' '[    0.000000] Linux version 6.1.192 (fake)' \
		"[    1.000000] init: running $run/job.sh" >"$run/console.log"
	FAKE_CONSOLE=none
fi
area=$(dirname "$conf")
case $FAKE_CONSOLE in
none) ;;
empty) : >"$run/console.log" ;;
'') printf '%s\n' '[    0.000000] Linux version 6.1.192 (fake)' \
	'[    0.500000] kmemleak: Kernel memory leak detector initialized (mem pool available: 14661)' \
	"[    1.000000] init: running $run/job.sh" "[    2.000000] init: job exited with status $rc" \
	'[    2.010000] init: kmemleak scan' '[    8.000000] init: kmemleak second scan' \
	'[   12.500000] init: kmemleak scan done' '[   12.600000] init: powering off' >"$run/console.log" ;;
*) cp "$area/$FAKE_CONSOLE" "$run/console.log" ;;
esac
[ "$FAKE_STATUS" = none ] || echo "$rc" >"$run/status"
if declare -F vm_post >/dev/null; then
	vm_post "$run" || true
fi
[ -z "$hung" ] || exit 124 # as vm.sh exits for a guest it killed
[ -f "$run/status" ] || exit 125
exit "$(cat "$run/status")"
