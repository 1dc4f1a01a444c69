#!/bin/bash
# debian-vm.sh RUN PHASE KERNEL INITRD: boot the tests/debian system once.
#
# RUN is the run directory: RUN/disk.qcow2 is the copy-on-write overlay of
# the cached image (scripts/debian-image.sh) that every boot of one run
# shares, made by the first boot (the cached image is only ever read);
# RUN is also shared with the guest over virtio-9p (tag debtest), where the
# image's debian-test.service runs RUN/in/job/PHASE.sh and writes its
# streams, RUN/job-PHASE.rc and whatever the job copies out. KERNEL and
# INITRD: files on the host (scripts/debian-boot-files.sh takes them out
# of the image). QEMU TCG, 2 vCPUs, DEBIAN_VM_MEM (default 3G), no network
# device, the serial console in RUN/console-PHASE.log, killed after
# DEBIAN_VM_TIMEOUT seconds (default 1200). Exit status: QEMU's, or 124
# when it was killed.
. "$(dirname "$0")/lib.sh"

run=${1:?usage: debian-vm.sh RUN PHASE KERNEL INITRD}
phase=${2:?usage: debian-vm.sh RUN PHASE KERNEL INITRD}
kernel=${3:?usage: debian-vm.sh RUN PHASE KERNEL INITRD}
initrd=${4:?usage: debian-vm.sh RUN PHASE KERNEL INITRD}
[[ $phase =~ ^[a-z0-9-]+$ ]] || die "debian-vm.sh: bad phase name '$phase'"
[ -f "$kernel" ] || die "debian-vm.sh: no kernel at $kernel"
[ -f "$initrd" ] || die "debian-vm.sh: no initrd at $initrd"
[ -f "$run/disk.qcow2" ] || die "debian-vm.sh: no overlay $run/disk.qcow2 (tests/debian/host.sh makes it)"
timeout=${DEBIAN_VM_TIMEOUT:-1200}

case ${VM_TCG_THREAD:-} in
'' | single | multi) ;;
*) die "debian-vm.sh: VM_TCG_THREAD is single or multi, not '$VM_TCG_THREAD'" ;;
esac
accel=tcg${VM_TCG_THREAD:+,thread=$VM_TCG_THREAD}

rm -f "$run/job-$phase.rc" "$run/console-$phase.log"
t0=$(date +%s.%N)
set +e
timeout -k 10 "$timeout" nice -n 10 qemu-system-x86_64 -nodefaults -no-user-config \
	-machine pc -accel "$accel" -cpu max -smp 2 -m "${DEBIAN_VM_MEM:-3G}" \
	-display none -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 root=/dev/vda rw panic=-1 random.trust_cpu=on debtest.phase=$phase" \
	-drive "file=$run/disk.qcow2,format=qcow2,if=virtio,cache=unsafe,discard=unmap" \
	-fsdev "local,id=debtest,path=$run,security_model=none,multidevs=remap" \
	-device virtio-9p-pci,fsdev=debtest,mount_tag=debtest \
	-device virtio-rng-pci \
	-serial "file:$run/console-$phase.log" </dev/null >"$run/qemu-$phase.log" 2>&1
rc=$?
set -e
printf '%s\t%.0f\n' "$phase" "$(echo "$(date +%s.%N) - $t0" | bc)" >>"$run/boot-times.tsv"
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	printf 'error: the Debian guest (%s) hung: killed after %ss; console: %s\n' "$phase" "$timeout" "$run/console-$phase.log" >&2
	exit 124
fi
exit $rc
