#!/bin/bash
# scan-console.sh LOG...: fail, naming the first offending lines, when a
# console log holds a kernel report: BUG, WARNING, KASAN, a kmemleak leak,
# a lockdep splat, an Oops, a panic or a call trace. Tests passing does
# not excuse a splat. A log that is missing or empty fails too: a guest
# that printed nothing proves nothing. The first report is printed whole
# (up to 45 lines from its first line): a CI log must carry the trace, as
# the console files of a CI run are gone with its checkout.
set -uo pipefail
pattern='BUG:|WARNING:|KASAN:|UBSAN:|unreferenced object 0x|new suspected memory leaks|possible recursive locking|possible circular locking|inconsistent lock state|suspicious RCU usage|Oops|Kernel panic|Call Trace:|general protection fault|list_add corruption|list_del corruption'
bad=0
for log in "$@"; do
	if [ ! -f "$log" ]; then
		printf 'error: no console log: %s does not exist\n' "$log" >&2
		bad=1
		continue
	fi
	if [ ! -s "$log" ]; then
		printf 'error: the console log %s is empty\n' "$log" >&2
		bad=1
		continue
	fi
	hits=$(grep -naE "$pattern" "$log" | head -n 8)
	[ -z "$hits" ] && continue
	bad=1
	printf 'error: kernel report in %s:\n' "$log" >&2
	printf '%s\n' "$hits" | sed 's/^/   | /' >&2
	first=$(printf '%s\n' "$hits" | head -n 1 | cut -d: -f1)
	printf 'the first report, from line %s:\n' "$first" >&2
	sed -n "${first},$((first + 44))p" "$log" | sed 's/^/   > /' >&2
done
exit $bad
