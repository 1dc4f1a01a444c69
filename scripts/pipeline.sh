#!/bin/bash
# pipeline.sh run|check|shell|kernel|bench: the phases in order, each
# timed. run boots the demo, check runs every test suite, shell gives an
# interactive guest, bench runs the benchmarks.
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts

goal=${1:?usage: pipeline.sh run|check|shell|kernel|bench}
case $goal in run | check | shell | kernel | bench) ;; *) die "unknown goal '$goal'" ;; esac

t0=$(date +%s)
export PIPELINE_T0=$t0
: >"$LOGS/phase-times.tsv"
phase install "$S/deps.sh"
"$S/tree.sh"

kernel() {
	phase "config:$1" "$S/config.sh" "$1"
	phase "build:$1" "$S/build.sh" "$1"
}

case $goal in
kernel)
	kernel test
	;;
run)
	kernel test
	phase tools "$S/userspace.sh" test
	mkdir -p "$BUILD/jobs"
	printf '#!/bin/sh\nexec sh %s/guest/demo.sh host\n' "$TOP" >"$BUILD/jobs/demo.sh"
	phase demo "$S/vm.sh" demo "$BUILD/jobs/demo.sh"
	sed -n '/init: running/,/init: job exited/p' "$BUILD/vm/demo/console.log" | sed '1d;$d'
	grep -q '^demo: done' "$BUILD/vm/demo/console.log" || die "the demo did not complete"
	;;
check)
	rm -f "$BUILD/results.tap" "$BUILD/console.log"
	# The Debian 12 image tests/debian boots (scripts/debian-image.sh,
	# cached outside the clone): when it is not cached, mmdebstrap spends
	# much of its 70-100 s waiting for the archive; built here beside the
	# kernels (niced), it is ready when the tests start. tests/debian's
	# own call waits for this one and reports the image.
	# A process group of its own (setsid): should make check stop early,
	# it goes too (its scratch directory with it: debian-image.sh).
	setsid "$S/debian-image.sh" >"$LOGS/debian-image.log" 2>&1 </dev/null &
	image_pid=$!
	trap 'rc=$?; [ $rc = 0 ] || kill -TERM -- "-$image_pid" 2>/dev/null || true; wait "$image_pid" 2>/dev/null || true; exit $rc' EXIT
	kernel test
	# tests/i2c-abi compares the i2c-dev ABI with the kernel from before
	# the SMBus 3.0 patches.
	kernel abi-base
	phase tools "$S/userspace.sh" test
	# tests/debian installs the packages of the test flavour (Debian's
	# configuration, the QEMU guest's modules, no debug information, no
	# symbol versions) into a booted Debian 12: build/deb-test/, cached
	# outside the clone.
	MODULES=vm FLAVOUR=test "$S/deb.sh"
	RUN_TESTS_LACKS='' "$S/run-tests.sh"
	;;
shell)
	kernel test
	phase tools "$S/userspace.sh" test
	echo "   guest shell: exit or Ctrl-D powers off; Ctrl-A X quits QEMU"
	"$S/vm.sh" --interactive shell
	;;
bench)
	# BENCH_SUITES="mctp idmap" (default): MCTP over I2C takes minutes,
	# the idmapped-mount benchmark hours under TCG.
	for suite in ${BENCH_SUITES:-mctp idmap}; do
		case $suite in mctp | idmap) ;; *) die "unknown benchmark suite '$suite' (mctp idmap)" ;; esac
	done
	phase tools "$S/userspace.sh" bench
	for suite in ${BENCH_SUITES:-mctp idmap}; do
		case $suite in
		mctp)
			kernel bench-mctp
			"$S/run-bench-mctp.sh"
			;;
		idmap)
			kernel bench
			kernel unpatched
			"$S/run-bench.sh"
			;;
		esac
	done
	;;
esac
# make check: run-tests.sh prints the time table and the count line last.
[ "$goal" = check ] || info "total $(($(date +%s) - t0))s"
