# shellcheck shell=bash
# Shared helpers for the host-side pipeline scripts: paths, phase timing,
# log handling. Sourced, never run.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}
LOGS=$BUILD/logs
# The Debian package the series is made for.
SRC_PKG=linux-source-6.1
SRC_TARBALL=/usr/src/linux-source-6.1.tar.xz
SRC_WANT_VERSION=6.1.192
JOBS=${JOBS:-$(nproc)}
mkdir -p "$BUILD" "$LOGS"

# The environment and make variables of every kernel build (kbuild_env;
# scripts/build.sh, scripts/bisect-check.sh): ccache compiles (target and
# host), a version string that does not change between builds (so that
# ccache hits across them), and an nm that loads no LTO plugin. GNU nm
# tries each plugin in bfd-plugins on every file it opens, to see whether
# it is LTO bitcode; where clang is installed one of them is LLVMgold,
# which loads libLLVM: 80 ms per nm. Kbuild runs nm on every object it
# compiles (scripts/check-local-export), a third of each object's cost
# when ccache serves it. Given --plugin, nm loads only that one: binutils'
# own libdep, which claims no object file. nm's output is the same.
# Host programs (HOSTCC) are compiled without ccache's depend mode (below):
# their -MMD lists no system header, so depend mode would not see a
# changed /usr/include.
# LOCALVERSION set (empty): the release is 6.1.192 in every tree, a git
# worktree or not (scripts/setlocalversion appends "+" to a git tree's
# otherwise), so the objects that include it are the same in all of them.
KBUILD_HOSTCC="env -u CCACHE_DEPEND ccache gcc"
# CC: ccache, but never for an assembler source that .incbin's (scripts/kcc).
KBUILD_ARGS=(CC="$TOP/scripts/kcc gcc" HOSTCC="$KBUILD_HOSTCC" LOCALVERSION=)
BFD_LIBDEP=/usr/lib/x86_64-linux-gnu/bfd-plugins/libdep.so
if [ -f "$BFD_LIBDEP" ]; then
	KBUILD_ARGS+=(NM="nm --plugin $BFD_LIBDEP")
fi

# ccache's depend mode (CCACHE_NODEPEND set turns it off): on a miss, ccache
# otherwise runs the preprocessor once to hash its output and then the
# compiler, which preprocesses again. In depend mode it hashes the headers
# the compiler's own dependency file lists (Kbuild passes -Wp,-MMD) and
# never runs the preprocessor; a hit is found as in direct mode, which
# already served every hit (ccache -s). The kernel is compiled with
# -nostdinc: every header it reads is in the dependency file. fs/ (226
# objects) with an empty cache, three runs each: 111, 116 and 122 s
# against 126, 134 and 154 s; warm, both 21-22 s, all hits either way.
kbuild_env() {
	export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
	[ -n "${CCACHE_NODEPEND+set}" ] || export CCACHE_DEPEND=1
	export KBUILD_BUILD_TIMESTAMP="pipeline" KBUILD_BUILD_USER=pipeline KBUILD_BUILD_HOST=qemu
}

# cache_dir NAME VAR: the directory of one of the caches kept outside the
# clone, like ccache's (the kernels, the packages, the Debian image): $VAR
# when it is set, else /var/cache/mw517/NAME, else, when that cannot be
# made or written, ~/.cache/mw517/NAME.
cache_dir() {
	local d=${!2:-/var/cache/mw517/$1}
	if [ -z "${!2:-}" ] && ! { mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; }; then
		d=${XDG_CACHE_HOME:-$HOME/.cache}/mw517/$1
	fi
	echo "$d"
}

# file_holds FILE PART: FILE contains PART's bytes.
file_holds() {
	python3 -c 'import sys; sys.exit(open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read()) < 0)' "$1" "$2"
}

# piggy_holds_kernel OBJ: bzImage's piggy.o holds the compressed kernel
# this build made (the file piggy.S .incbin's; scripts/kcc says why this
# is checked).
piggy_holds_kernel() {
	local d=$1/arch/x86/boot/compressed z
	z=$(sed -n 's/^[[:space:]]*\.incbin "\(.*\)"/\1/p' "$d/piggy.S" 2>/dev/null)
	[ -n "$z" ] && [ -f "$1/$z" ] && file_holds "$d/piggy.o" "$1/$z"
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

info() {
	printf '   %s\n' "$*"
}

# phase NAME CMD...: one line when the phase starts, its duration when it
# ends. A failing phase reports its status; output handling is the caller's.
phase() {
	local name=$1 t0 rc
	shift
	printf '>> %-8s ...\n' "$name"
	t0=$(date +%s.%N)
	set +e
	"$@"
	rc=$?
	set -e
	t0=$(echo "$(date +%s.%N) - $t0" | bc)
	printf '<< %-8s %s (%.1fs)\n' "$name" \
		"$([ $rc -eq 0 ] && echo done || echo "FAILED ($rc)")" "$t0"
	# For the time table at the end of make check (scripts/run-tests.sh).
	printf '%s\t%.1f\t%s\n' "$name" "$t0" "$rc" >>"$LOGS/phase-times.tsv"
	return $rc
}

# logged LOG CMD...: run CMD with all output in LOG; on failure show the
# last lines and the log's path.
logged() {
	local log=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		printf '   --- last lines of %s ---\n' "$log" >&2
		tail -n 25 "$log" | sed 's/^/   | /' >&2
		printf '   --- full log: %s\n' "$log" >&2
		return 1
	fi
}

# Refuse to continue when the disk is nearly full: a kernel build needs
# a few GiB and a full disk produces confusing errors late.
check_disk() {
	local need_kb=$1 avail
	avail=$(df -Pk "$BUILD" | awk 'NR==2 {print $4}')
	if [ "$avail" -lt "$need_kb" ]; then
		die "only $((avail / 1024)) MiB free under $BUILD, need $((need_kb / 1024)) MiB"
	fi
}

# worktree_add DIR COMMIT: (re)make DIR a detached git worktree of the
# tree at COMMIT. Writing the tree's ~80,000 files took 25-29 s with one
# checkout worker and 19 s with one per core (checkout.workers=0).
worktree_add() {
	rm -rf "$1"
	git -C "$TREE" worktree prune
	git -C "$TREE" -c checkout.workers=0 worktree add -q --detach "$1" "$2" >&2
}

# tree_key DIR: what the files of the git tree DIR hold: its HEAD and a
# hash of what its files hold that HEAD does not (git diff, untracked
# files). Kernels are built from the files as they are.
tree_key() {
	local head sum
	head=$(git -C "$1" rev-parse HEAD) || return 1
	sum=$({
		git -C "$1" diff --no-ext-diff --no-textconv --binary HEAD || echo "diff failed $RANDOM"
		git -C "$1" ls-files -z --others --exclude-standard |
			(cd "$1" && xargs -0 -r sha256sum --)
	} | sha256sum | cut -d' ' -f1)
	echo "$head $sum"
}

# variant_tree patched|baseline|series-NNNN|without-SPEC: the source
# tree a kernel variant builds from. The baseline is a git worktree of the
# unpatched tree, series-NNNN one of the tree with the series applied up to
# patch NNNN, without-SPEC one with the whole series but the patches SPEC
# names (NNNN-MMMM ranges and NNNN numbers joined by "+");
# both are made on demand (the benchmark's unpatched kernel, the ABI
# tests' kernel from before the SMBus 3.0 patches).
variant_tree() {
	case $1 in
	patched) echo "$TREE" ;;
	series-[0-9][0-9][0-9][0-9])
		local n=$((10#${1#series-})) commit wt=$BUILD/linux-$1
		commit=$(git -C "$TREE" rev-list --reverse baseline..HEAD | sed -n "${n}p")
		[ -n "$commit" ] || die "tree '$1': the series has fewer than $n patches"
		if [ ! -f "$wt/Makefile" ] || [ "$(git -C "$wt" rev-parse HEAD 2>/dev/null)" != "$commit" ]; then
			worktree_add "$wt" "$commit"
		fi
		echo "$wt"
		;;
	without-[0-9]*)
		# The whole series but the patches SPEC names (without-SPEC,
		# SPEC: NNNN-MMMM ranges and NNNN numbers joined by "+", e.g.
		# without-0013-0018+0024): a copy of the test kernel's tree, the
		# files as they are there (mtimes kept, no .git, no objects),
		# with those patches reverted, last first; the files the revert
		# wrote are listed in DIR.changed. The tree then differs from
		# the test kernel's only in those files, and config.sh can start
		# its build from the test kernel's objects. Made again when the
		# test kernel's tree changes: its HEAD, or what its files hold
		# that HEAD does not (the test kernel is built from the files as
		# they are, and a stale copy would mix two versions of a header
		# in one kernel).
		local spec=${1#without-} wt=$BUILD/linux-$1 key part lo hi i c
		local commits=() skip=()
		key=$(tree_key "$TREE") || die "tree '$1': cannot read the state of $TREE"
		if [ ! -f "$wt/Makefile" ] || [ ! -f "$wt.changed" ] ||
			[ "$(cat "$wt.head" 2>/dev/null)" != "$key" ]; then
			mapfile -t commits < <(git -C "$TREE" rev-list --reverse baseline..HEAD)
			for part in ${spec//+/ }; do
				case $part in
				[0-9][0-9][0-9][0-9]) lo=$((10#$part)) hi=$lo ;;
				[0-9][0-9][0-9][0-9]-[0-9][0-9][0-9][0-9])
					lo=$((10#${part%-*})) hi=$((10#${part#*-})) ;;
				*) die "tree '$1': bad patch range '$part'" ;;
				esac
				[ "$lo" -ge 1 ] && [ "$lo" -le "$hi" ] && [ "${#commits[@]}" -ge "$hi" ] ||
					die "tree '$1': the series has ${#commits[@]} patches"
				for ((i = lo; i <= hi; i++)); do skip[i]=1; done
			done
			rm -rf "$wt" "$wt.head" "$wt.changed"
			git -C "$TREE" worktree prune
			mkdir -p "$wt"
			find "$TREE" -mindepth 1 -maxdepth 1 ! -name .git ! -name 'obj-*' \
				-exec cp -a -t "$wt" {} + || die "tree '$1': cannot copy $TREE"
			for ((i = ${#commits[@]}; i >= 1; i--)); do
				[ -n "${skip[i]:-}" ] || continue
				c=${commits[i - 1]}
				git -C "$TREE" diff-tree -r --no-renames --name-only --no-commit-id "$c" >>"$wt.changed" ||
					die "tree '$1': cannot list patch $(printf %04d "$i")'s files"
				# --git-dir: without it, git apply would find the
				# enclosing repository of the build directory and skip
				# every path outside the current directory, silently.
				# No --index: $TREE's index stays as it is.
				git -C "$TREE" diff-tree -p --binary --no-renames --no-commit-id "$c" |
					(cd "$wt" && git --git-dir="$TREE/.git" --work-tree=. apply -R --whitespace=nowarn) ||
					die "tree '$1': patch $(printf %04d "$i") does not revert from the test kernel's tree (does a later patch depend on it?)"
			done
			sort -u -o "$wt.changed" "$wt.changed" || die "tree '$1': cannot write $wt.changed"
			echo "$key" >"$wt.head" || die "tree '$1': cannot write $wt.head"
		fi
		echo "$wt"
		;;
	baseline)
		if [ ! -f "$BUILD/linux-baseline/Makefile" ] ||
			[ "$(git -C "$BUILD/linux-baseline" rev-parse HEAD 2>/dev/null)" != \
				"$(git -C "$TREE" rev-parse baseline)" ]; then
			worktree_add "$BUILD/linux-baseline" baseline
		fi
		echo "$BUILD/linux-baseline"
		;;
	mutant)
		# made and reset by scripts/mutants.sh
		[ -f "$BUILD/linux-mutant/Makefile" ] || die "no mutant tree (run: make mutants)"
		echo "$BUILD/linux-mutant"
		;;
	*) die "unknown tree '$1'" ;;
	esac
}

# variant_line VARIANT: the variant's line of kconfig/variants (name, tree,
# fragments). A variant series-NNNN need not be listed: it is the series up
# to patch NNNN in the test kernel's configuration (make bisect-check boots
# each topic's last patch on it).
variant_line() {
	local line frags
	line=$(awk -v v="$1" '$1 == v' "$TOP/kconfig/variants")
	if [ -z "$line" ] && [[ $1 =~ ^series-[0-9]{4}$ ]]; then
		read -r _ _ frags < <(awk '$1 == "test"' "$TOP/kconfig/variants")
		line="$1 $1 $frags"
	fi
	[ -n "$line" ] || die "unknown kernel variant '$1' (see kconfig/variants)"
	echo "$line"
}

# variant_obj VARIANT: the object directory of a kernel variant, made on
# demand. It is the directory obj-VARIANT directly inside the variant's
# source tree, so that Kbuild names every source and include path relative
# to it ("../fs/namei.c", "-I../include"): compiler command lines are then
# the same for every tree (the series, a prefix of it, a mutant), and
# ccache serves an object already compiled in any of them. build/obj-VARIANT
# is a symbolic link to it, the path everything else uses.
variant_obj() {
	local variant=$1 line which src
	line=$(variant_line "$variant")
	read -r _ which _ <<<"$line"
	src=$(variant_tree "$which")
	mkdir -p "$src/obj-$variant"
	if [ "$(readlink "$BUILD/obj-$variant" 2>/dev/null)" != "$src/obj-$variant" ]; then
		rm -rf "$BUILD/obj-$variant"
		ln -s "$src/obj-$variant" "$BUILD/obj-$variant"
	fi
	echo "$src/obj-$variant"
}
