"""The kernel's log records written while a test ran, by /dev/kmsg
sequence number (tests/tc-lifetime, ovs, runtimes: each test's check for
kernel reports).

Slicing dmesg's output at the line count seen before a test misses
records once the ring buffer is full: each new record pushes old ones
out, the count stays put, and the slice holds only the last few lines, not
the test's first ones (a report among them goes unseen). Every record has
a sequence number instead, one more than the one before; records after a
mark are those with a larger number, whatever the buffer dropped, and a
number missing between them means the buffer wrapped over records before
they were read: that is said, not passed over.

    mark = kmsg.last_seq()                 # before the test
    ...                                    # the test
    problems = kmsg.reports_since(mark)    # after it: [] or why it fails
"""
import os
import re

KMSG = "/dev/kmsg"
# What counts as a kernel report in a test's records.
REPORT = re.compile(r"WARNING:|BUG:|KASAN|Oops|refcount_t:|kmemleak")


def records(path=KMSG):
    """The records the ring buffer holds now, oldest first: [(seq, text)].
    /dev/kmsg gives one record per read(), "PRIO,SEQ,USEC,FLAGS;TEXT\\n"
    then " KEY=value" lines; opened non-blocking, a read with nothing left
    fails with EAGAIN. EPIPE: the record due next was overwritten while we
    read, and the next read goes on at the oldest left (the gap in the
    numbers shows it)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    out = []
    try:
        while True:
            try:
                b = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            if not b:
                break
            head, _, body = b.decode(errors="replace").partition(";")
            out.append((int(head.split(",")[1]), body.split("\n", 1)[0]))
    finally:
        os.close(fd)
    return out


def last_seq(path=KMSG):
    """The sequence number of the newest record (-1 when there is none)."""
    recs = records(path)
    return recs[-1][0] if recs else -1


def since(mark, path=KMSG):
    """(records, lost): the records numbered after mark, and the problems
    of numbers missing among them (records the buffer dropped unread)."""
    new = [(s, t) for s, t in records(path) if s > mark]
    lost, want = [], mark + 1
    for s, _ in new:
        if s != want:
            lost.append(f"{s - want} kernel log record(s) lost, numbers {want}..{s - 1}: the "
                        "ring buffer wrapped over them before they were read, and a kernel "
                        "report among them would go unseen")
        want = s + 1
    return new, lost


def reports_since(mark, report=REPORT, path=KMSG):
    """Why a test fails on its kernel log: records lost since mark, and
    the reports among the records after it ([] when neither)."""
    new, lost = since(mark, path)
    reports = [t for _, t in new if report.search(t)]
    if reports:
        lost.append("kernel report while it ran:\n" + "\n".join(reports[:20]))
    return lost
