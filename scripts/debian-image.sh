#!/bin/bash
# debian-image.sh [--print-path]: build, or find in the cache, the Debian 12
# system tests/debian boots: mmdebstrap of bookworm from the Debian archive
# this host's apt is configured with (its Debian entries only, every suite
# it uses, so that linux-image-amd64 is the same 6.1.192 as the series'
# source), the packages of tests/debian/image-packages, tests/debian/image/
# (the unit that runs the test job) baked in; then an ext4 filesystem
# image (no partition table, root=/dev/vda, as debvm makes them).
#
# Cached outside the clone, like ccache: $DEBIAN_IMAGE_CACHE/KEY.img
# (default /var/cache/mw517/debian-image), KEY a hash of the
# package list, this recipe, the baked-in files and the archive entries.
# A change to any of them builds a new image (the key covers this whole
# file, comments too); the old ones stay until
# removed by hand. Nobody writes to a cached image: scripts/debian-vm.sh
# boots a copy-on-write overlay of it. Prints the image's path last.
#
# Needs root (mmdebstrap's root mode into a directory, mke2fs -d). Inside
# the chroot mmdebstrap installs its own policy-rc.d (exit 101) and diverts
# start-stop-daemon, so no packaged daemon (openvswitch-switch) starts on
# the host. A failure leaves nothing in the cache: the build happens in a
# scratch directory there and the image is renamed into place at the end.
. "$(dirname "$0")/lib.sh"

CACHE=$(cache_dir debian-image DEBIAN_IMAGE_CACHE)
LIST=$TOP/tests/debian/image-packages
BAKED=$TOP/tests/debian/image
# Free space the build needs in the cache's filesystem: the unpacked
# system (~1.5 GiB) and the image made from it, at once.
NEED_MB=${DEBIAN_IMAGE_NEED_MB:-6144}

[ "$(id -u)" -eq 0 ] || die "debian-image.sh: building the image needs root (mmdebstrap into a directory, mke2fs -d)"

# The host's Debian archive entries, from apt's own view of its sources:
# "deb URI SUITE COMPONENT" for every index whose Release says o=Debian.
debian_sources() {
	apt-cache policy | awk '
		$1 ~ /^[0-9]+$/ && $2 ~ /:\/\// && $3 ~ /\// { uri = $2; split($3, sc, "/"); next }
		$1 == "release" && uri != "" {
			if ($2 ~ /(^|,)o=Debian(,|$)/) print "deb " uri " " sc[1] " " sc[2]
			uri = ""
		}' | sort -u
}
# DEBIAN_IMAGE_SOURCES: a sources.list to use instead (tests/debian checks
# the message for an unreachable archive with one).
if [ -n "${DEBIAN_IMAGE_SOURCES:-}" ]; then
	sources=$(cat "$DEBIAN_IMAGE_SOURCES") || die "debian-image.sh: cannot read $DEBIAN_IMAGE_SOURCES"
else
	sources=$(debian_sources)
fi
[ -n "$sources" ] || die "debian-image.sh: this host's apt has no Debian archive configured (apt-cache policy shows no o=Debian source; run apt-get update?)"
grep -q ' bookworm ' <<<"$sources" ||
	die "debian-image.sh: the host's Debian sources have no bookworm suite: $sources"

pkgs=$(sed 's/#.*//' "$LIST" | tr -s ' \t' '\n\n' | sed '/^$/d' | sort -u)
key=$( {
	cat "$LIST" "$0"
	(cd "$BAKED" && for f in *; do printf '%s\n' "$f"; cat "$f"; done)
	printf '%s\n' "$sources"
	# the stock kernel the image must hold (checked below when built)
	echo "linux-image-amd64 $SRC_WANT_VERSION"
} | sha256sum | cut -c1-16)
img=$CACHE/$key.img

if [ "${1:-}" = --print-path ]; then
	echo "$img"
	exit 0
fi
# One build in a cache at a time: make check starts one early, in the
# background (scripts/pipeline.sh), and tests/debian's own call waits for
# it here, then finds the image cached (or builds it, should that one have
# failed). The lock is beside the cache directory, which a failed build
# leaves as it was; the programs the build runs do not inherit it.
mkdir -p "$(dirname "$CACHE")"
exec 9>"$(dirname "$CACHE")/.$(basename "$CACHE").lock"
flock -w 1800 9 || die "debian-image.sh: another build of the image in $CACHE held its lock for 30 minutes"
if [ -f "$img" ]; then
	info "Debian image cached: $img"
	echo "$img"
	exit 0
fi

command -v mmdebstrap >/dev/null || die "debian-image.sh: mmdebstrap is not installed (scripts/deps.sh installs it)"
mkdir -p "$CACHE"
free_mb=$(df -Pm "$CACHE" | awk 'NR == 2 { print $4 }')
[ "$free_mb" -ge "$NEED_MB" ] ||
	die "debian-image.sh: too little disk: $CACHE has ${free_mb} MiB free, building the image needs ${NEED_MB} MiB"

work=$(mktemp -d "$CACHE/.build-$key.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
trap 'exit 143' TERM
printf '%s\n' "$sources" >"$work/sources.list"
info "building the Debian image $key from: $(tr '\n' ';' <"$work/sources.list")"

# The baked-in files, the filesystem table, the host name, root without
# a password (the console). /etc/machine-id is left empty, as mmdebstrap
# leaves it (a generic image: the first boot of each run makes one).
hook='set -e
cp "'$BAKED'/debian-test.service" "$1/etc/systemd/system/"
install -m 755 "'$BAKED'/debian-test-launch" "$1/usr/local/sbin/"
chroot "$1" systemctl enable debian-test.service
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" >"$1/etc/fstab"
echo debtest >"$1/etc/hostname"
printf "127.0.0.1 localhost\n127.0.1.1 debtest\n" >"$1/etc/hosts"
passwd --root "$1" -d root'

# Before any package: the initrd configuration (tests/debian/image/
# initramfs-tcg.conf says why), so every kernel installed gets its initrd
# that way. Neither file belongs to a package.
setup='set -e
mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools/hooks"
cp "'$BAKED'/initramfs-tcg.conf" "$1/etc/initramfs-tools/conf.d/"
install -m 755 "'$BAKED'/initramfs-tcg-hook" "$1/etc/initramfs-tools/hooks/initramfs-tcg"'

t0=$(date +%s)
if ! nice -n 10 mmdebstrap --mode=root --variant=apt --format=directory \
	--include="$(tr '\n' ',' <<<"$pkgs" | sed 's/,$//')" \
	--setup-hook="$setup" --customize-hook="$hook" \
	bookworm "$work/root" "$work/sources.list" >"$work/mmdebstrap.log" 2>&1 9>&-; then
	tail -n 15 "$work/mmdebstrap.log" | sed 's/^/   | /' >&2
	if grep -qE 'Could not resolve|Failed to fetch|Unable to connect|Temporary failure|Connection (refused|timed out)|Could not connect' "$work/mmdebstrap.log"; then
		die "debian-image.sh: the Debian archive is unreachable ($(awk '{ print $2 }' "$work/sources.list" | sort -u | tr '\n' ' ')); nothing was cached"
	fi
	die "debian-image.sh: mmdebstrap failed (log above); nothing was cached"
fi
t1=$(date +%s)

# The stock kernel must be the series' version (6.1.192): test 7 compares
# the two kernels of the same source.
kver=$(chroot "$work/root" dpkg-query -W -f='${Version}' linux-image-amd64)
[[ $kver == "$SRC_WANT_VERSION"-* ]] ||
	die "debian-image.sh: linux-image-amd64 in the image is $kver, not $SRC_WANT_VERSION (the host's Debian sources lack the suite that has it?)"

size_mb=$(($(du -sm "$work/root" | cut -f1) + 3072))
nice -n 10 mke2fs -q -t ext4 -L debtest -d "$work/root" "$work/image" "${size_mb}M" >&2 9>&- ||
	die "debian-image.sh: mke2fs failed; nothing was cached"
rm -rf --one-file-system "$work/root"
mv "$work/image" "$img"
info "Debian image built: $img (linux-image-amd64 $kver; mmdebstrap $((t1 - t0)) s, ext4 $(($(date +%s) - t1)) s)"
echo "$img"
