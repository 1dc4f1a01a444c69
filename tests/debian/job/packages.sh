#!/bin/bash
# tests/debian/job/packages.sh: our packages ($IN/debs) installed into the
# booted Debian system with apt, as the README says (their maintainer
# scripts run; initramfs-tools builds the initrd), then test 7's half on
# packages: apt-get remove takes away the package's /boot and /lib/modules
# files and nothing of Debian's, and dpkg -i of the kernel makes a new initrd. The
# installed kernel and initrd are copied to $T_OUT/boot for boot 2.
. "$T_OUT/in/job/lib.sh"
echo 1..5
img=$(ls "$IN"/debs/linux-image-*.deb 2>/dev/null | grep -v -- '-dbg_' | head -n 1)
if [ -z "$img" ]; then
	for i in 1 2 3 4 5; do ok 1 "no linux-image-*.deb among the packages given ($IN/debs)"; done
	exit 0
fi
pkg=$(dpkg-deb -f "$img" Package)
rel=${pkg#linux-image-}
debs=("$img")
for d in "$IN"/debs/linux-headers-*.deb "$IN"/debs/linux-libc-dev_*.deb; do [ -f "$d" ] && debs+=("$d"); done
ours=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done)
files() { find /boot/ /usr/lib/modules/ | sort; }
dpkg-query -W >/tmp/pkgs-before
files >/tmp/files-before

# The first install as the README has it (apt install ./FILE.deb: apt
# hands the files to dpkg, no network needed), the second below with
# dpkg -i.
t0=$SECONDS
out=$(apt-get install -y "${debs[@]}" 2>&1); rc=$?
diag "$out" "apt-get install: $((SECONDS - t0)) s"
[ $rc = 0 ] && [ "$(dpkg-query -W -f='${Status}' "$pkg")" = "install ok installed" ] &&
	[ -f "/boot/vmlinuz-$rel" ] && [ -f "/boot/initrd.img-$rel" ]
ok $? "apt-get install $(basename -a "${debs[@]}" | sed 's|^|./|' | tr '\n' ' ')(rc $rc): $pkg installed, /boot/vmlinuz-$rel and the initrd its scripts built"
nko=$(lsinitramfs "/boot/initrd.img-$rel" 2>/dev/null | grep -c "lib/modules/$rel/.*\.ko")
[ "$nko" -gt 0 ] && lsinitramfs "/boot/initrd.img-$rel" | grep -q "lib/modules/$rel/modules.dep"
ok $? "initramfs-tools' initrd holds $nko modules of $rel and their modules.dep"
mkdir -p "$T_OUT/boot"
cp "/boot/vmlinuz-$rel" "/boot/initrd.img-$rel" "$T_OUT/boot/"

t0=$SECONDS
out=$(apt-get remove -y $ours 2>&1); rc=$?
diag "$out" "apt-get remove: $((SECONDS - t0)) s"
dpkg-query -W >/tmp/pkgs-after
gone=$(comm -23 /tmp/pkgs-before /tmp/pkgs-after | tr '\n' ' ')
left=$(comm -3 /tmp/files-before <(files) | tr -d '\t' | tr '\n' ' ')
[ $rc = 0 ] && [ -z "$gone" ] && [ -z "$left" ]
ok $? "apt-get remove $(echo $ours) (rc $rc): /boot and /lib/modules as before the install (differences: ${left:-none}), no package of Debian's gone or changed (${gone:-none})"
# Again, the kernel only (what boot 2 needs; the headers and linux-libc-dev
# went through install and removal above).
before=$(date +%s)
sleep 1
t0=$SECONDS
out=$(dpkg -i "$img" 2>&1); rc=$?
diag "$out" "dpkg -i again: $((SECONDS - t0)) s"
[ $rc = 0 ] && [ "$(stat -c %Y "/boot/initrd.img-$rel" 2>/dev/null || echo 0)" -gt "$before" ]
ok $? "dpkg -i $(basename "$img") again (rc $rc) builds a new initrd ($(stat -c %y "/boot/initrd.img-$rel" 2>&1))"
# dpkg's own log, with a time stamp at every unpack and configure: where
# the package steps' time goes (docs/debian.md)
cp /var/log/dpkg.log "$T_OUT/dpkg-stock.log" 2>/dev/null
cp "/boot/vmlinuz-$rel" "/boot/initrd.img-$rel" "$T_OUT/boot/" && (cd /boot && sha256sum "vmlinuz-$rel" "initrd.img-$rel") >"$T_OUT/boot/SHA256SUMS"
[ -s "$T_OUT/boot/SHA256SUMS" ] && sync
ok $? "the installed kernel and initrd copied out for boot 2 ($(tr '\n' ' ' <"$T_OUT/boot/SHA256SUMS"))"
