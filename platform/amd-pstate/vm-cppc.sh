# vm-cppc.sh: sourced by a suite's vm.conf (scripts/vm.sh) to boot the
# guest on the emulated CPPC platform:
#
#   CPPC_SSDT=1|pss|0   the SSDT built from cppc.conf: 1 gives the CPUs a
#                   _CPC and P-states (_PCT, _PSS), pss the P-states only,
#                   0 none; with P-states, QEMU's pc-testdev decodes their
#                   register (cppc.conf PSS_PORT)
#   CPPC_SIM=1|0    run the host-side simulator (tools/cppc-sim) next to QEMU
#   CPPC_MODE=passive|disable   amd_pstate= on the command line (default
#                   passive, the only value that loads 6.1's driver; with
#                   disable vm_post expects ENABLE never to have been set)
#
# The guest's RAM lives in a shared file (memory-backend-file, share=on) so
# that the simulator can reach the register region; memmap= reserves that
# region in the guest so that cppc_acpi can ioremap it; amd_pstate=passive
# is what 6.1's driver needs to load at all. vm_post stops the simulator,
# checks what only the host can see (ENABLE after power-off) and plots the
# timeline.
# shellcheck shell=bash

CPPC_DIR=$TOP/platform/amd-pstate
CPPC_CONF=$CPPC_DIR/cppc.conf
CPPC_SSDT=${CPPC_SSDT:-1}
CPPC_SIM=${CPPC_SIM:-1}
CPPC_MODE=${CPPC_MODE:-passive}
# EPYC-Rome, family 17h model 31h: cppc_acpi accepts SystemMemory
# registers on it without an _OSC (cpc_supported_by_cpu(): 17h models
# 30h-7fh), and amd_get_highest_perf() caps it at 166, below cppc.conf's
# _CPC highest, so that the driver's min(_CPC, cap) is seen at work.
VM_CPU=${CPPC_CPU:-EPYC-Rome}
# shellcheck disable=SC1090
. "$CPPC_CONF"
# The boot's initcall_finish events stay in the trace buffer: the tests
# read which cpufreq driver's initcall returned what (amd-pstate's
# device_initcall, then acpi-cpufreq's late_initcall). trace_clock=global:
# under TCG sched_clock is unstable, and late_trace_init() would switch to
# the global clock itself, which empties the buffer.
VM_APPEND="$VM_APPEND amd_pstate=$CPPC_MODE memmap=$((CPPC_SIZE))\$$CPPC_BASE"
VM_APPEND="$VM_APPEND trace_event=initcall:initcall_finish trace_clock=global"
cppc_ram=/dev/shm/pl-cppc-$$.ram
VM_QEMU_ARGS+=(-object "memory-backend-file,id=ram,share=on,mem-path=$cppc_ram,size=$VM_MEM"
	-machine memory-backend=ram)
case $CPPC_SSDT in
1 | pss)
	cppc_aml=$BUILD/platform/amd-pstate/ssdt-$([ "$CPPC_SSDT" = 1 ] && echo cppc || echo pss)-$VM_SMP.aml
	[ -f "$cppc_aml" ] || die "no SSDT for $VM_SMP CPUs at $cppc_aml (platform/amd-pstate/Makefile CPUS)"
	VM_QEMU_ARGS+=(-acpitable "file=$cppc_aml" -device pc-testdev)
	;;
0) ;;
*) die "CPPC_SSDT=$CPPC_SSDT: 1, pss or 0" ;;
esac

vm_pre() {
	local run=$1
	rm -f "$cppc_ram"
	[ "$CPPC_SIM" = 1 ] || return 0
	[ -x "$BUILD/bin/cppc-sim" ] || die "$BUILD/bin/cppc-sim is missing (scripts/userspace.sh builds it)"
	"$BUILD/bin/cppc-sim" --conf="$CPPC_CONF" --mem="$cppc_ram" --cpus="$VM_SMP" \
		--timeline="$run/cppc-timeline.txt" >"$run/cppc-sim.log" 2>&1 &
	cppc_sim_pid=$!
}

vm_post() {
	local run=$1 n=0 rc=0
	if [ "$CPPC_SIM" = 1 ]; then
		kill -TERM "$cppc_sim_pid" 2>/dev/null
		wait "$cppc_sim_pid" || rc=$?
	fi
	rm -f "$cppc_ram"
	tap() { # OK DESCRIPTION
		n=$((n + 1))
		if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi >>"$run/host.tap"
	}
	if [ "$CPPC_SIM" != 1 ]; then
		# The other half of "no simulator": a simulator with no guest.
		local out
		out=$("$BUILD/bin/cppc-sim" --conf="$CPPC_CONF" --mem="$run/no-guest.ram" \
			--cpus="$VM_SMP" --wait=1 2>&1)
		rc=$?
		echo "$out" >"$run/cppc-sim-no-guest.log"
		tap "$([ $rc = 1 ] && [[ $out == *"no guest: "* ]] && echo 0 || echo 1)" \
			"host: a simulator started without a guest fails with a clear message (exit $rc: $out)"
		return 0
	fi
	tap "$rc" "host: the simulator ran next to the guest and stopped cleanly (exit $rc)"
	local finals
	finals=$(grep -c '^# final cpu=' "$run/cppc-timeline.txt" 2>/dev/null || true)
	tap "$([ "$finals" = "$VM_SMP" ] && echo 0 || echo 1)" \
		"host: the timeline has a final state for each of the $VM_SMP CPUs ($finals)"
	# Enabled at boot (seen here at least once) and disabled at power-off
	# (cpufreq's syscore shutdown suspends the driver: ENABLE := 0).
	local bad
	bad=$(grep '^# final cpu=' "$run/cppc-timeline.txt" 2>/dev/null |
		grep -v ' enable=0 ' | grep -o 'cpu=[0-9]*' | tr '\n' ' ')
	tap "$([ -z "$bad" ] && [ "$finals" = "$VM_SMP" ] && echo 0 || echo 1)" \
		"host: CPPC ENABLE is 0 on every CPU after the guest powered off${bad:+ (still 1: $bad)}"
	if [ "$CPPC_MODE" = passive ]; then
		bad=$(grep '^# final cpu=' "$run/cppc-timeline.txt" 2>/dev/null |
			grep ' enabled=0 ' | grep -o 'cpu=[0-9]*' | tr '\n' ' ')
		tap "$([ -z "$bad" ] && [ "$finals" = "$VM_SMP" ] && echo 0 || echo 1)" \
			"host: CPPC ENABLE was set on every CPU during the run${bad:+ (never: $bad)}"
	else
		# amd_pstate=$CPPC_MODE: the driver never loads, so nothing calls
		# cppc_set_enable() (amd-pstate.c amd_pstate_init()).
		bad=$(grep '^# final cpu=' "$run/cppc-timeline.txt" 2>/dev/null |
			grep -v ' enabled=0 ' | grep -o 'cpu=[0-9]*' | tr '\n' ' ')
		tap "$([ -z "$bad" ] && [ "$finals" = "$VM_SMP" ] && echo 0 || echo 1)" \
			"host: amd_pstate=$CPPC_MODE: CPPC ENABLE was never set during the run${bad:+ (set on: $bad)}"
		return 0
	fi
	bad=$(grep '^# final cpu=' "$run/cppc-timeline.txt" 2>/dev/null |
		grep -v ' out_of_range=0' | grep -o 'cpu=[0-9]*' | tr '\n' ' ')
	tap "$([ -z "$bad" ] && [ "$finals" = "$VM_SMP" ] && echo 0 || echo 1)" \
		"host: DESIRED never held a value outside [lowest, highest]${bad:+ (out of range on $bad)}"
	if command -v gnuplot >/dev/null; then
		# The window the guest ran its load/idle cycles under schedutil in.
		local from=0 to=0 what="whole run"
		[ -f "$run/cppc-window" ] && read -r from to what <"$run/cppc-window"
		gnuplot -e "timeline='$run/cppc-timeline.txt'; out='$run/cppc-timeline.png'; ncpus=$VM_SMP; t0=$from; t1=$to; what='$what'" \
			"$CPPC_DIR/timeline.gp" >"$run/gnuplot.log" 2>&1
		tap "$?" "host: the timeline plots ($run/cppc-timeline.png)"
	fi
	return 0
}
