#!/usr/bin/env python3
"""tests/lib/kmsg.py's own test, in the guest (tests/tc-lifetime runs it
after its own tests): the per-test check for kernel reports must find a
report in a full ring buffer, not blame one from before on the test, and
say so when the buffer wraps over a test's records before they are read.
Each check is made against the old one too (the dmesg lines after the line
count seen before the test), which must miss the report here: that shows
the buffer was full. The records are written to /dev/kmsg at level 7
(debug: below the console's level, so the console and its scan never see
them), and the stand-in for a report is a word of their own, not one the
real checks look for."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kmsg  # noqa: E402
from cases import run_case  # noqa: E402

STANDIN = "KMSGTEST-REPORT"
REPORT = re.compile(STANDIN)
# Long records, so that a few hundred fill the buffer (a record holds up
# to 1,024 bytes).
FILLER = "kmsg_test: filler " + "x" * 900
TESTS = []


def test(fn):
    TESTS.append((fn.__name__, fn))
    return fn


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def write(text):
    # A file of its own per record: /dev/kmsg lets one open file write
    # 10 records per 5 s (printk.devkmsg=ratelimit, the default). The
    # newline ends the record: without it the kernel keeps the record
    # open for a continuation, and readers do not see it yet.
    fd = os.open(kmsg.KMSG, os.O_WRONLY)
    try:
        os.write(fd, f"<7>{text}\n".encode())
    finally:
        os.close(fd)


def fill_past(seq):
    """Write fillers until the record numbered seq is out of the buffer;
    the number written."""
    n = 0
    while kmsg.records()[0][0] <= seq:
        for _ in range(20):
            write(f"{FILLER} {n}")
            n += 1
        expect(n < 200000, f"the ring buffer still holds record {seq} after {n} fillers")
    return n


def dmesg_lines():
    """The old check's view: dmesg's lines, sliced at a count seen before."""
    return subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout.splitlines()


@test
def filling_the_ring_buffer_drops_its_oldest_records(_):
    before = kmsg.records()
    n = fill_past(before[-1][0])
    after = kmsg.records()
    expect(after[0][0] > before[-1][0] and all(FILLER in t for _, t in after),
           f"after {n} fillers the buffer holds records {after[0][0]}..{after[-1][0]}, "
           f"not only fillers after {before[-1][0]}")
    print(f"# {n} fillers of {len(FILLER)} bytes pushed out every earlier record; the buffer "
          f"holds {len(after)}", flush=True)


@test
def a_report_in_a_full_buffer_is_found_where_the_line_count_misses_it(_):
    seen, mark = len(dmesg_lines()), kmsg.last_seq()
    write(f"kmsg_test: {STANDIN} early in the test")
    for i in range(20):
        write(f"{FILLER} after the report {i}")
    old = [x for x in dmesg_lines()[seen:] if STANDIN in x]
    expect(not old, f"the buffer was not full: the old check saw the report: {old}")
    problems = kmsg.reports_since(mark, REPORT)
    expect(len(problems) == 1 and problems[0].startswith("kernel report while it ran:")
           and "early in the test" in problems[0],
           f"wanted the report, no record lost: {problems}")


@test
def a_report_from_before_the_mark_is_not_the_tests(_):
    write(f"kmsg_test: {STANDIN} before the test")
    mark = kmsg.last_seq()
    for i in range(5):
        write(f"{FILLER} in the test {i}")
    problems = kmsg.reports_since(mark, REPORT)
    expect(not problems, f"blamed on the test: {problems}")


@test
def records_the_buffer_wrapped_over_during_a_test_are_said_lost(_):
    seen, mark = len(dmesg_lines()), kmsg.last_seq()
    write(f"kmsg_test: {STANDIN} then the buffer wraps")
    n = fill_past(kmsg.records()[-1][0])
    old = [x for x in dmesg_lines()[seen:] if STANDIN in x]
    expect(not old, f"the old check saw the report: {old}")
    problems = kmsg.reports_since(mark, REPORT)
    expect(len(problems) == 1 and re.match(r"^\d+ kernel log record\(s\) lost, numbers "
                                           rf"{mark + 1}\.\.\d+: ", problems[0]),
           f"wanted the records after {mark} said lost ({n} fillers): {problems}")
    print(f"# {problems[0]}", flush=True)


def main():
    print(f"1..{len(TESTS)}", flush=True)
    for n, (name, fn) in enumerate(TESTS, start=1):
        run_case(n, name, fn, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
