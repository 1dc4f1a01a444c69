#!/bin/bash
# scan-console.sh LOG...: fail, naming the first offending lines, when a
# console log holds a kernel report: BUG, WARNING, KASAN, a kmemleak leak,
# a lockdep splat, an Oops, a panic or a call trace. Tests passing does
# not excuse a splat.
set -uo pipefail
pattern='BUG:|WARNING:|KASAN:|UBSAN:|unreferenced object 0x|new suspected memory leaks|possible recursive locking|possible circular locking|inconsistent lock state|suspicious RCU usage|Oops|Kernel panic|Call Trace:|general protection fault|list_add corruption|list_del corruption'
bad=0
for log in "$@"; do
	hits=$(grep -nE "$pattern" "$log" | head -n 8)
	[ -z "$hits" ] && continue
	bad=1
	printf 'error: kernel report in %s:\n' "$log" >&2
	printf '%s\n' "$hits" | sed 's/^/   | /' >&2
done
exit $bad
