#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The boots of make bisect-check (scripts/topic-boot.sh): for each topic
of patches/topics, the prefix of patches/series that ends at the topic's
last patch, and which of the topic's areas can run on it. An area runs
when every patch its tests/AREA/needs names is in the prefix; otherwise
the row says which patch it lacks. Topics whose last patch is the same
share a prefix (one kernel).

  topic-boot-plan.py TOP

Prints one tab-separated line per prefix, in series order:
  NNNN  TOPICS  AREAS-TO-RUN (comma-separated, or -)  NOTES (; -separated)
  LACKS
where NNNN is the prefix's last patch and LACKS the patches after it
(comma-separated, or -): the areas run with RUN_TESTS_LACKS set to them,
so a test of a later patch reports a skip for it (scripts/results.py's
LACKS). The whole series' prefix is marked in NOTES: make check runs its
areas on the test kernel.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outgoing import expand, read_series  # noqa: E402 - the same parsers as make outgoing


def lines(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]


def main():
    top = sys.argv[1]
    series = [l.split("-", 1)[0] for l in read_series(f"{top}/patches/series")]
    pos = {n: i for i, n in enumerate(series)}
    # The kernel variant series-NNNN is the series' first NNNN commits.
    for i, n in enumerate(series):
        if int(n) != i + 1:
            raise SystemExit(f"patches/series: patch {n} is number {i + 1} in the list")
    prefixes = {}  # last patch -> [(topic, areas)]
    for l in lines(f"{top}/patches/topics"):
        name, spec, _needs, areas = l.split()[:4]
        last = max(expand(spec), key=lambda n: pos[n])
        prefixes.setdefault(last, []).append((name, [] if areas == "-" else areas.split(",")))
    for last in sorted(prefixes, key=lambda n: pos[n]):
        topics = [t for t, _ in prefixes[last]]
        run, notes, seen = [], [], set()
        if pos[last] == len(series) - 1:
            notes.append("the whole series: make check runs the areas on the test kernel")
        for _, areas in prefixes[last]:
            for a in areas:
                if a in seen:
                    continue
                seen.add(a)
                path = f"{top}/tests/{a}/needs"
                if not os.path.exists(path):
                    raise SystemExit(f"tests/{a}/needs is missing (topic area of {topics})")
                want = expand(",".join(lines(path)))
                unknown = [n for n in want if n not in pos]
                if unknown:
                    raise SystemExit(f"tests/{a}/needs names {', '.join(unknown)}, "
                                     "not in patches/series")
                later = [n for n in want if pos[n] > pos[last]]
                if later:
                    notes.append(f"{a} not run: tests/{a}/needs {', '.join(later)}, after {last}")
                else:
                    run.append(a)
        if pos[last] == len(series) - 1:
            run = []
        lacks = series[pos[last] + 1:]
        print("\t".join([last, ",".join(topics), ",".join(run) or "-", "; ".join(notes) or "-",
                         ",".join(lacks) or "-"]))


if __name__ == "__main__":
    main()
