#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Run the tree's tdc.py (in the current directory, with this program's
arguments), executing a command that is only an absolute path and plain
words directly rather than through /bin/sh.

tdc runs each setup, test, verify and teardown command as
subprocess.Popen(command, shell=True): /bin/sh -c, and dash then forks
and execs the program. Under TCG with the test kernel an exec costs about
0.15 s, and tdc's cases in make check run ~470 commands. Here a command
without a character the shell would interpret (quotes, expansions,
redirections, pipes, globs, comments, ...) whose first word is an
executable absolute path ($TC and $IP are) gets the same words as argv,
the same environment and pipes, and so the same output and exit status,
with one exec fewer. Every other command goes through the shell as tdc
wrote it. The counts go to stderr at exit.
"""
import atexit
import os
import runpy
import subprocess
import sys

SHELL_CHARS = set("|&;<>()$`\\\"'*?[]#~{}!=\n")
counts = {"direct": 0, "shell": 0}


def plain_argv(command):
    """The argv a plain command means, or None if the shell must run it."""
    if not isinstance(command, str) or SHELL_CHARS & set(command):
        return None
    words = command.split()
    if not words or not words[0].startswith("/") or not os.access(words[0], os.X_OK):
        return None
    return words


class Popen(subprocess.Popen):
    def __init__(self, args, *rest, shell=False, **kw):
        if shell:
            argv = plain_argv(args)
            counts["direct" if argv else "shell"] += 1
            if argv:
                args, shell = argv, False
        super().__init__(args, *rest, shell=shell, **kw)


def report():
    print(f"# tdc_direct: {counts['direct']} commands run directly, "
          f"{counts['shell']} through /bin/sh", file=sys.stderr)


if __name__ == "__main__":
    subprocess.Popen = Popen
    atexit.register(report)
    sys.path.insert(0, os.getcwd())
    sys.argv[0] = "tdc.py"
    runpy.run_path("tdc.py", run_name="__main__")
