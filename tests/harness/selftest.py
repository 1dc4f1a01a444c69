#!/usr/bin/env python3
"""The harness's self-test, on the host, no VM: scripts/run-tests.sh runs
the crafted areas in fixtures/ with fake-vm.sh in place of scripts/vm.sh
(the job runs on the host, the console comes from the fixture), and each
way a result can go missing must fail, naming the area and what went
missing; a well-formed area must pass. Output: TAP.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(HERE, "fixtures")
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from host_tap import results, tap  # noqa: E402


FAKE_VM = os.path.join(HERE, "fake-vm.sh")


class Run:
    """One run of scripts/run-tests.sh over fixture areas (tests: the
    fixtures, or a broken copy of them); opts: which of the self-test's
    options to pass (the others' values are left to env)."""

    def __init__(self, build, areas, jobs, tests=FIX, opts=("areas", "vm"), **env):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("RUN_TESTS_", "PIPELINE_", "FAKE_", "VM_"))}
        e.update(BUILD=build, **env)
        o = {"areas": f"--self-test-areas={tests}", "vm": f"--self-test-vm={FAKE_VM}"}
        try:  # a run that stops early must not leave an earlier run's to read
            os.unlink(os.path.join(build, "results.tap"))
        except FileNotFoundError:
            pass
        p = subprocess.run([os.path.join(TOP, "scripts/run-tests.sh"), f"-j{jobs}",
                            *(o[x] for x in opts), *areas],
                           env=e, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        threads = os.path.join(build, "tcg-threads")
        try:
            self.threads = dict(line.split() for line in open(threads))
            os.unlink(threads)
        except OSError:
            self.threads = {}
        self.entries = []  # (ok, text, diag)
        try:
            self.tap = open(os.path.join(build, "results.tap")).read()
        except OSError:
            self.tap = ""
        for line in self.tap.splitlines():
            m = re.match(r"^(not ok|ok) \d+ - (.*)$", line)
            if m:
                self.entries.append((m.group(1) == "ok", m.group(2), []))
            elif line.startswith("  # ") and self.entries:
                self.entries[-1][2].append(line[4:])

    def find(self, ok, area, name, diag=None):
        for e_ok, text, d in self.entries:
            if e_ok != ok or not text.startswith(f"{area}: "):
                continue
            if not re.search(name, text[len(area) + 2:]):
                continue
            if diag is None or any(re.search(diag, x) for x in d):
                return True
        return False

    def why(self, area):
        lines = [f"run-tests.sh exit status {self.rc}"]
        lines += [("ok " if ok else "not ok ") + t + "".join(f" | {x}" for x in d)
                  for ok, t, d in self.entries if t.startswith(f"{area}: ")]
        return lines + self.err.splitlines()[-5:]


def fails(run, area, name, diag, what):
    """A not ok result of the area whose name matches, one of its
    diagnostics matching diag."""
    tap(run.find(False, area, name, diag), what,
        [f"wanted: not ok {area}: /{name}/" + (f", saying /{diag}/" if diag else "")]
        + run.why(area))


def passes(run, area, name, what):
    tap(run.find(True, area, name), what, [f"wanted: ok {area}: /{name}/"] + run.why(area))


def broken(build, name, change):
    """A copy of the fixtures, named fixtures too, that change(dir) breaks."""
    dst = os.path.join(build, name, "fixtures")
    shutil.rmtree(os.path.dirname(dst), ignore_errors=True)
    shutil.copytree(FIX, dst)
    change(dst)
    return dst


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    build = tempfile.mkdtemp(prefix="harness-selftest.")
    try:
        return checks(build)
    finally:
        shutil.rmtree(build, ignore_errors=True)


def checks(build):
    areas = sorted(d for d in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, d)))
    a = Run(build, [], 3)

    # 1: each program is a stream of its own
    fails(a, "short", r"^crash: complete", r"^3 results where the plan says 1\.\.5$",
          "case 1: a program that plans 5 results, prints 3 and crashes fails")
    fails(a, "short", r"^overrun: complete", r"^4 results where the plan says 1\.\.2$",
          "case 1: another program's plan cannot cover that shortfall")
    fails(a, "short", r"^bail: complete", r"^Bail out! no device",
          "case 1: a Bail out! fails, naming the program")
    fails(a, "short", r"^subtest: complete", r"^a subtest failed",
          "case 1: a failing subtest (indented not ok) fails")
    fails(a, "short", r"^noplan: complete", r"^no plan",
          "case 1: a stream without a plan fails")
    fails(a, "short", r"^misnumbered: complete", r"not numbered 1\.\.N",
          "case 1: results not numbered 1..N fail")
    fails(a, "short", r"^twoplans: complete", r"^a second plan",
          "case 1: a second plan fails")
    fails(a, "short", r"^midplan: complete", r"stands between results",
          "case 1: a plan between results fails")
    # 2: the expected count
    fails(a, "expected", r"^5 results where .*expected/expected says 6", None,
          "case 2: an area with fewer results than tests/AREA/expected fails")
    tap(re.search(r"^ +expected: +5 passed, 0 failed, 0 skipped \(expected 6\)", a.out, re.M)
        is not None, "case 2: the per-area line shows the count and the expected number",
        a.out.splitlines()[-25:])
    # 3: skips need a known reason
    fails(a, "skips", r"^prog: unknown \(skipped for a reason .* does not accept: some reason "
          "nobody listed\\)", None, "case 3: a skip with an unknown reason fails")
    fails(a, "skips", r"^prog: noreason \(skipped", None, "case 3: a skip without a reason fails")
    fails(a, "skips", r"^prog: elsewhere \(skipped", None,
          "case 3: a reason accepted for another area only fails")
    tap(any(ok and t == "skips: prog: known # SKIP the fixture's accepted reason"
            for ok, t, _ in a.entries), "case 3: a skip with a known reason counts as skipped",
        a.why("skips"))
    # 4: tdc
    tap(a.find(False, "tdc", r"^setup: a2 - two \(its setup failed") and
        a.find(False, "tdc", r"^setup: a3 - three \(not run: .*setup of case a2 failed") and
        a.find(False, "tdc", r"^setup: a4 - four \(not run"),
        "case 4: a tdc setup failure fails its case and every later one (tdc says skipped)",
        a.why("tdc"))
    fails(a, "tdc", r"^teardown: b1 - x \(its teardown failed", None,
          "case 4: a tdc teardown failure fails")
    fails(a, "tdc", r"^crash: complete", r"printed no results .* none of its 3 selected",
          "case 4: tdc stopping before its TAP fails, naming the lost cases")
    fails(a, "tdc", r"^short: complete", r"planned 1\.\.2 where 3 test ids were selected",
          "case 4: tdc's count is checked against the test ids selected")
    passes(a, "tdc", r"^good: complete \(plan 1\.\.2, 2 results, exit status 0\)$",
           "case 4: tdc's own progress lines are not results")
    # 5: 1..0
    tap(a.find(False, "zeroplan", r"^offload: all of its tests \(skipped for a reason") and
        a.find(False, "zeroplan", r"^5 results where .* says 7"),
        "case 5: a plan 1..0 with a skip is a counted skip (here with an unknown reason: a failure), "
        "and the expected count catches the tests that vanished", a.why("zeroplan"))
    passes(a, "good", r"^skipall: all of its tests # SKIP the fixture's accepted reason$",
           "case 5: a plan 1..0 with a skip and a known reason counts as one skipped result")
    # 6: KUnit from the console
    fails(a, "kunit", r"^KUnit suite initfail: complete", r"failed before running any case",
          "case 6: a KUnit suite whose init fails fails")
    fails(a, "kunit", r"^KUnit suite shortplan: complete", r"^2 cases where its plan says 1\.\.3",
          "case 6: a suite plan that does not match its cases fails")
    tap(a.find(True, "kunit", r"^params\.param_case \(2 parameters\)$") and
        a.find(True, "kunit", r"^params\.plain_case$") and
        a.find(True, "kunit", r"^KUnit suite params: complete \(plan 1\.\.2, 2 cases\)$"),
        "case 6: a parameterised case's nested subtest does not rename the suite",
        a.why("kunit"))
    fails(a, "kunit", r"^badparam\.pcase", r"failed parameter: p2",
          "case 6: a failing parameter fails its case")
    fails(a, "lacks-dup", r"^KUnit suite s: complete", r"^case n reported more than once$",
          "case 6: a case tests/AREA/patch-cases names, reported twice, fails its suite")
    fails(a, "kunit-none", r"^KUnit: the console's KTAP is complete", r"^no KTAP",
          "case 6: a console without KTAP fails")
    # 7: consoles
    fails(a, "noconsole", r"^console free of kernel reports", r"^no console log",
          "case 7: a VM without a console log fails the console check")
    fails(a, "emptyconsole", r"^console free of kernel reports", r"empty",
          "case 7: an empty console log fails the console check")
    fails(a, "leakscan", r"^console free of kernel reports", r"^kmemleak was disabled",
          "case 7: kmemleak disabled during the run fails the console check")
    fails(a, "leakscan", r"^console free of kernel reports",
          r"^kmemleak's scans did not finish \(no 'init: kmemleak scan done'\)",
          "case 7: kmemleak's scans not finished fails the console check")
    fails(a, "leakscan", r"^console free of kernel reports",
          r"^kmemleak's second scan began 3\.00 s after the job ended",
          "case 7: kmemleak's second scan less than 5 s after the job fails the console check")
    passes(a, "good", r"^console free of kernel reports",
           "case 7: a console with kmemleak's two scans as guest/init makes them passes")
    # 9: exit statuses
    fails(a, "guestexit", r"^guest booted, ran guest\.sh and powered off$",
          r"^guest\.sh exited with status 3$",
          "case 9: a guest.sh that exits 3 after only ok lines fails")
    fails(a, "short", r"^status: complete", r"^exit status 2$",
          "case 9: a program that exits 2 after only ok lines fails")
    fails(a, "stray", r"^guest booted", r"outside tap_run",
          "case 9: TAP printed by guest.sh outside tap_run fails")
    # 12: sabotage. A program killed mid-run, with guest.sh: no .rc
    fails(a, "killed", r"^prog: complete", r"^prog\.rc is missing: the program did not finish",
          "case 12: a program killed mid-run (its stream complete, no .rc) fails")
    # a hung guest, killed after its timeout: no status file
    fails(a, "hung", r"^guest booted", r"^no exit status from the guest \(status is missing\)",
          "case 12: a hung guest (no status file) fails")
    fails(a, "hung", r"^guest booted", r"^vm\.sh exited with status 124 \(the guest hung",
          "case 12: a hung guest fails, saying the VM was killed after its timeout")
    fails(a, "hung", r"^prog: complete", r"^1 results where the plan says 1\.\.2$",
          "case 12: the hung guest's program that never ended fails")
    fails(a, "short", r"^bailindent: complete", r"^Bail out! no device",
          "case 12: an indented Bail out! (a subtest's) fails")
    fails(a, "zeroplan", r"^nothing: complete \(plan 1\.\.0, 0 results, exit status 0\)",
          r"^a plan 1\.\.0 without '# SKIP why' \(bare\)",
          "case 12: a bare 1..0 with exit status 0 (nothing tested, no reason) fails")
    fails(a, "skips", r"^prog: longer \(skipped for a reason .* does not accept: the "
          "fixture's accepted reason, and then some\\)", None,
          "case 12: a skip reason that only begins like an accepted one fails (the "
          "patterns are anchored at both ends)")
    fails(a, "skips", r"^prog: inside \(skipped for a reason", None,
          "case 12: a skip reason that only holds an accepted one fails")
    passes(a, "areas", r"^fixtures/areas declares 19 areas; each has its guest\.sh",
           "case 12: the declared areas are there, and no other")

    # 10, 11: the report; lanes keep the order
    last = a.out.rstrip("\n").splitlines()[-1:] or [""]
    tap(re.fullmatch(r"\d+ passed, \d+ failed, \d+ skipped", last[0]) is not None and a.rc == 1,
        "the last line is 'N passed, N failed, N skipped', exit status 1 on failures",
        [f"exit status {a.rc}, last line {last[0]!r}"])
    b = Run(build, areas, 1)
    tap(a.tap == b.tap and a.tap != "",
        "three lanes and one give the same results.tap (each area's results together, "
        "in a stable order)", [f"-j3: {len(a.tap)} bytes, -j1: {len(b.tap)} bytes"])

    # 8: stale files: stale passed in b; now vm.sh stops before clearing
    passes(b, "stale", r"^prog: from the first run$", "case 8: the first run of the area passes")
    c = Run(build, ["stale"], 1, FAKE_VM_DIE="stale")
    tap(c.find(False, "stale", r"^guest booted", r"^no exit status") and
        c.find(False, "stale", r"^console free", r"^no console log") and
        c.find(False, "stale", r"^2 results where") and "from the first run" not in c.tap,
        "case 8: when vm.sh stops before clearing its run directory, nothing of the "
        "earlier run is read", c.why("stale"))
    run = os.path.join(build, "vm", "stale")
    d = Run(build, ["stale"], 1)  # a fresh, passing run, then read as if older
    p = subprocess.run([sys.executable, os.path.join(TOP, "scripts/results.py"), "area",
                        "stale", "--tests", FIX, "--run", run, "--vm-rc", "0",
                        "--since", str(time.time() + 60)], capture_output=True, text=True)
    tap(d.rc == 0 and "is stale: written before this run started" in p.stdout and
        "from the first run" not in p.stdout,
        "case 8: files older than the run's start are never read", [p.stdout[-400:], p.stderr])

    # make bisect-check's prefixes: a test of a lacked patch skips
    e = Run(build, ["lacks"], 1, RUN_TESTS_LACKS="0023,0017")
    tap(any(ok and t == "lacks: prog: lacked # SKIP needs patch 0023, which this kernel lacks"
            for ok, t, _ in e.entries) and e.find(True, "lacks", r"^prog: guest sees T_LACKS$"),
        "lacks: a skip for a patch the run lacks (RUN_TESTS_LACKS, T_LACKS in the guest) "
        "counts as skipped", e.why("lacks"))
    fails(e, "lacks", r"^prog: notlacked \(skipped as lacking patch 0011, but this run's "
          "kernel has it", None, "lacks: a skip for a patch the run does not lack fails")
    fails(a, "lacks", r"^prog: lacked \(skipped as lacking patch 0023, but", None,
          "lacks: without RUN_TESTS_LACKS (make check) every such skip fails")
    tap(any(ok and t == "lacks: mini.b # SKIP needs patch 0023, which this kernel lacks"
            for ok, t, _ in e.entries) and
        any(ok and t == "lacks: mini.c/third # SKIP needs patch 0017, which this kernel lacks"
            for ok, t, _ in e.entries) and
        e.find(True, "lacks", r"^mini\.a$") and not e.find(True, "lacks", r"^mini\.a: ") and
        e.find(False, "lacks", r"^mini\.c/second ran, but it is patch 0017's parameter and "
               "this kernel lacks patch 0017") and
        e.find(False, "lacks", r"^mini\.d \(patch 0009's case\) never ran") and
        a.find(False, "lacks", r"^mini\.b \(patch 0023's case\) never ran") and
        a.find(True, "lacks", r"^mini\.c/second: patch 0017's parameter ran$") and
        re.search(r"^ +lacks: +8 passed, 3 failed, 3 skipped \(expected 14\)", e.out, re.M),
        "lacks: each KUnit case or parameter of tests/AREA/patch-cases is one result: "
        "skipped when its patch is lacked and it is absent, failed when it runs on a kernel "
        "said to lack it or is missing from one that has it", e.why("lacks") + a.why("lacks"))

    f = Run(build, ["lacks-good"], 1, RUN_TESTS_LACKS="0023,0017")
    g = Run(build, ["lacks-good"], 1)
    tap(f.rc == 0 and g.rc == 0 and
        re.search(r"^ +lacks-good: +6 passed, 0 failed, 3 skipped \(expected 9\)$", f.out, re.M)
        and re.search(r"^ +lacks-good: +9 passed, 0 failed, 0 skipped \(expected 9\)$", g.out,
                      re.M),
        "lacks: a well-formed area gives the same count on a kernel with every patch and on "
        "a prefix without the ones its tests, cases and parameters need",
        f.why("lacks-good") + f.out.splitlines()[-6:] + g.why("lacks-good"))

    # QEMU's TCG threads: one per VM beside another, QEMU's default alone
    h = Run(build, ["good", "expected"], 2)
    i = Run(build, ["good"], 2)
    j = Run(build, ["good", "expected"], 1)
    k = Run(build, ["good", "expected"], 2, VM_TCG_THREAD="multi")
    tap(h.threads == {"good": "single", "expected": "single"} and
        i.threads == {"good": "unset"} and
        j.threads == {"good": "unset", "expected": "unset"} and
        k.threads == {"good": "multi", "expected": "multi"},
        "VMs side by side get VM_TCG_THREAD=single, a VM alone QEMU's default, and a "
        "value the caller set is kept",
        [f"-j2 two areas: {h.threads}", f"-j2 one area: {i.threads}",
         f"-j1 two areas: {j.threads}", f"-j2 with multi set: {k.threads}"])

    # 12: sabotage of the areas, their expected counts, the skip reasons
    def areas(d):
        os.unlink(os.path.join(d, "good", "guest.sh"))  # vanished
        write(os.path.join(d, "newarea", "expected"), "4\n")  # undeclared
        shutil.copy(os.path.join(d, "expected", "guest.sh"), os.path.join(d, "newarea"))
        os.unlink(os.path.join(d, "stray", "expected"))
        write(os.path.join(d, "emptyconsole", "expected"), "# a count\n4\n5\n")
        write(os.path.join(d, "noconsole", "expected"), "four\n")
    v = Run(build, ["good", "stray", "emptyconsole", "noconsole"], 2,
            tests=broken(build, "areas", areas))
    fails(v, "areas", r"^fixtures/areas declares 19 areas",
          r"^fixtures/good: declared as a guest area in fixtures/areas, but "
          r"fixtures/good/guest\.sh is missing$",
          "case 12: an area whose guest.sh vanished fails the run, naming it")
    fails(v, "areas", r"^fixtures/areas declares",
          r"^fixtures/newarea: has a guest\.sh but is not declared in fixtures/areas",
          "case 12: an area there but not declared fails the run, naming it")
    fails(v, "areas", r"^fixtures/areas declares",
          r"^fixtures/stray: declared as a guest area .* fixtures/stray/expected is missing$",
          "case 12: a declared area without its expected fails the run, naming it")
    fails(v, "stray", r"^the area's expected number of results: fixtures/stray/expected is "
          "missing$", None, "case 12: a missing expected fails the area")
    fails(v, "emptyconsole", r"^the area's expected number of results: .*expected holds more "
          "than one line besides comments: 4 \\| 5$", None,
          "case 12: an expected with two numbers fails the area")
    fails(v, "noconsole", r"^the area's expected number of results: .*expected: not a number: "
          "four$", None, "case 12: an expected that is not a number fails the area")
    w = Run(build, ["good"], 1, tests=broken(
        build, "noskips", lambda d: os.unlink(os.path.join(d, "skip-reasons"))))
    fails(w, "good", r"skip-reasons: No such file or directory \(tests/skip-reasons\)$", None,
          "case 12: a missing skip-reasons fails the run")
    x = Run(build, ["good"], 1, tests=broken(build, "badskips", lambda d: write(
        os.path.join(d, "skip-reasons"), "good the fixture's accepted reason\n\tno slashes\n"
        "good /(/\n\tbad pattern\ngood /the fixture's accepted reason/\n")))
    tap(x.find(False, "good", r"skip-reasons:1: not 'AREA /REGEX/': good the fixture") and
        x.find(False, "good", r"skip-reasons:3: bad regular expression") and
        x.find(False, "good", r"skip-reasons:5: /the fixture's accepted reason/ says nothing "
               "about why") and x.find(False, "good", r"^first: beta \(skipped for a reason"),
        "case 12: a malformed skip-reasons (no /REGEX/, a bad one, one without its why) "
        "fails the run, and accepts nothing", x.why("good"))
    # RUN_TESTS_DIR/RUN_TESTS_VM from the caller's environment: refused
    y = Run(build, ["good"], 1, opts=("vm",), RUN_TESTS_DIR=FIX)
    tap(y.rc == 1 and "error: RUN_TESTS_DIR is set in the environment" in y.err and not y.tap,
        "case 12: RUN_TESTS_DIR from the environment fails the run before any area runs",
        [f"exit status {y.rc}, results.tap {len(y.tap)} bytes"] + y.err.splitlines()[-3:])
    z = Run(build, ["good"], 1, opts=("areas",), RUN_TESTS_VM=FAKE_VM)
    tap(z.rc == 1 and "error: RUN_TESTS_VM is set in the environment" in z.err and not z.tap,
        "case 12: RUN_TESTS_VM from the environment fails the run before any area runs",
        [f"exit status {z.rc}, results.tap {len(z.tap)} bytes"] + z.err.splitlines()[-3:])

    # a well-formed area passes
    g = Run(build, ["good"], 1)
    last = g.out.rstrip("\n").splitlines()[-1:] or [""]
    tap(g.rc == 0 and last[0] == "14 passed, 0 failed, 3 skipped" and
        re.search(r"^ +good: +13 passed, 0 failed, 3 skipped \(expected 16\)$", g.out, re.M),
        "a well-formed area passes: plan first or last, kselftest output, skips with "
        "known reasons, host checks", g.out.splitlines()[-30:] + g.err.splitlines()[-5:])
    print(f"1..{len(results)}", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
