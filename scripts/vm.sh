#!/bin/bash
# vm.sh [options] NAME JOB: boot a kernel built by the pipeline in QEMU,
# with the host's root filesystem read-only over virtio-9p, run the shell
# script JOB inside it (see guest/init) and return its exit status.
#
#   --variant V     kernel variant (kconfig/variants), default: test
#   --conf FILE     a suite's vm.conf: VM_CPU, VM_SMP, VM_MEM, VM_APPEND,
#                   VM_TIMEOUT, VM_KUNIT and the array VM_QEMU_ARGS; it may define
#                   the functions vm_pre RUN_DIR (host side, before QEMU
#                   starts, e.g. a platform simulator) and vm_post RUN_DIR
#                   (after QEMU ended, whatever the outcome; host-side
#                   checks write TAP lines to RUN_DIR/host.tap)
#   --interactive   serial console on this terminal, a shell instead of JOB
#
# Environment: VM_TCG_THREAD (unset: QEMU's default; single: see below),
# ACCEL=kvm (KVM instead of TCG), VM_NO_SETUP=1 (guest/init mounts with
# mount and ip, not guest-setup).
#
# Everything about the run is in build/vm/NAME: job.sh, console.log and the
# status file. A guest that hangs is killed after VM_TIMEOUT seconds and
# the run fails; so does one that ends without writing its status.
. "$(dirname "$0")/lib.sh"

variant=test conf= interactive=
while [ $# -gt 0 ]; do
	case $1 in
	--variant) variant=$2; shift 2 ;;
	--conf) conf=$2; shift 2 ;;
	--interactive) interactive=1; shift ;;
	--) shift; break ;;
	-*) die "vm.sh: unknown option $1" ;;
	*) break ;;
	esac
done
name=${1:?usage: vm.sh [options] NAME JOB}
job=${2:-}

# 512 MiB: kmemleak's scans at power-off grow with the guest's memory, not
# with what is in use: under TCG one scan took 4.7 s at 512 MiB and 6.6 s
# at 1 GiB after the same job (about 2.8 s, plus 2 s per 512 MiB).
VM_CPU=max VM_SMP=2 VM_MEM=512M VM_APPEND= VM_TIMEOUT=600
# ACPI PCI interrupt routing (_PRT) takes ~45 s to evaluate under KASAN,
# kmemleak and TCG; the BIOS routing table does the same job instantly.
# no5lvl: 4-level paging. QEMU's "max" CPU has LA57, and 6.1 then reports
# a false "KASAN: wild-memory-access" now and then at boot (one CI run in
# ~60 boots): identify_cpu() clears boot_cpu_data's capabilities before it
# reads them again, and until alternatives are patched pgtable_l5_enabled()
# tests that cleared LA57 bit, so an interrupt that takes a per-CPU lock
# in that window (addresses 0xff11... under 5-level paging) fails KASAN's
# addr_has_metadata(), computed for 4-level. With 4-level paging the
# answer cannot change.
# random.trust_cpu=on: the guest CPU's RDRAND (QEMU's, from its own
# generator, seeded from the host) seeds the kernel's random number generator at boot,
# as CONFIG_RANDOM_TRUST_CPU's default (y) has it; tinyconfig turns that
# off, and changing the option would recompile every object. Without it
# the generator became ready only 2.5-12.6 s into each VM's job, when some
# program's blocking getrandom() had the kernel gather jitter entropy,
# and in a VM where nothing blocked (tests/idmap) never: every
# getrandom(GRND_NONBLOCK) failed with EAGAIN, and libuuid (mkfs.ext4's
# UUIDs) then sleeps 8 x 125 ms per call, ~4.5 s of an idle guest for
# each of mount_setattr_test's ten ext4 fixtures.
VM_BASE_APPEND="pci=noacpi no5lvl random.trust_cpu=on"
# The built-in KUnit suites run at every boot, 1.4 s under TCG. A test
# area's VM (one with a vm.conf) runs them only if it reads them
# (RESULTS=kunit-console, tests/kunit) or sets VM_KUNIT=1; a VM without a
# vm.conf (make shell, make bisect-check's topic boots) runs them as before.
VM_KUNIT=1
[ -n "$conf" ] && VM_KUNIT=0
RESULTS=
VM_QEMU_ARGS=()
# shellcheck disable=SC1090
[ -n "$conf" ] && . "$conf"
[ "$RESULTS" = kunit-console ] && VM_KUNIT=1
[ "$VM_KUNIT" = 1 ] || VM_BASE_APPEND="$VM_BASE_APPEND kunit.enable=0"

# The guest mounts tmpfs on these (guest/fstab): a checkout below one of
# them would be hidden from the guest, and every job would fail.
case $TOP/ in
/tmp/* | /var/tmp/* | /run/* | /var/log/* | /root/* | /home/* | /mnt/*)
	die "the project is at $TOP, below a directory the guest mounts a tmpfs on (guest/fstab); clone it elsewhere, e.g. /work or /srv"
	;;
esac
kernel=$BUILD/obj-$variant/arch/x86/boot/bzImage
[ -f "$kernel" ] || die "no $variant kernel at $kernel (run: make kernel)"
run=$BUILD/vm/$name
rm -rf "$run"
mkdir -p "$run"
if [ -z "$interactive" ]; then
	[ -f "$job" ] || die "job script $job does not exist"
	cp "$job" "$run/job.sh"
fi

# TCG runs each vCPU in a host thread of its own (QEMU's default, but
# never with -icount, which the benchmarks use) unless VM_TCG_THREAD=single:
# then one host thread runs all of them in turn. scripts/run-tests.sh asks
# for single when it runs VMs side by side.
case ${VM_TCG_THREAD:-} in
'' | single | multi) ;;
*) die "vm.sh: VM_TCG_THREAD is single or multi, not '$VM_TCG_THREAD'" ;;
esac
accel=tcg${VM_TCG_THREAD:+,thread=$VM_TCG_THREAD}
# guest/init's mounts in one exec when the helper is built from the
# current guest/setup.c (scripts/userspace.sh builds it with the tools);
# VM_NO_SETUP=1 boots with mount and ip instead.
setup=$BUILD/bin/guest-setup
case ${VM_NO_SETUP:-} in
'' | 0) [ -x "$setup" ] && [ "$setup" -nt "$TOP/guest/setup.c" ] || setup= ;;
1) setup= ;;
*) die "vm.sh: VM_NO_SETUP is 1 or unset, not '$VM_NO_SETUP'" ;;
esac
# /dev/kvm exists on some machines where it hangs: KVM is opt-in.
[ "${ACCEL:-}" = kvm ] && accel=kvm
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -machine pc -accel "$accel"
	-cpu "$VM_CPU" -smp "$VM_SMP" -m "$VM_MEM" -display none -no-reboot
	-kernel "$kernel"
	-append "console=ttyS0 panic=-1 $VM_BASE_APPEND root=root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=524288,cache=loose ro init=$TOP/guest/init pl_job=$run/job.sh pl_out=$run ${setup:+pl_setup=$setup} ${interactive:+pl_interactive=1} $VM_APPEND"
	-fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
	-device virtio-9p-pci,fsdev=root,mount_tag=root
	-fsdev "local,id=out,path=$run,security_model=none,multidevs=remap"
	-device virtio-9p-pci,fsdev=out,mount_tag=out
	"${VM_QEMU_ARGS[@]}")

if declare -F vm_pre >/dev/null; then
	vm_pre "$run" || die "$name: the host side of the VM (vm_pre in $conf) failed"
fi
set +e
if [ -n "$interactive" ]; then
	"${qemu[@]}" -serial mon:stdio
	qrc=$?
else
	timeout -k 5 "$VM_TIMEOUT" "${qemu[@]}" -serial "file:$run/console.log" </dev/null >"$run/qemu.log" 2>&1
	qrc=$?
fi
set -e
if declare -F vm_post >/dev/null; then
	vm_post "$run" || printf 'error: %s: the host side of the VM (vm_post in %s) failed\n' "$name" "$conf" >&2
fi
[ -n "$interactive" ] && exit $qrc
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
	printf 'error: guest %s hung: killed after %ss; console log: %s\n' "$name" "$VM_TIMEOUT" "$run/console.log" >&2
	tail -n 15 "$run/console.log" | sed 's/^/   | /' >&2
	exit 124
fi
if [ ! -f "$run/status" ]; then
	why="ended without reporting a status"
	grep -q 'Kernel panic' "$run/console.log" && why="panicked"
	[ $qrc -ne 0 ] && why="$why (qemu exit $qrc: $(tail -n 1 "$run/qemu.log"))"
	printf 'error: guest %s %s; console log: %s\n' "$name" "$why" "$run/console.log" >&2
	tail -n 15 "$run/console.log" | sed 's/^/   | /' >&2
	exit 125
fi
exit "$(cat "$run/status")"
