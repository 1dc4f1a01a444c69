#!/bin/bash
# outgoing.sh: what `git send-email` would send, per topic, under
# build/outgoing/TOPIC/ (make outgoing): a cover letter and the topic's
# patches as [PATCH n/m], base-commit and prerequisite-patch-id lines,
# To/Cc from the tree's scripts/get_maintainer.pl. Topics are declared in
# patches/topics, cover texts in patches/covers/TOPIC; the patches come
# from patches/*.patch, applied in a scratch repository onto build/linux's
# tag baseline (build/linux itself is only read). Nothing is sent.
# See scripts/outgoing.py for the checks; tests/outgoing runs this in
# make check.
#
# Environment: OUTGOING_OUT (default build/outgoing), OUTGOING_TOPICS
# (default patches/topics), TREE (default build/linux).
. "$(dirname "$0")/lib.sh"

git -C "$TREE" rev-parse -q --verify 'refs/tags/baseline^{commit}' >/dev/null ||
	die "$TREE has no baseline (run: make tree)"
OUT=${OUTGOING_OUT:-$BUILD/outgoing}
python3 "$TOP/scripts/outgoing.py" --tree "$TREE" --out "$OUT" \
	--topics "${OUTGOING_TOPICS:-$TOP/patches/topics}" "$@" ||
	die "make outgoing failed (see above)"
info "outgoing patch sets: $OUT/TOPIC/ (review, then git send-email $OUT/TOPIC/*.patch)"
