#!/usr/bin/env python3
"""Print the compiler warnings of LOG that point at lines a diff added.

Usage: git diff -U0 A B | added-lines-warnings.py LOG
Pre-existing warnings of the base tree are not ours to fix; warnings in
lines the series added are.
"""
import re
import sys

added = {}
path = None
for line in sys.stdin:
    if line.startswith("+++ "):
        path = line[6:].strip() if line.startswith("+++ b/") else None
    m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
    if m and path:
        start, count = int(m.group(1)), int(m.group(2) or 1)
        added.setdefault(path, set()).update(range(start, start + count))

warn = re.compile(r"^(?:\.\./)*(?:.*/linux/)?([^:\s]+):(\d+):(?:\d+:)? (warning|error): ")
with open(sys.argv[1], errors="replace") as log:
    for line in log:
        m = warn.match(line)
        if m and int(m.group(2)) in added.get(m.group(1), ()):
            print(line.rstrip())
