# SPDX-License-Identifier: GPL-2.0
"""TAP for the host-side test programs (tests/harness, tests/outgoing,
tests/debian-config): tap() prints one numbered result and its
diagnostics, one "# " line per line; results holds each outcome, for the
plan ("1..N", printed last) and the exit status."""

results = []


def tap(ok, name, diag=()):
    results.append(ok)
    print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}", flush=True)
    if not ok:
        for line in diag:
            for part in str(line).splitlines():
                print(f"# {part}", flush=True)
