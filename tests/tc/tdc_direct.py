#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Run the tree's tdc.py (in the current directory, with this program's
arguments), executing a command that is only an absolute path and plain
words directly rather than through /bin/sh.

tdc runs each setup, test, verify and teardown command as
subprocess.Popen(command, shell=True): /bin/sh -c, and dash then forks
and execs the program. Under TCG with the test kernel an exec costs about
0.15 s, and make check's tdc cases run 470 commands. Here a command made
only of letters, digits, spaces, tabs and "_./:,+@%^=-" (so nothing the
shell would interpret: no quotes, expansions, redirections, pipes, globs
or comments) whose first word is an executable absolute path ($TC, $IP,
nsPlugin's ip) is given to exec as the words dash would make of it, with
the same pipes and environment (dash would add PWD, which tc and ip do
not read), and so the same output and exit status, with one exec fewer.
A command that exec refuses, and every other command, goes through the
shell as tdc wrote it. The counts go to stderr at exit.
"""
import atexit
import os
import re
import runpy
import subprocess
import sys

PLAIN = re.compile(r"[A-Za-z0-9_./:,+@%^= \t-]+")
counts = {"direct": 0, "shell": 0}


def plain_argv(command):
    """The argv a plain command means, or None if the shell must run it."""
    if not isinstance(command, str) or not PLAIN.fullmatch(command):
        return None
    words = [w for w in re.split("[ \t]+", command) if w]
    if not words or not words[0].startswith("/") or not os.path.isfile(words[0]) \
            or not os.access(words[0], os.X_OK):
        return None
    return words


class Popen(subprocess.Popen):
    def __init__(self, args, *rest, shell=False, **kw):
        argv = plain_argv(args) if shell and not rest and "executable" not in kw else None
        if argv:
            try:
                super().__init__(argv, shell=False, **kw)
                counts["direct"] += 1
                return
            except OSError:
                pass  # what exec refuses, the shell reports (126, 127)
        if shell:
            counts["shell"] += 1
        super().__init__(args, *rest, shell=shell, **kw)


def report():
    print(f"# tdc_direct: {counts['direct']} commands run directly, "
          f"{counts['shell']} through /bin/sh", file=sys.stderr)


if __name__ == "__main__":
    subprocess.Popen = Popen
    atexit.register(report)
    sys.path[0] = os.getcwd()  # as for python3 ./tdc.py
    sys.argv[0] = "tdc.py"
    runpy.run_path("tdc.py", run_name="__main__")
