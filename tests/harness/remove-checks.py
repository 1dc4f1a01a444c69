#!/usr/bin/env python3
"""Each sabotage case of selftest.py seen failing when the harness check it
stands for is removed: for each mutation below, a copy of the committed
tree (git archive HEAD) with that check removed, and selftest.py run on
it; every mutation must make at least one of selftest.py's results fail.
Not part of make check (13 self-test runs, ~10 minutes): run it after
changing a check, scripts/results.py or scripts/run-tests.sh.

  tests/harness/remove-checks.py [NAME...]   (default: every mutation)
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, file, the check, what replaces it)
M = [
    ('declared area lacks its files', 'scripts/results.py',
     '            if not os.path.isfile(os.path.join(d, f)):',
     '            if False:'),
    ('undeclared area', 'scripts/results.py',
     '        if there:\n',
     '        if False:\n'),
    ('no status file', 'scripts/results.py',
     '            problems.append(f"no exit status from the guest ({p2}): it hung, panicked, "\n                            "or never booted")',
     '            pass'),
    ('vm.sh 124', 'scripts/results.py',
     '            problems.append(f"vm.sh exited with status {vm_rc}{why.get(vm_rc, \'\')}")',
     '            pass'),
    ('no .rc', 'scripts/results.py',
     '            problems.append(f"{p}: the program did not finish (guest.sh stopped while it ran?)")',
     '            pass'),
    ('indented Bail out', 'scripts/results.py',
     '        if line.lstrip().startswith("Bail out!"):',
     '        if line.startswith("Bail out!"):'),
    ('bare 1..0', 'scripts/results.py',
     '    if plan is not None and plan[0] == 0 and not skip_all:',
     '    if False:'),
    ('anchored skip patterns', 'scripts/results.py',
     'rx.fullmatch(reason)',
     'rx.search(reason)'),
    ('expected: a second number', 'scripts/results.py',
     '    if len(lines) > 1:',
     '    if False:'),
    ('expected: not a number', 'scripts/results.py',
     '    if not re.fullmatch(r"[0-9]+", lines[0]):',
     '    if False:'),
    ('skip-reasons missing', 'scripts/results.py',
     '            self.errors.append(f"{path}: {e.strerror}")',
     '            pass'),
    ('skip-reasons malformed', 'scripts/results.py',
     '                self.errors.append(f"{path}:{n}: not \'AREA /REGEX/\': {line}")',
     '                pass'),
    ('env RUN_TESTS_DIR/VM', 'scripts/run-tests.sh',
     '\t[ -z "${!v+set}" ] ||',
     '\ttrue ||'),
]


def main(only):
    failed = []
    with tempfile.TemporaryDirectory(prefix="remove-checks.") as tmp:
        for name, f, old, new in M:
            if only and name not in only:
                continue
            d = os.path.join(tmp, "tree")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            subprocess.run(f"git -C '{SRC}' archive HEAD | tar -C '{d}' -x", shell=True,
                           check=True)
            p = os.path.join(d, f)
            s = open(p).read()
            if s.count(old) != 1:
                print(f"== {name}: the check is not in {f} once (changed? update M)", flush=True)
                failed.append(name)
                continue
            open(p, "w").write(s.replace(old, new))
            r = subprocess.run([sys.executable, os.path.join(d, "tests/harness/selftest.py")],
                               capture_output=True, text=True)
            bad = [x for x in r.stdout.splitlines() if x.startswith("not ok")]
            print(f"== {name}: {len(bad)} of the self-test's results fail", flush=True)
            for x in bad:
                print(f"   {x}", flush=True)
            if not bad:
                failed.append(name)
    if failed:
        print(f"no self-test result saw these checks removed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
