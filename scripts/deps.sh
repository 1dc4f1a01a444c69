#!/bin/bash
# Install the host packages the pipeline needs, idempotently: only what is
# missing is installed, with sudo when not root. Never touches the host
# kernel (no modules are loaded).
. "$(dirname "$0")/lib.sh"

PKGS=(
	# kernel source and build
	linux-source-6.1 build-essential flex bison bc libelf-dev libssl-dev
	cpio ccache dwarves python3 rsync kmod xz-utils git
	# VM
	qemu-system-x86 acpica-tools
	# guest tests and user-space tools
	acl attr libcap-dev libacl1-dev util-linux mount iproute2 ethtool e2fsprogs i2c-tools
	# benchmark
	bindfs fuse3 gnuplot-nox
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
logged "$LOGS/apt-install.log" $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" ||
	die "apt-get install failed for: ${missing[*]}"
