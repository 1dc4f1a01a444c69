# tests/debian/job/lib.sh: sourced by the job of each boot (stock.sh,
# ours.sh), inside the booted Debian system, as root, in bash. $T_OUT is
# the host's run directory (virtio-9p); $IN=$T_OUT/in holds what the host
# put there: this directory, tests/lib/tap.sh, tools/ (tools/mctp and
# tools/smbus3, built on the host: same Debian 12 libc) and debs/ (our
# packages). Each test below is one TAP stream (tap_run): its own plan,
# each result read back from what the kernel or the programs stored.
IN=$T_OUT/in
. "$IN/lib/tap.sh"
REPORT='BUG:|WARNING:|KASAN:|UBSAN:|unreferenced object 0x|possible recursive locking|possible circular locking|inconsistent lock state|suspicious RCU usage|Oops|Kernel panic|Call Trace:|general protection fault|list_add corruption|list_del corruption'
TUSER=debtest

t_n=0
# ok STATUS DESCRIPTION: one result; STATUS 0 is a pass.
ok() {
	t_n=$((t_n + 1))
	if [ "$1" = 0 ]; then echo "ok $t_n - $2"; else echo "not ok $t_n - $2"; fi
}
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# boot_test RELEASE PACKAGE: test 1. The system reached "running" (a failed
# unit names itself), runs kernel RELEASE from PACKAGE's /boot, AppArmor
# is on with every profile of Debian's /etc/apparmor.d (its top-level
# files, which apparmor.service loads; abstractions are not profiles), and
# the kernel's log holds no report.
boot_test() {
	local want=$1 pkg=$2 state failed owner loaded defined
	echo 1..5
	state=$(systemctl is-system-running --wait 2>&1)
	failed=$(systemctl --failed --plain --no-legend | awk '{ print $1 }' | tr '\n' ' ')
	[ "$state" = running ]
	ok $? "systemctl is-system-running: $state${failed:+ (failed units: $failed)}"
	owner=$(dpkg -S "/boot/vmlinuz-$(uname -r)" 2>/dev/null | cut -d: -f1)
	[ "$(uname -r)" = "$want" ] && [ "$owner" = "$pkg" ]
	ok $? "uname -r is $(uname -r) (want $want), its /boot/vmlinuz from ${owner:-no package} (want $pkg)"
	[ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ] && aa-enabled -q
	ok $? "AppArmor enabled (/sys/module/apparmor/parameters/enabled: $(cat /sys/module/apparmor/parameters/enabled 2>&1))"
	loaded=$(sed 's/ (.*//' /sys/kernel/security/apparmor/profiles | sort -u)
	defined=$(find /etc/apparmor.d -maxdepth 1 -type f -exec apparmor_parser -N {} + 2>/dev/null | sort -u)
	[ -n "$defined" ] && [ -z "$(comm -13 <(echo "$loaded") <(echo "$defined"))" ]
	ok $? "AppArmor: every profile of /etc/apparmor.d loaded ($(echo "$defined" | wc -l) defined: $(echo "$defined" | tr '\n' ' '); missing: $(comm -13 <(echo "$loaded") <(echo "$defined") | tr '\n' ' '))"
	dmesg >"$T_OUT/dmesg-$(uname -r).txt"
	! grep -qE "$REPORT" "$T_OUT/dmesg-$(uname -r).txt"
	ok $? "dmesg has no kernel report$(grep -m1 -E "$REPORT" "$T_OUT/dmesg-$(uname -r).txt" | sed 's/^/: /')"
}

# The user of test 3, made as a Debian administrator does: adduser
# allocates its /etc/subuid and /etc/subgid ranges; lingering starts its
# systemd --user (a login session's manager, with cgroup delegation).
user_setup() {
	id "$TUSER" >/dev/null 2>&1 || adduser --disabled-password --gecos '' "$TUSER" >/dev/null
	loginctl enable-linger "$TUSER"
	local i
	for i in $(seq 120); do
		systemctl is-active -q "user@$(id -u "$TUSER").service" && return 0
		sleep 1
	done
	return 1
}

as_user() { # CMD...: in the user's systemd --user, stdout/stderr passed
	systemd-run --user -M "$TUSER@" --wait --pipe --quiet --collect \
		-E SCRIPT_DIR="$IN/job" -- "$@"
}

# podman_test MODE: test 3. As $TUSER in its session, podman with its
# defaults imports a local image (a tarball made here) and runs it with a
# tmpfs, mounted in podman's user namespace, as an :idmap volume, with a
# nested mapping (--uidmap 0:1:65536). MODE idmap: the container sees the
# volume's own ids, its mountinfo says idmapped, and its writes are stored
# as podman's namespace's 0 and 1000: from outside, the user's own uid
# and its subordinate range's 1000th. MODE refused (Debian's 6.1, which
# cannot idmap a tmpfs: mount_setattr() fails with EINVAL): podman fails
# naming the idmapped mount, and the same run without :idmap works.
podman_test() {
	local mode=$1 out uid sub pause stored
	[ "$mode" = idmap ] && echo 1..7 || echo 1..5
	user_setup
	ok $? "adduser $TUSER, lingering: user@$(id -u "$TUSER").service active"
	uid=$(id -u "$TUSER")
	sub=$(awk -F: -v u="$TUSER" '$1 == u { print $2 }' /etc/subuid)
	[ -n "$sub" ] && grep -q "^$TUSER:$sub:65536\$" /etc/subgid
	ok $? "adduser allocated $TUSER's subordinate ids: /etc/subuid $(grep "^$TUSER:" /etc/subuid), /etc/subgid $(grep "^$TUSER:" /etc/subgid)"
	out=$(as_user bash "$IN/job/podman-user.sh" "$mode" 2>&1)
	diag "$out"
	local defaults="overlay crun /home/$TUSER/.local/share/containers/storage"
	grep -qx "info: $defaults" <<<"$out"
	ok $? "podman's defaults for $TUSER: $(grep '^info:' <<<"$out") (want $defaults), image imported: $(grep -c '^imported:' <<<"$out")"
	pause=$(cat "/run/user/$uid/libpod/tmp/pause.pid" 2>/dev/null)
	stored=$(nsenter -t "$pause" -m stat -c '%u:%g %n' "/home/$TUSER/vol/w/byroot" "/home/$TUSER/vol/w/by1000" 2>&1 | sed 's| /.*/| |' | tr '\n' ' ')
	if [ "$mode" = idmap ]; then
		grep -qx 'seen 0:0 /data/f0' <<<"$out" && grep -qx 'seen 1000:1000 /data/f1000' <<<"$out" &&
			grep -Eqx 'uid_map: +0 +1 +65536' <<<"$out"
		ok $? "in the container (uid_map 0 1 65536) the volume's files keep their ids"
		grep -E '^mountinfo: .* /data .*' <<<"$out" | grep -qw idmapped
		ok $? "the container's /proc/self/mountinfo shows /data idmapped"
		grep -qx 'stored 0:0 byroot' <<<"$out" && grep -qx 'stored 1000:1000 by1000' <<<"$out"
		ok $? "in podman's namespace the container's writes are stored as 0:0 and 1000:1000"
		[ "$stored" = "$uid:$uid byroot $((sub + 999)):$((sub + 999)) by1000 " ]
		ok $? "from outside (nsenter -m into podman's pause process $pause) they are stored as $stored (want $uid:$uid and $((sub + 999)))"
	else
		grep -q '^run-rc: [1-9]' <<<"$out" && grep -Eiq 'idmap|mount_setattr' <<<"$out" && grep -q 'Invalid argument' <<<"$out"
		ok $? "podman run with the tmpfs as an :idmap volume is refused with EINVAL ($(grep -Eim1 'idmap|mount_setattr' <<<"$out"))"
		grep -qx 'control-rc: 0' <<<"$out" && [ "$stored" = "$sub:$sub byroot $((sub + 1000)):$((sub + 1000)) by1000 " ]
		ok $? "the same run without :idmap works; its writes stored from outside as $stored (want $sub and $((sub + 1000)))"
	fi
}

# nspawn_test MODE: test 4. systemd-nspawn 252, --private-users=pick
# --private-users-ownership=map, a tmpfs bound with :idmap; the container
# writes as its root and its 1000. MODE idmap: the files are stored with
# the host-side ids of the idmapped bind (nspawn maps the container's root
# to the host's: REMOUNT_IDMAPPING_HOST_ROOT), the same as on an ext4
# source, while without :idmap they land in the picked range. MODE
# refused (Debian's 6.1): nspawn refuses the tmpfs bind; ext4 works.
nspawn_test() {
	local mode=$1 tree=/var/lib/machines/debtest out base i
	echo 1..4
	mkdir -p "$tree"/{etc,usr,proc,sys,dev,run,tmp,vol}
	for i in bin lib lib64 sbin; do ln -sfn "usr/$i" "$tree/$i"; done
	cp /etc/os-release "$tree/etc/"
	mkdir -p /mnt/ns-tmpfs /var/tmp/ns-ext4
	mountpoint -q /mnt/ns-tmpfs || mount -t tmpfs -o mode=0755 ns-tmpfs /mnt/ns-tmpfs
	for i in /mnt/ns-tmpfs /var/tmp/ns-ext4 /mnt/ns-tmpfs/plain; do
		rm -rf "$i/w"; mkdir -p "$i/w"; chmod 0777 "$i/w"
	done
	# SRC KIND [:idmap]: one container run, its output prefixed with KIND
	ns_run() {
		systemd-nspawn -q --register=no --console=pipe -D "$tree" --private-users=pick \
			--private-users-ownership=map --bind-ro=/usr --bind="$1:/vol$3" -- /bin/sh -c '
			echo "uid_map: $(cat /proc/self/uid_map)"
			grep " /vol " /proc/self/mountinfo | sed "s/^/mountinfo: /"
			touch /vol/w/byroot && setpriv --reuid 1000 --regid 1000 --clear-groups touch /vol/w/by1000
			echo done' 2>&1 | sed "s/^/$2: /"
		echo "$2: rc ${PIPESTATUS[0]}"
	}
	stored() { stat -c '%u:%g %n' "$1/w/byroot" "$1/w/by1000" 2>&1 | sed 's| /.*/| |' | tr '\n' ' '; }
	out=$(ns_run /var/tmp/ns-ext4 ext4 :idmap; ns_run /mnt/ns-tmpfs/plain plain ''; ns_run /mnt/ns-tmpfs tmpfs :idmap)
	diag "$out"
	base=$(sed -n 's/^plain: uid_map: *0 *\([0-9]*\) *65536$/\1/p' <<<"$out")
	[ -n "$base" ] && [ "$base" -ge 65536 ] && grep -qx 'plain: rc 0' <<<"$out" &&
		[ "$(stored /mnt/ns-tmpfs/plain)" = "$base:$base byroot $((base + 1000)):$((base + 1000)) by1000 " ]
	ok $? "nspawn picked the range at ${base:-?}; without :idmap the container's writes are stored there: $(stored /mnt/ns-tmpfs/plain)"
	grep -qx 'ext4: rc 0' <<<"$out" && grep '^ext4: mountinfo:' <<<"$out" | grep -qw idmapped &&
		[ "$(stored /var/tmp/ns-ext4)" = "0:0 byroot 1000:1000 by1000 " ]
	ok $? "ext4 bound with :idmap: mountinfo idmapped, the writes stored as the host's 0 and 1000: $(stored /var/tmp/ns-ext4)"
	if [ "$mode" = idmap ]; then
		grep -qx 'tmpfs: rc 0' <<<"$out" && grep '^tmpfs: mountinfo:' <<<"$out" | grep -qw idmapped
		ok $? "tmpfs bound with :idmap: the container ran, mountinfo shows /vol idmapped"
		[ "$(stored /mnt/ns-tmpfs)" = "0:0 byroot 1000:1000 by1000 " ]
		ok $? "tmpfs: the writes stored as the host's 0 and 1000, as on ext4: $(stored /mnt/ns-tmpfs)"
	else
		grep -q '^tmpfs: rc [1-9]' <<<"$out" && grep -q '^tmpfs: .*Invalid argument' <<<"$out"
		ok $? "tmpfs bound with :idmap is refused with EINVAL: $(grep -m1 -i 'idmap\|invalid' <<<"$(grep '^tmpfs:' <<<"$out")")"
		[ ! -e /mnt/ns-tmpfs/w/byroot ]
		ok $? "tmpfs: nothing was written through the refused bind"
	fi
}

# modules_test RELEASE: test 2. netdevsim, i2c-crosswire and mctp-i2c load
# with modprobe from the package's /lib/modules/RELEASE, each signed by the
# build's key and accepted (module signature enforcement aside, an
# unsigned or rejected module taints the kernel: E), kernel not tainted.
modules_test() {
	local rel=$1 m f owner signer
	echo 1..4
	for m in netdevsim i2c-crosswire mctp-i2c; do
		f=$(modinfo -n "$m" 2>&1)
		owner=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1)
		signer=$(modinfo -F signer "$m" 2>/dev/null)
		modprobe "$m" && [ -d "/sys/module/${m//-/_}" ] && [ "$owner" = "linux-image-$rel" ] && [ -n "$signer" ]
		ok $? "modprobe $m: loaded from $f (package ${owner:-none}), signed by '${signer:-nobody}'"
	done
	[ "$(cat /proc/sys/kernel/tainted)" = 0 ]
	ok $? "kernel not tainted (/proc/sys/kernel/tainted: $(cat /proc/sys/kernel/tainted))"
}
