#!/bin/bash
# export-patches.sh: write the commits baseline..HEAD of the build tree
# back into patches/ and patches/series. Developers edit, rebase and
# commit in build/linux, then run this (make export-patches).
#
# Names are stable (NNNN-subject.patch), headers carry no commit ids and
# no git version, and a file is rewritten only when its content changed,
# so unchanged patches show no churn in git.
. "$(dirname "$0")/lib.sh"

PATCHES=$TOP/patches
git -C "$TREE" rev-parse -q --verify refs/tags/baseline >/dev/null ||
	die "$TREE has no baseline (run: make tree)"
[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] ||
	info "note: uncommitted changes in $TREE are not exported"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$TREE" format-patch -q --zero-commit --no-signature --no-numbered \
	-o "$tmp" baseline..HEAD || die "git format-patch failed"

mkdir -p "$PATCHES"
changed=0
: >"$tmp/series"
for f in "$tmp"/*.patch; do
	[ -e "$f" ] || continue
	b=$(basename "$f")
	echo "$b" >>"$tmp/series"
	if ! cmp -s "$f" "$PATCHES/$b"; then
		cp "$f" "$PATCHES/$b"
		info "wrote patches/$b"
		changed=$((changed + 1))
	fi
done
for f in "$PATCHES"/*.patch; do
	[ -e "$f" ] || continue
	grep -qxF "$(basename "$f")" "$tmp/series" && continue
	rm "$f"
	info "removed patches/$(basename "$f")"
	changed=$((changed + 1))
done
cmp -s "$tmp/series" "$PATCHES/series" || { cp "$tmp/series" "$PATCHES/series"; changed=$((changed + 1)); }
# The tree already holds exactly this series: record it, so the next
# build does not reset and re-apply it.
if [ "$TREE" = "$BUILD/linux" ]; then
	"$TOP/scripts/tree.sh" key >"$TREE/.git/pipeline-series"
fi
info "$(wc -l <"$PATCHES/series") patches in the series, $changed file(s) changed"
