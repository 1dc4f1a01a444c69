#!/bin/bash
# checkpatch.sh: scripts/checkpatch.pl --strict on every patch in the
# series. Clean means no error, no warning and no check; exceptions are
# listed in patches/checkpatch-exceptions (patch name and message type,
# with the reason in a comment) and documented in the README.
. "$(dirname "$0")/lib.sh"

[ -x "$TREE/scripts/checkpatch.pl" ] || "$TOP/scripts/tree.sh" >/dev/null
exc=$TOP/patches/checkpatch-exceptions
bad=0 n=0
while read -r p; do
	n=$((n + 1))
	ignore=$(awk -v p="$p" '$1 == p { printf "%s,", $2 }' "$exc" 2>/dev/null || true)
	out=$("$TREE/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
		${ignore:+--ignore "${ignore%,}"} "$TOP/patches/$p" 2>&1) || true
	if printf '%s\n' "$out" | grep -qE ': (ERROR|WARNING|CHECK):'; then
		printf 'checkpatch: %s\n' "$p"
		printf '%s\n' "$out" | grep -E ': (ERROR|WARNING|CHECK):' | sed 's/^/   | /'
		bad=$((bad + 1))
	fi
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/patches/series")
[ $bad -eq 0 ] || die "$bad of $n patches are not checkpatch --strict clean"
info "checkpatch --strict: all $n patches clean"
