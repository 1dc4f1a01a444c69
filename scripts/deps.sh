#!/bin/bash
# Install the host packages the pipeline needs, idempotently: only what is
# missing is installed, with sudo when not root. Never touches the host
# kernel (no modules are loaded).
. "$(dirname "$0")/lib.sh"

PKGS=(
	# kernel source and build
	linux-source-6.1 build-essential flex bison bc libelf-dev libssl-dev
	cpio ccache dwarves python3 rsync kmod xz-utils lz4 git
	# make deb (scripts/deb.sh): Debian's configuration of the same kernel,
	# bindeb-pkg's tools, openssl for the ephemeral module signing key
	linux-config-6.1 dpkg-dev fakeroot openssl gcc-12
	# VM
	qemu-system-x86 acpica-tools
	# tests/debian: the Debian 12 image (mmdebstrap; debugfs from
	# e2fsprogs below) and its copy-on-write overlay (qemu-img)
	mmdebstrap qemu-utils
	# guest tests and user-space tools
	acl attr libcap-dev libacl1-dev util-linux mount iproute2 ethtool e2fsprogs i2c-tools
	# benchmark
	bindfs fuse3 gnuplot-nox
	# real clients, run in the guest from the host's root: Open vSwitch
	# (tests/ovs), podman and crun with Debian's newuidmap/newgidmap and
	# liburing (tests/runtimes)
	openvswitch-switch
	podman crun uidmap liburing-dev
	# Debian's cpupower (tests/pstate)
	linux-cpupower
	# 32-bit builds of the i2c-dev test programs (tests/i2c-abi, compat ioctl)
	gcc-multilib
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { info "all ${#PKGS[@]} host packages present"; exit 0; }

info "installing: ${missing[*]}"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >"$LOGS/apt-update.log" 2>&1 ||
	info "apt-get update failed (see $LOGS/apt-update.log); trying the cached lists"
for p in "${missing[@]}"; do
	apt-cache show "$p" >/dev/null 2>&1 ||
		die "package '$p' is not available from the configured apt sources"
done
# Packaged daemons (openvswitch-switch) must not start on the host: their
# init scripts load kernel modules (openvswitch.ko), and nothing may be
# loaded into this machine's kernel. policy-rc.d exit 101 forbids every
# service start during the install, as Debian's docker images do.
policy=/usr/sbin/policy-rc.d own_policy=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# scripts/deps.sh: no service starts during its apt-get install\nexit 101\n' |
		$SUDO tee "$policy" >/dev/null && $SUDO chmod 755 "$policy" && own_policy=1
fi
rc=0
logged "$LOGS/apt-install.log" $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
[ -n "$own_policy" ] && $SUDO rm -f "$policy"
[ $rc -eq 0 ] || die "apt-get install failed for: ${missing[*]}"
