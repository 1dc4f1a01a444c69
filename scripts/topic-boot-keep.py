#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The rows scripts/topic-boot.sh NNNN... keeps from an earlier run: every
prefix of the plan it does not rerun must have a row in the earlier table
(build/bisect/boot.md) of the same series that still stands for today's
tests, or nothing is run at all.

  topic-boot-keep.py TOP TABLE KEYS RERUN PLAN-FILE

RERUN: the prefixes to run again (comma-separated). KEYS: the file of
"NNNN FINGERPRINT" lines topic-boot.sh writes after each run (the
fingerprint of the tests, harness and kernel configuration the row ran
with, scripts/topic-boot.sh fingerprint()); CURRENT fingerprints come on
stdin as "NNNN FINGERPRINT". A row is kept only when
  - it passed (no "**"), with the areas the plan runs now;
  - its count "N passed, N failed, N skipped" adds up to the sum of the
    areas' tests/AREA/expected today;
  - its fingerprint is today's; a row from before fingerprints (none in
    KEYS) is kept on the count alone, and shows its date.
Prints one line per kept prefix, "NNNN<TAB>RESULT<TAB>DATE" (the topics
and notes cells come from today's plan); exits 1 naming every row that
cannot be kept.
"""
import os
import re
import sys


def expected(top, area):
    for line in open(os.path.join(top, "tests", area, "expected")):
        line = line.split("#", 1)[0].strip()
        if line:
            return int(line)
    raise SystemExit(f"tests/{area}/expected holds no number")


def main():
    top, table, keys_path, rerun, plan_path = sys.argv[1:6]
    rerun = set(x for x in rerun.split(",") if x)
    lines = open(table).read().splitlines()
    date = lines[0].split()[2]
    rows = {}
    for l in lines[1:]:
        m = re.match(r"^\| (\d{4}) \|", l)
        if m:
            cells = [c.strip() for c in l.strip().strip("|").split("|")]
            rows[m.group(1)] = (cells[2], cells[4] if len(cells) >= 5 else date)
    keys = {}
    if os.path.exists(keys_path):
        for l in open(keys_path):
            if l.strip():
                n, fp = l.split()
                keys[n] = fp
    now = dict(l.split() for l in sys.stdin if l.strip())
    bad = []
    for l in open(plan_path):
        num, _topics, areas, notes, _lacks = l.rstrip("\n").split("\t")
        if num in rerun or "the whole series" in notes:
            continue
        if num not in rows:
            bad.append(f"{num}: no row in {table}")
            continue
        result, when = rows[num]
        if "**" in result:
            bad.append(f"{num}: its row failed ({result})")
            continue
        if areas == "-":
            if result != "boots":
                bad.append(f"{num}: its row ran areas ({result}); the plan runs none")
                continue
        else:
            m = re.fullmatch(r"boots; (\S+): (\d+) passed, (\d+) failed, (\d+) skipped", result)
            if not m or m.group(1) != areas:
                bad.append(f"{num}: its row ({result}) is not a passing run of {areas}")
                continue
            want = sum(expected(top, a) for a in areas.split(","))
            got = sum(int(m.group(i)) for i in (2, 3, 4))
            if got != want:
                bad.append(f"{num}: its row counted {got} results; {areas} expect {want} today")
                continue
        if num in keys and keys[num] != now.get(num):
            bad.append(f"{num}: the tests, harness or kernel configuration changed since its run")
            continue
        print(f"{num}\t{result}\t{when}")
    if bad:
        for b in bad:
            print(f"cannot keep {b}: rerun it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
