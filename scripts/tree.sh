#!/bin/bash
# Kernel tree: unpack Debian's linux-source-6.1 into build/linux, commit it
# as the git baseline, then apply patches/series on top with git am.
#
# Both steps are cached. The unpacked baseline is reused while the
# installed package is the same; the applied series is reused while the
# series file and every listed patch are byte-identical. A failed or
# interrupted step leaves no stamp behind, so the next run redoes it.
. "$(dirname "$0")/lib.sh"

PATCHES=$TOP/patches
BASE_STAMP=$TREE/.git/pipeline-baseline
SERIES_STAMP=$TREE/.git/pipeline-series

git_tree() { git -C "$TREE" "$@"; }

series_list() {
	[ -f "$PATCHES/series" ] || return 0
	sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$PATCHES/series" | grep -v '^$' || true
}

series_key() {
	local p
	{
		echo "baseline $(cat "$BASE_STAMP")"
		series_list | while read -r p; do
			[ -f "$PATCHES/$p" ] || die "patches/series lists '$p', which does not exist"
			sha256sum "$PATCHES/$p"
		done
	} | sha256sum | cut -d' ' -f1
}

unpack() {
	local ver key tmp
	dpkg-query -W -f='${Status}\n' "$SRC_PKG" 2>/dev/null | grep -q 'install ok installed' ||
		die "package $SRC_PKG is not installed (run: make deps)"
	[ -f "$SRC_TARBALL" ] || die "$SRC_TARBALL is missing although $SRC_PKG is installed; reinstall it"
	ver=$(dpkg-query -W -f='${Version}' "$SRC_PKG")
	key="$ver $(stat -c '%s %Y' "$SRC_TARBALL")"
	info "source package: $SRC_PKG $ver"
	case $ver in
	"$SRC_WANT_VERSION"-*) ;;
	*) info "WARNING: the series was made for $SRC_WANT_VERSION, the installed source is $ver; trying anyway" ;;
	esac

	if [ -f "$BASE_STAMP" ] && [ "$(cat "$BASE_STAMP")" = "$key" ] &&
		git_tree rev-parse -q --verify refs/tags/baseline >/dev/null; then
		info "baseline cached in $TREE"
		return 0
	fi
	[ -e "$TREE" ] && info "tree missing its baseline stamp (interrupted or outdated): unpacking again"
	check_disk $((6 * 1024 * 1024))
	rm -rf "$TREE" "$TREE.tmp"
	mkdir -p "$TREE.tmp"
	# Debian's tarball is xz in many blocks: xz decompresses them on every core.
	logged "$LOGS/unpack.log" tar --use-compress-program="xz -T0" -xf "$SRC_TARBALL" -C "$TREE.tmp" --strip-components=1 ||
		die "unpacking $SRC_TARBALL failed"
	(
		cd "$TREE.tmp"
		git init -q
		git config user.name "Pipeline Baseline"
		git config user.email "pipeline@localhost"
		git config gc.auto 0
		# Loose objects uncompressed: git add hashes and writes the
		# ~75,000 files on one core, and zlib was a third of its time
		# (18.7 s against 13.5 s here); .git takes 1.4 GB instead of 0.5.
		git config core.looseCompression 0
		# Debian's top-level .gitignore ignores everything at the top
		# level ("/*", for its packaging repository); without dropping
		# that rule git would track nothing here.
		sed -i '/^# Debian packaging: ignore everything/,$d' .gitignore
		git add -A
		git commit -q -m "Debian $SRC_PKG $ver (baseline)"
		git tag baseline
		# The kernels' object directories live in the trees (variant_obj).
		echo '/obj-*' >>.git/info/exclude
	) >"$LOGS/baseline.log" 2>&1 || die "creating the baseline commit failed (see $LOGS/baseline.log)"
	echo "$key" >"$TREE.tmp/.git/pipeline-baseline"
	mv "$TREE.tmp" "$TREE"
}

# Show the hunk of PATCH that does not apply to the baseline.
show_failing_hunk() {
	git_tree apply --check --verbose "$1" 2>&1 | sed -n '/^error:/,$p' | head -n 40 | sed 's/^/   | /' >&2
}

apply_series() {
	local key p n i list files=()
	# phase runs this with set -e off: a die in series_key must stop it.
	key=$(series_key) || return 1
	if [ -f "$SERIES_STAMP" ] && [ "$(cat "$SERIES_STAMP")" = "$key" ]; then
		info "series unchanged: $(git_tree rev-list --count baseline..HEAD) patches applied (cached)"
		if [ -n "$(git_tree status --porcelain --untracked-files=no)" ]; then
			info "note: the tree has uncommitted changes; they are built as they are"
		fi
		return 0
	fi
	rm -f "$SERIES_STAMP"
	git_tree am --abort >/dev/null 2>&1 || true
	git_tree reset -q --hard baseline
	git_tree clean -q -fdx -e '/obj-*'
	mapfile -t list < <(series_list)
	n=${#list[@]}
	for p in "${list[@]}"; do
		files+=("$PATCHES/$p")
	done
	# One git am for the whole series: each invocation reads and refreshes
	# the index of ~75,000 files (2.1 s for the 24 patches at once, 10.9 s
	# one by one). On a failure, the commits it made say which patch
	# stopped it, and the tree is still at the one before it (git am
	# applies a patch whole or not at all), where its hunk is shown.
	if [ "$n" -gt 0 ] && ! git_tree am -q --keep-cr "${files[@]}" >"$LOGS/patch.log" 2>&1; then
		i=$(git_tree rev-list --count baseline..HEAD)
		p=${list[i]:-?}
		printf 'error: patch %d (%s) does not apply:\n' "$((i + 1))" "$p" >&2
		sed 's/^/   | /' "$LOGS/patch.log" | grep -v 'hint:' >&2 || true
		[ "$p" = "?" ] || show_failing_hunk "$PATCHES/$p"
		git_tree am --abort >/dev/null 2>&1 || true
		git_tree reset -q --hard baseline
		die "series stopped at $p; the tree is back at the baseline"
	fi
	echo "$key" >"$SERIES_STAMP"
	info "applied $n patches"
}

tree_version() {
	info "tree version: $(make -s -C "$TREE" kernelversion 2>/dev/null)"
	git_tree log --format='   applied: %s' --reverse baseline..HEAD
}

case ${1:-all} in
all)
	phase unpack unpack
	phase patch apply_series
	tree_version
	;;
key)
	series_key
	;;
*) die "usage: $0 [all|key]" ;;
esac
