#!/usr/bin/env python3
"""Collect test results into one flat TAP stream and count them.

  results.py tap AREA FILE       a guest suite's TAP/KTAP output
  results.py kunit AREA CONSOLE  KUnit's KTAP from a console log

Each prints "ok N - AREA: name" lines (SKIP directives kept) on stdout.
A plan that promises more results than arrived is a failure, and so is a
file with no results at all: a suite that crashed half-way never passes.
"""
import re
import sys

# Directives are case-insensitive; tdc writes "# skipped - reason".
RESULT = re.compile(r"^(not ok|ok) \d+(?: - | )?(.*?)(?:\s*#\s*((?i:skip|todo))\w*\s*(?:- )?(.*))?$")
STAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")


def emit(area, ok, name, directive=None, reason=""):
    line = f"{'ok' if ok else 'not ok'} - {area}: {name}"
    if directive:
        line += f" # {directive} {reason}".rstrip()
    print(line)


def from_tap(area, path):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as e:
        emit(area, False, f"results file missing ({e.strerror})")
        return
    plan, seen, running = None, 0, ""
    for line in lines:
        r = re.match(r"^#\s+RUN\s+(\S+)", line)
        if r:  # the 6.1 harness names skipped tests only here
            running = r.group(1)
            continue
        if re.match(r"^1\.\.\d+", line):
            plan = (plan or 0) + int(line[3:].split()[0])
            continue
        m = RESULT.match(line)
        if not m:
            continue
        seen += 1
        emit(area, m.group(1) == "ok", m.group(2) or running or f"test {seen}",
             m.group(3) and m.group(3).upper(), m.group(4) or "")
    if seen == 0:
        emit(area, False, "no test results (suite did not run)")
    elif plan is not None and seen < plan:
        emit(area, False, f"only {seen} of {plan} planned tests reported (crash or hang?)")


def from_kunit(area, path):
    """KUnit test cases are the results one level below the suites."""
    suites, cases = 0, 0
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as e:
        emit(area, False, f"console log missing ({e.strerror})")
        return
    suite = None
    for raw in lines:
        line = STAMP.sub("", raw)
        m = re.match(r"^\s*# Subtest: (\S+)", line)
        if m and line.startswith("    "):
            suite = m.group(1)
            continue
        indent = len(line) - len(line.lstrip(" "))
        m = RESULT.match(line.strip())
        if not m:
            continue
        if indent == 0:
            suites += 1
        elif indent == 4 and suite:
            cases += 1
            emit(area, m.group(1) == "ok", f"{suite}.{m.group(2)}", m.group(3), m.group(4) or "")
    if suites == 0 or cases == 0:
        emit(area, False, "no KUnit results on the console (KUnit not built in, or boot failed)")


kind, area, path = sys.argv[1:4]
{"tap": from_tap, "kunit": from_kunit}[kind](area, path)
