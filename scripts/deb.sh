#!/bin/bash
# deb.sh [build|config OBJ|key]: Debian 12 packages of the patched kernel,
# the Debian Kernel Handbook's way ("Building a custom kernel from Debian
# kernel source", /usr/share/doc/debian-kernel-handbook): linux-source-6.1
# with the series (build/linux, scripts/tree.sh), Debian's own
# configuration of the same version (linux-config-6.1,
# config.amd64_none_amd64.xz) plus kconfig/debian.config, then
# `make bindeb-pkg`. Output in build/deb/ (FLAVOUR=test: build/deb-test/,
# so the test packages never mix with a user's): linux-image-*, linux-headers-*
# (DKMS), linux-libc-dev (the SMBus 3.0 uAPI), the certificate the
# modules are signed with, SOURCE (what they were built from, the cache
# key) and modules (the module list they were configured with).
#
#   MODULES=host (default)  the built-in configuration is Debian's; the
#                           modules are those this machine has loaded
#                           (/proc/modules, what lsmod reads: reading it
#                           loads nothing) plus kconfig/debian-series.modules,
#                           through `make localmodconfig`
#   MODULES=vm              kconfig/debian-vm.modules plus the series' list:
#                           what a QEMU guest of Debian 12 and our tests load
#   MODULES=all             all of Debian's modules (hours on 2 cores)
#   FLAVOUR=user (default)  Debian's debug information, BTF and symbol
#                           versions kept
#   FLAVOUR=test            plus kconfig/debian-test.config (no debug
#                           information, no symbol versions: the package
#                           tests/debian installs)
#
# Names. The kernel release (uname -r) is 6.1.192-mw517-amd64 ("mw517":
# the 5.17 merge-window features this series brings to 6.1): the packages
# are linux-image-6.1.192-mw517-amd64 and linux-headers-6.1.192-mw517-amd64,
# whose files (/boot/*-6.1.192-mw517-amd64, /lib/modules/6.1.192-mw517-amd64,
# /usr/src/linux-headers-6.1.192-mw517-amd64) no Debian package has, so they
# install beside Debian's linux-image-6.1.0-*-amd64 (release 6.1.0-N-amd64)
# and no Debian package, linux-image-amd64 included, ever depends on them
# or upgrades them: apt cannot take them for a version of Debian's.
# The version is Debian's source version plus ours: 6.1.192-3+mw517.STAMP
# (STAMP: UTC date and time of the build, YYYYMMDD.HHMM; FLAVOUR=test adds
# ".test"). A rebuild sorts newer, so `apt install ./…deb` takes it.
# linux-libc-dev is the one package whose name is Debian's (bindeb-pkg
# cannot name it otherwise): installing ours replaces Debian's
# linux-libc-dev. "+mw517" sorts it after the Debian version it was made
# from (6.1.192-3) and before any later Debian version (6.1.192-4,
# 6.1.193-1), so apt never downgrades it to the version it replaced, and a
# Debian update of the headers replaces it again. Install it only to build
# programs against the SMBus 3.0 uAPI; it is Multi-Arch: same, so with
# linux-libc-dev:i386 installed (gcc-multilib) dpkg refuses it.
#
# Module signing: Debian's signing key is not available. The build makes
# an ephemeral key pair (certs/signing_key.pem in the object directory,
# kept there; never in a package) and builds its certificate into the
# kernel; modules_install signs every module with it (MODULE_SIG_ALL). The
# kernel loads its own modules under Secure Boot's lockdown. The kernel
# image is not signed for UEFI: under Secure Boot, shim boots it only
# after a Machine Owner Key signs it or validation is off (README,
# "Install on your Debian 12 machine"). build/deb/mw517-signing-key.der is
# the certificate (DER, for `mokutil --import`).
#
# Cache: the packages are kept in DEB_CACHE (default /var/cache/mw517/deb,
# else ~/.cache/mw517/deb when that is not writable), one directory per
# key: a hash of the series, the configuration files, the module list,
# the linux-source and linux-config versions, the toolchain (gcc-12, ld,
# pahole), DEB_SCHEME below and the kernel build's make variables.
# A second fresh clone with the same inputs copies them instead of
# building; compiles go through ccache.
#
# Bad input changes nothing: a linux-config-6.1 missing or of another
# version than linux-source-6.1, an unknown MODULES or FLAVOUR, too little
# disk: each stops with a message before build/ or the cache is touched.
#
# deb.sh config OBJ: only write the package's .config into OBJ (a
# directory inside build/linux): what tests/debian-config checks.
# deb.sh key: print the cache key.
. "$(dirname "$0")/lib.sh"

MODULES=${MODULES:-host}
FLAVOUR=${FLAVOUR:-user}
DEB_WANT=6.1.192-3
DEBIAN_CONFIG=/usr/src/linux-config-6.1/config.amd64_none_amd64.xz
LOCALVERSION_DEB=-mw517-amd64
# Part of the cache key: count it up when a change here changes what the
# packages hold or how they are named (not for checks or messages).
DEB_SCHEME=4
OUT=$BUILD/deb

case $MODULES in host | vm | all) ;; *) die "MODULES=$MODULES: one of host (default), vm, all" ;; esac
case $FLAVOUR in user | test) ;; *) die "FLAVOUR=$FLAVOUR: one of user (default), test" ;; esac
[ "$FLAVOUR" = user ] || OUT=$BUILD/deb-test

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }

# Debian's configuration must be the one of the source it configures.
check_versions() {
	local src cfg
	src=$(pkg_version linux-source-6.1) || die "linux-source-6.1 is not installed (run: make deps)"
	cfg=$(pkg_version linux-config-6.1) ||
		die "linux-config-6.1 is not installed: Debian's configuration of the kernel (apt-get install linux-config-6.1=$src)"
	[ -f "$DEBIAN_CONFIG" ] || die "$DEBIAN_CONFIG is missing although linux-config-6.1 is installed; reinstall it"
	[ "$src" = "$cfg" ] ||
		die "linux-config-6.1 is $cfg but linux-source-6.1 is $src: Debian's configuration must be of the same version (apt-get install linux-config-6.1=$src linux-source-6.1=$src)"
	[ "$src" = "$DEB_WANT" ] ||
		die "linux-source-6.1 and linux-config-6.1 are $src; kconfig/debian.config lists the differences from $DEB_WANT's configuration (apt-get install linux-source-6.1=$DEB_WANT linux-config-6.1=$DEB_WANT)"
	DEB_SRC_VERSION=$src
}

# The module names localmodconfig keeps (lsmod's format: the first word of
# each line; "Module" heading lines are skipped), or nothing for all.
# Read once per run (module_list_read): with MODULES=host, a module
# loaded between the cache key and the configuration would otherwise
# give a package whose modules are not those of its key. The list is kept
# beside the packages (modules); deb.sh key with DEB_MODULE_LIST=FILE
# takes the list from FILE instead (tests/debian: MODULES=host packages
# are checked against the machine as it was when they were built).
MODULE_LIST= MODULE_LIST_READ=
module_list_read() {
	if [ -n "${DEB_MODULE_LIST:-}" ]; then
		[ -r "$DEB_MODULE_LIST" ] || { echo "DEB_MODULE_LIST: cannot read $DEB_MODULE_LIST" >&2; return 1; }
		MODULE_LIST=$(cat "$DEB_MODULE_LIST") && MODULE_LIST_READ=1
		return
	fi
	MODULE_LIST=$(module_list_now) && MODULE_LIST_READ=1
}
module_list() {
	if [ -n "${MODULE_LIST_READ:-}" ]; then
		[ -z "$MODULE_LIST" ] || printf '%s\n' "$MODULE_LIST"
		return 0
	fi
	module_list_now
}
module_list_now() {
	[ "$MODULES" = all ] && return 0
	[ -f "$TOP/kconfig/debian-series.modules" ] || { echo "kconfig/debian-series.modules is missing" >&2; return 1; }
	[ "$MODULES" != vm ] || [ -f "$TOP/kconfig/debian-vm.modules" ] ||
		{ echo "kconfig/debian-vm.modules is missing" >&2; return 1; }
	{
		case $MODULES in
		host) cut -d' ' -f1 /proc/modules ;;
		vm) cat "$TOP/kconfig/debian-vm.modules" ;;
		esac
		cat "$TOP/kconfig/debian-series.modules"
	} | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$' | tr - _ | sort -u
}

fragments() {
	echo "$TOP/kconfig/debian.config"
	[ "$FLAVOUR" = user ] || echo "$TOP/kconfig/debian-test.config"
}

# kmake OBJ ARGS...: make in the tree with the pipeline's compilers
# (ccache through scripts/kcc, which keeps it away from .incbin sources:
# the kernel inside bzImage and the signing certificate; Debian builds its
# kernel with gcc-12, and CC_VERSION_TEXT, which
# DKMS compares, is then Debian's).
kmake() {
	local obj=$1
	shift
	make -C "$TREE" O="$obj" "${KBUILD_ARGS[@]}" CC="$TOP/scripts/kcc gcc-12" LOCALVERSION="$LOCALVERSION_DEB" "$@"
}

# configure OBJ: Debian's configuration, our fragments, olddefconfig, then
# for host and vm localmodconfig with the module list and olddefconfig.
configure() {
	local obj=$1 f ikconfig
	mkdir -p "$obj" || return 1
	{
		xz -dc "$DEBIAN_CONFIG" && fragments | while read -r f; do cat "$f" || exit 1; done
	} >"$obj/.config.new" || { echo "cannot write $obj/.config.new" >&2; return 1; }
	mv "$obj/.config.new" "$obj/.config" || return 1
	kmake "$obj" -s olddefconfig || { echo "olddefconfig of Debian's configuration failed" >&2; return 1; }
	[ "$MODULES" != all ] || return 0
	module_list >"$obj/deb.modules" || return 1
	ikconfig=$(grep -E '^(# )?CONFIG_IKCONFIG[= ]' "$obj/.config") || ikconfig="# CONFIG_IKCONFIG is not set"
	kmake "$obj" -s LSMOD="$obj/deb.modules" localmodconfig </dev/null >/dev/null ||
		{ echo "localmodconfig with $(wc -l <"$obj/deb.modules") modules failed" >&2; return 1; }
	# localmodconfig turns IKCONFIG on as a module whatever the
	# configuration says (streamline_config.pl, for its own later runs);
	# Debian has it off, and a module set only takes modules away.
	sed -i '/^CONFIG_IKCONFIG=/d; /^# CONFIG_IKCONFIG is not set/d' "$obj/.config"
	echo "$ikconfig" >>"$obj/.config"
	kmake "$obj" -s olddefconfig || { echo "olddefconfig after localmodconfig failed" >&2; return 1; }
}

cache_key() {
	local p
	{
		echo "source $DEB_SRC_VERSION config $(pkg_version linux-config-6.1)"
		echo "modules $MODULES flavour $FLAVOUR"
		# contents and names only: the key is the same in every clone
		sed -e 's/#.*//' "$TOP/patches/series" | while read -r p; do
			[ -z "$p" ] || echo "$p $(sha256sum <"$TOP/patches/$p")"
		done
		fragments | while read -r p; do sha256sum <"$p"; done
		module_list || echo "no module list $RANDOM"
		gcc-12 --version | head -n1
		ld --version | head -n1
		pahole --version
		# how this script builds and names the packages, and the make
		# variables of every kernel build
		echo "scheme $DEB_SCHEME $LOCALVERSION_DEB"
		echo "${KBUILD_ARGS[@]}" | sed "s|$TOP/|TOP/|g"
		sha256sum <"$TOP/scripts/kcc"
	} | sha256sum | cut -c1-16
}

# The packages of KEYDIR into OUT (only ours go: other files stay). Copied
# beside OUT first: a failed copy (disk full) leaves OUT's packages as
# they were.
deliver() {
	local keydir=$1 new=$OUT.new.$$ f
	mkdir -p "$OUT" && rm -rf "$OUT".new.* && mkdir -p "$new" || die "cannot write $new"
	trap 'rm -rf "$new"' EXIT
	cp -p "$keydir"/*.deb "$keydir"/mw517-signing-key.der "$keydir"/SOURCE "$keydir"/modules "$new"/ || {
		rm -rf "$new"
		die "copying the packages from $keydir to $OUT failed; $OUT left as it was"
	}
	rm -f "$OUT"/linux-*.deb "$OUT"/mw517-signing-key.der "$OUT"/SOURCE "$OUT"/modules
	for f in "$new"/*; do mv "$f" "$OUT"/ || die "moving $f into $OUT failed"; done
	rmdir "$new"
	trap - EXIT
	ls -1 "$OUT"/*.deb | sed 's/^/   /'
}

# The packages are cached under the key of patches/: build them only from
# a tree that is exactly patches/ (tree.sh builds uncommitted changes and
# keeps commits made on the series; make export-patches writes them back).
# Compared patch by patch with git patch-id, as tests/outgoing does.
tree_is_series() {
	local want have
	[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] ||
		die "build/linux has uncommitted changes; the packages are cached under the key of patches/: commit them and run make export-patches first (nothing built)"
	want=$(sed -e 's/#.*//' "$TOP/patches/series" | while read -r p; do
		[ -z "$p" ] || git patch-id --stable <"$TOP/patches/$p" | cut -d' ' -f1
	done)
	have=$(git -C "$TREE" log --reverse --format=%H baseline..HEAD | while read -r c; do
		git -C "$TREE" show "$c" | git patch-id --stable | cut -d' ' -f1
	done)
	[ "$want" = "$have" ] ||
		die "build/linux's commits after baseline are not patches/series (a commit made or amended there?); the packages are cached under the key of patches/: run make export-patches first (nothing built)"
}

# add_image_depends DEB: bindeb-pkg's linux-image declares no dependency,
# yet what its maintainer scripts run needs kmod (depmod) and makes no
# initrd without initramfs-tools (/etc/kernel/postinst.d/initramfs-tools):
# on a system without them the kernel would install and not boot. The
# package is rebuilt with dpkg-deb declaring them as Debian's own
# linux-image-6.1.0-*-amd64 does; its files are unchanged.
IMAGE_DEPENDS="kmod, initramfs-tools | linux-initramfs-tool"
add_image_depends() {
	local deb=$1 d
	# mkdebian writes none; one to merge with would need more than a sed
	[ -z "$(dpkg-deb -f "$deb" Depends)" ] || { echo "$deb already has Depends: $(dpkg-deb -f "$deb" Depends)" >&2; return 1; }
	d=$(mktemp -d "$(dirname "$deb")/repack.XXXXXX") || return 1
	dpkg-deb -R "$deb" "$d/root" &&
		sed -i -e '/^Depends:/d' -e "/^Architecture:/a Depends: $IMAGE_DEPENDS" "$d/root/DEBIAN/control" &&
		dpkg-deb --root-owner-group -Zxz -b "$d/root" "$d/new.deb" >/dev/null &&
		mv "$d/new.deb" "$deb" || { rm -rf "$d"; return 1; }
	rm -rf "$d"
}

build() {
	local key cache keydir obj name need stamp pkgver staging f avail
	"$TOP/scripts/deps.sh"
	check_versions
	[ "$MODULES" != host ] || [ -r /proc/modules ] || die "MODULES=host reads /proc/modules, which is not readable"
	module_list_read || die "cannot read the module list"
	key=$(cache_key) || die "cannot compute the cache key"
	cache=$(cache_dir deb DEB_CACHE)
	keydir=$cache/$key
	info "MODULES=$MODULES FLAVOUR=$FLAVOUR key $key ($keydir)"
	if [ -f "$keydir/SOURCE" ]; then
		info "packages cached: $keydir"
		deliver "$keydir"
		return 0
	fi
	# Debian's full build with debug information needs ~15 GB (the
	# Handbook); without it ~2-5 GB. The packages are copied twice.
	case $MODULES/$FLAVOUR in
	all/user) need=30 ;;
	all/test) need=12 ;;
	*/user) need=10 ;;
	*) need=6 ;;
	esac
	check_disk $((need * 1024 * 1024))
	mkdir -p "$cache" || die "cannot create the package cache $cache"
	avail=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
	[ "$avail" -ge $((2 * 1024 * 1024)) ] ||
		die "only $((avail / 1024)) MiB free for the package cache $cache, need 2048 MiB"
	"$TOP/scripts/tree.sh"
	tree_is_series

	name=obj-deb-$MODULES
	[ "$FLAVOUR" = user ] || name=$name-test
	obj=$TREE/$name
	ln -sfn "$obj" "$BUILD/$name"
	kbuild_env
	stamp=$(date -u +%Y%m%d.%H%M)
	pkgver="$DEB_SRC_VERSION+mw517.$stamp"
	[ "$FLAVOUR" = user ] || pkgver=$pkgver.test
	KBUILD_BUILD_TIMESTAMP=$(date -u -R)
	export KBUILD_BUILD_TIMESTAMP KBUILD_BUILD_USER=mw517 KBUILD_BUILD_HOST=make-deb
	phase "deb:config" logged "$LOGS/deb-config-$MODULES-$FLAVOUR.log" configure "$obj" ||
		die "configuring the package's kernel failed"
	info "$(grep -c '=y$' "$obj/.config") built-in options, $(grep -c '=m$' "$obj/.config") modules"
	# The packages land in the object directory's parent, build/linux:
	# none may be left there.
	rm -f "$TREE"/*.deb "$TREE"/*.buildinfo "$TREE"/*.changes
	phase "deb:build" logged "$LOGS/deb-build-$MODULES-$FLAVOUR.log" \
		nice -n 19 env KDEB_PKGVERSION="$pkgver" KDEB_SOURCENAME=linux-mw517 \
		KDEB_CHANGELOG_DIST=bookworm DEBFULLNAME="make deb" DEBEMAIL=make-deb@localhost \
		make -C "$TREE" O="$obj" -j"$JOBS" "${KBUILD_ARGS[@]}" CC="$TOP/scripts/kcc gcc-12" \
		LOCALVERSION="$LOCALVERSION_DEB" bindeb-pkg || {
		rm -f "$TREE"/*.deb "$TREE"/*.buildinfo "$TREE"/*.changes
		die "make bindeb-pkg failed"
	}
	staging=$keydir.tmp.$$
	rm -rf "$staging"
	# a failed check or an interrupt leaves nothing in the cache
	trap 'rm -rf "$staging"' EXIT
	mkdir -p "$staging"
	mv "$TREE"/*.deb "$staging"/
	rm -f "$TREE"/*.buildinfo "$TREE"/*.changes
	for f in "$staging"/linux-image-*.deb; do
		case $f in *-dbg_*) continue ;; esac
		add_image_depends "$f" || die "declaring the dependencies of $(basename "$f") failed"
	done
	cp "$obj/certs/signing_key.x509" "$staging/mw517-signing-key.der"
	file_holds "$obj/vmlinux" "$obj/certs/signing_key.x509" ||
		die "the kernel built does not carry the certificate of the key its modules are signed with ($obj/certs/signing_key.x509)"
	piggy_holds_kernel "$obj" ||
		die "$obj/arch/x86/boot/bzImage does not hold the kernel just built (piggy.o lacks the compressed image piggy.S names)"
	{
		echo "key $key"
		echo "built $(date -u -R) from $TOP"
		echo "MODULES=$MODULES FLAVOUR=$FLAVOUR version $pkgver release $(cat "$obj/include/config/kernel.release")"
		echo "linux-source-6.1 $DEB_SRC_VERSION linux-config-6.1 $(pkg_version linux-config-6.1)"
		for f in "$staging"/*.deb; do echo "$(basename "$f") $(du -k "$f" | cut -f1) KiB"; done
	} >"$staging/SOURCE"
	module_list >"$staging/modules"
	"$TOP/scripts/deb-check.sh" "$staging" ||
		die "the packages in $staging fail their check (scripts/deb-check.sh); not cached"
	rm -rf "$keydir"
	mv "$staging" "$keydir"
	trap - EXIT
	deliver "$keydir"
}

case ${1:-build} in
build) build ;;
config)
	obj=${2:?usage: deb.sh config OBJ}
	check_versions
	kbuild_env
	configure "$obj"
	;;
key)
	check_versions
	module_list_read || die "cannot read the module list"
	cache_key
	;;
make)
	# deb.sh make OBJ TARGET...: make in OBJ the way configure does
	# (tests/debian-config's olddefconfig runs)
	obj=${2:?usage: deb.sh make OBJ TARGET...}
	shift 2
	kbuild_env
	kmake "$obj" "$@"
	;;
*) die "usage: deb.sh [build|config OBJ|key|make OBJ TARGET...]" ;;
esac
