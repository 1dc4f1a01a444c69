#!/usr/bin/env python3
"""Collect and check the results of the test areas. scripts/run-tests.sh
and the harness self-test (tests/harness) run this same code.

  results.py area AREA --tests DIR --run RUN [--vm-rc N] [--since T] [--host]
             [--seconds S] [--lacks NNNN,...] [--out FILE]
      One area's results (JSON): the VM's own two (the guest booted, ran
      guest.sh and powered off; its console is free of kernel reports and
      kmemleak's scans covered the whole job), each
      stream's results plus one result saying the stream is complete, the
      host checks (RUN/host.tap), KUnit's KTAP from the console
      (RESULTS=kunit-console in the area's vm.conf), and a failure when
      their number differs from DIR/AREA/expected. --host: a host-side area
      (host.sh, no VM); --vm-rc is then host.sh's exit status. --lacks:
      the patches of patches/series the kernel lacks (make bisect-check's
      prefixes; make check never passes it), see LACKS below.
  results.py areas --tests DIR --out FILE
      The areas DIR/areas declares, "AREA guest|host" lines on stdout, and
      the check of that declaration as one result in FILE (an area's JSON,
      named "areas"): each declared area has its guest.sh or host.sh and
      its expected, and no directory of DIR with a guest.sh or host.sh is
      left undeclared.
  results.py run-tap --label TEXT --run RUN --vm-rc N [--since T]
             [--tests DIR --area AREA]
      One VM run as a TAP stream with its plan (for an area's host.tap:
      tests/i2c-abi's boot of the kernel before the series).
  results.py report --tap OUT [--console OUT --runs DIR] [--times TSV]
             [--wall S] [--lanes N] [--total S] AREA.json...
      Number every result into OUT (TAP), print the failures, one line per
      area "AREA: N passed, N failed, N skipped (expected M)", the time
      table and, last, "N passed, N failed, N skipped". Exit status 1 on
      any failure.

A stream (tests/lib/tap.sh's tap_run) is one program's stdout, checked on
its own: exactly one plan, first or last; results numbered 1..N in order;
as many results as planned; no "Bail out!"; no failing subtest (an
indented "not ok"); exit status 0. A plan "1..0 # SKIP why" counts as one
skipped result. A skip passes only with a reason tests/skip-reasons
accepts for the area. A file written before this run started (--since)
is never read.

LACKS. make bisect-check runs an area on a prefix of the series, and a
test of a later patch can then not pass. Such a test reports a skip with
the reason "needs patch NNNN, which this kernel lacks" (the guest sees the
list in T_LACKS), and a KUnit case a later patch adds is absent
(DIR/AREA/patch-cases names it). Either counts as skipped only when
--lacks names NNNN; in any other run it is a failure, so make check can
never skip a test this way, and a case that DIR/AREA/patch-cases names
must then be there.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

PLAN = re.compile(r"^1\.\.(\d+)\s*(?:#\s*(.*))?$")
RESULT = re.compile(r"^(not ok|ok)\b[ \t]*(\d+)?[ \t]*(?:-[ \t]+)?(.*)$")
DIRECTIVE = re.compile(r"^(.*?)[ \t]*(?<!\\)#[ \t]*(skip\w*|todo|xfail)\b[ \t:-]*(.*)$", re.I)
KSFT_RUN = re.compile(r"^#\s+RUN\s+(\S+)")
STAMP = re.compile(r"^\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])?\s?")
STRAY = re.compile(r"^\s*(?:(?:not )?ok\b|1\.\.\d|Bail out!)")
TDC_SETUP = re.compile(r'"-----> (prepare|teardown) stage" did not complete successfully')
TDC_AFTER = re.compile(r"^skipped - previous (\S+) failed (\d+) (\S+)")
LACKS = re.compile(r"^needs patch (\d{4}), which this kernel lacks$")


class Result:
    def __init__(self, ok, name, skip=None, diag=()):
        self.ok, self.name, self.skip, self.diag = ok, name, skip, list(diag)

    def to_json(self):
        return {"ok": self.ok, "name": self.name, "skip": self.skip, "diag": self.diag}


class SkipReasons:
    """tests/skip-reasons: "AREA[,AREA...] /REGEX/" lines, each followed by
    indented lines saying why the skip is legitimate (* = any area)."""

    def __init__(self, path):
        self.entries, self.errors = [], []
        try:
            lines = open(path, errors="replace").read().splitlines()
        except OSError as e:
            self.errors.append(f"{path}: {e.strerror}")
            return
        entry = None
        for n, line in enumerate(lines, 1):
            if not line.strip() or line.startswith("#"):
                continue
            if line[0] in " \t":
                if entry is None:
                    self.errors.append(f"{path}:{n}: a justification without an entry")
                else:
                    entry[2].append(line.strip())
                continue
            m = re.match(r"^(\S+)\s+/(.*)/$", line)
            if not m:
                self.errors.append(f"{path}:{n}: not 'AREA /REGEX/': {line}")
                entry = None
                continue
            try:
                rx = re.compile(m.group(2))
            except re.error as e:
                self.errors.append(f"{path}:{n}: bad regular expression: {e}")
                entry = None
                continue
            entry = (set(m.group(1).split(",")), rx, [], n)
            self.entries.append(entry)
        for areas, rx, why, n in self.entries:
            if not why:
                self.errors.append(f"{path}:{n}: /{rx.pattern}/ says nothing about why")

    def accepts(self, area, reason):
        # The whole reason must match: a pattern is anchored at both ends
        # whether it says ^ and $ or not, so a reason that only begins like
        # an accepted one ("... , and then something else") is not one.
        return any(("*" in areas or area in areas) and why and rx.fullmatch(reason)
                   for areas, rx, why, _ in self.entries)


class Ctx:
    def __init__(self, area, since, skips, skips_path, lacks=()):
        self.area, self.since, self.skips, self.skips_path = area, since, skips, skips_path
        self.lacks = set(lacks)

    def read(self, path):
        """(text, None) or (None, why not): a missing file, or one older than
        this run, is never read."""
        try:
            st = os.stat(path)
            if self.since is not None and st.st_mtime < self.since:
                return None, f"{os.path.basename(path)} is stale: written before this run started"
            with open(path, errors="replace") as f:
                return f.read(), None
        except FileNotFoundError:
            return None, f"{os.path.basename(path)} is missing"
        except OSError as e:
            return None, f"{os.path.basename(path)}: {e.strerror}"

    def skip_result(self, name, reason, diag=()):
        reason = reason.strip()
        m = LACKS.match(reason)
        if m:
            if m.group(1) in self.lacks:
                return Result(True, name, skip=reason, diag=diag)
            return Result(False, f"{name} (skipped as lacking patch {m.group(1)}, but this "
                          "run's kernel has it: only make bisect-check's prefixes lack "
                          "patches)", diag=diag)
        if reason and self.skips.accepts(self.area, reason):
            return Result(True, name, skip=reason, diag=diag)
        why = f"skipped for a reason {self.skips_path} does not accept: {reason or '(none given)'}"
        return Result(False, f"{name} ({why})", diag=diag)


def tail(text, n=5):
    lines = [x for x in (text or "").splitlines() if x.strip()]
    return lines[-n:]


# --- TAP streams -----------------------------------------------------------

class Rec:
    def __init__(self, ok, num, desc, directive, reason):
        self.ok, self.num, self.desc = ok, num, desc
        self.directive, self.reason = directive, reason
        self.note = None  # tdc: why a skip is really a failure
        self.notes = []  # the program's comments around it, for a failure


def parse_tap(lines, plan_optional=False):
    """Records, plan (count, comment) or None, and the stream's problems."""
    recs, plan, plan_at, problems, running, notes = [], None, None, [], "", []
    for line in lines:
        line = line.rstrip("\r\n")
        if line.lstrip().startswith("Bail out!"):  # a subtest's too (KTAP)
            problems.append(line.strip())
            continue
        if line[:1] in (" ", "\t"):
            if re.match(r"^\s+not ok\b", line):
                problems.append(f"a subtest failed: {line.strip()}")
            elif line.strip():
                notes.append((len(recs), line.strip()))
            continue
        if line.startswith("#"):
            notes.append((len(recs), line))
        m = KSFT_RUN.match(line)
        if m:  # the kselftest harness names skipped tests only here
            running = m.group(1)
            continue
        m = PLAN.match(line)
        if m:
            if plan is not None:
                problems.append(f"a second plan: {line.strip()}")
            else:
                plan, plan_at = (int(m.group(1)), (m.group(2) or "").strip()), len(recs)
            continue
        m = RESULT.match(line)
        if not m:
            continue
        desc, directive, reason = m.group(3).strip(), None, ""
        d = DIRECTIVE.match(desc)
        if d:
            desc, directive, reason = d.group(1).strip(), d.group(2).lower(), d.group(3).strip()
        if not desc:
            desc = running or f"test {len(recs) + 1}"
        running = ""
        recs.append(Rec(m.group(1) == "ok", int(m.group(2)) if m.group(2) else None,
                        desc, directive, reason))
    for i, r in enumerate(recs):
        if not r.ok:  # what the program said just before and after it
            r.notes = ([x for n, x in notes if n == i][-4:] +
                       [x for n, x in notes if n == i + 1][:6])
    bad = [(i + 1, r.num) for i, r in enumerate(recs) if r.num != i + 1]
    if bad:
        i, num = bad[0]
        problems.append(f"results not numbered 1..N in order: result {i} is numbered "
                        f"{'nothing' if num is None else num}"
                        + (f" ({len(bad)} misnumbered)" if len(bad) > 1 else ""))
    if plan is None:
        if not plan_optional:
            problems.append("no plan (1..N): the program stopped before printing it, "
                            "or never ran")
    else:
        if plan_at not in (0, len(recs)):
            problems.append(f"the plan 1..{plan[0]} stands between results "
                            f"(after result {plan_at}), not first or last")
        if plan[0] != len(recs):
            problems.append(f"{len(recs)} results where the plan says 1..{plan[0]}")
    return recs, plan, problems


def tdc_filter(text, ids):
    """tdc.py prints its TAP only at the end, after "All test results:";
    its progress output before that is not TAP. Returns the TAP lines and
    the problems seen before parsing them."""
    lines = text.splitlines()
    marks = [i for i, x in enumerate(lines) if x.strip() == "All test results:"]
    if not marks:
        return [], ["tdc printed no results ('All test results:' missing): it stopped "
                    f"before the end, so none of its {len(ids)} selected cases counts"]
    return lines[marks[-1] + 1:], []


def tdc_check(recs, plan, ids):
    """Setup or teardown failures are failures (tdc reports them, and every
    case after them, as skipped); every selected id is reported once."""
    problems = []
    if plan is not None and plan[0] != len(ids):
        problems.append(f"tdc planned 1..{plan[0]} where {len(ids)} test ids were selected")
    seen = {}
    for r in recs:
        tid = r.desc.split(" ", 1)[0]
        seen[tid] = seen.get(tid, 0) + 1
        if r.directive and r.directive.startswith("skip"):
            m = TDC_SETUP.search(r.reason)
            a = TDC_AFTER.match(r.reason)
            if m:
                r.ok, r.directive = False, None
                stage = "setup" if m.group(1) == "prepare" else "teardown"
                r.note = f"its {stage} failed (tdc reports that as a skip)"
            elif a:
                r.ok, r.directive = False, None
                r.note = (f"not run: tdc stopped after the {a.group(1)} of case "
                          f"{a.group(3)} failed (tdc reports that as a skip)")
    missing = [i for i in ids if i not in seen]
    extra = [i for i in seen if i not in ids]
    dup = [i for i, n in seen.items() if n > 1]
    if missing:
        problems.append(f"{len(missing)} selected test ids not reported: {' '.join(missing[:12])}")
    if extra:
        problems.append(f"ids reported but not selected: {' '.join(extra[:12])}")
    if dup:
        problems.append(f"ids reported more than once: {' '.join(dup[:12])}")
    return problems


def from_stream(ctx, name, path, rc_path=None, err_path=None, ids_path=None,
                plan_optional=False, prefix=""):
    """The results of one stream, then the result saying it is complete."""
    out, problems = [], []
    text, p = ctx.read(path)
    if p:
        problems.append(p)
        text = ""
    ids = None
    if ids_path and os.path.exists(ids_path):
        t, p = ctx.read(ids_path)
        if p:
            problems.append(p)
        ids = (t or "").split()
    lines = text.splitlines()
    if ids is not None:
        lines, pre = tdc_filter(text, ids)
        problems += pre
    recs, plan, more = parse_tap(lines, plan_optional)
    problems += more
    if ids is not None:
        problems += tdc_check(recs, plan, ids)
    label = f"{prefix}{name}"
    for r in recs:
        rname = f"{label}: {r.desc}"
        if r.note:
            out.append(Result(False, f"{rname} ({r.note})", diag=[r.reason] + r.notes))
        elif r.directive and r.directive.startswith("skip"):
            if r.ok:
                out.append(ctx.skip_result(rname, r.reason))
            else:
                out.append(Result(False, rname, diag=[f"not ok with a SKIP: {r.reason}"]))
        elif r.directive:
            out.append(Result(False, f"{rname} (directive {r.directive.upper()} is not "
                              "accepted)", diag=[r.reason]))
        else:
            out.append(Result(r.ok, rname, diag=r.notes))
    skip_all = plan is not None and plan[0] == 0 and re.match(r"(?i)skip", plan[1] or "")
    if skip_all:
        # "1..0 # SKIP why": the whole program counts as one skipped result.
        why = re.sub(r"(?i)^skip\w*[\s:-]*", "", plan[1])
        out.append(ctx.skip_result(f"{label}: all of its tests", why))
    if plan is not None and plan[0] == 0 and not skip_all:
        said = f"# {plan[1]}" if plan[1] else "bare"
        problems.append(f"a plan 1..0 without '# SKIP why' ({said}): the program tested "
                        "nothing and did not say why")
    status = None
    if rc_path:
        t, p = ctx.read(rc_path)
        if p:
            problems.append(f"{p}: the program did not finish (guest.sh stopped while it ran?)")
        else:
            status = t.strip()
            if status != "0" and not (skip_all and status == "4"):
                problems.append(f"exit status {status}")
    what = f"plan {'1..' + str(plan[0]) if plan else 'missing'}, {len(recs)} results"
    if status is not None:
        what += f", exit status {status}"
    diag = list(problems)
    if problems and err_path:
        t, _ = ctx.read(err_path)
        diag += [f"stderr: {x}" for x in tail(t)]
    out.append(Result(not problems, f"{label}: complete ({what})", diag=diag))
    return out


def from_streams(ctx, run, prefix=""):
    sdir = os.path.join(run, "streams")
    out = []
    order = []
    if os.path.isdir(sdir):
        t, p = ctx.read(os.path.join(sdir, "order"))
        if p:
            out.append(Result(False, f"{prefix}streams: {p}"))
        order = (t or "").split()
        strays = sorted(f[:-4] for f in os.listdir(sdir)
                        if f.endswith(".tap") and f[:-4] not in order)
        for s in strays:
            out.append(Result(False, f"{prefix}{s}: a stream that tap_run did not start"))
    for name in order:
        base = os.path.join(sdir, name)
        out += from_stream(ctx, name, base + ".tap", base + ".rc", base + ".err",
                           base + ".tdc-ids", prefix=prefix)
    return out


# --- the VM, its console, KUnit ---------------------------------------------

def vm_result(ctx, run, vm_rc, prefix="", host=False):
    problems = []
    log, p = ctx.read(os.path.join(run, "guest.log"))
    if host:
        name = f"{prefix}host.sh ran to the end (exit status 0)"
        if vm_rc != 0:
            problems.append(f"host.sh exited with status {vm_rc}")
    else:
        name = f"{prefix}guest booted, ran guest.sh and powered off"
        st, p2 = ctx.read(os.path.join(run, "status"))
        if p2:
            problems.append(f"no exit status from the guest ({p2}): it hung, panicked, "
                            "or never booted")
        elif st.strip() != "0":
            problems.append(f"guest.sh exited with status {st.strip()}")
        if vm_rc not in (None, 0):
            why = {124: " (the guest hung and was killed)", 125: " (no status: crash?)"}
            problems.append(f"vm.sh exited with status {vm_rc}{why.get(vm_rc, '')}")
    strays = [x for x in (log or "").splitlines() if STRAY.match(x)]
    if strays:
        problems.append(f"guest.sh printed {len(strays)} TAP line(s) outside tap_run "
                        f"(results no stream checks): {strays[0].strip()}")
    diag = list(problems)
    if problems:
        diag += [f"guest.log: {x}" for x in tail(log)]
    return Result(not problems, name, diag=diag)


# guest/init's messages around kmemleak's scans, and kmemleak's own.
KMEMLEAK_ON = "kmemleak: Kernel memory leak detector initialized"
KMEMLEAK_OFF = "kmemleak: Kernel memory leak detector disabled"
INIT_MSG = re.compile(r"^\[\s*(\d+\.\d+)\]\s+init: (job exited|kmemleak second scan|"
                      r"kmemleak scan done)")


def kmemleak_problems(text):
    """What kept kmemleak from checking the whole job: it was disabled (its
    memory pool ran out, say), or, on a console whose kernel started it,
    init's messages around the scans are missing, or the second began less
    than 5 s after the job ended. kmemleak reports an object only from a
    scan that starts at least jiffies_min_age (5 s) after the allocation,
    and never from the first scan that sees it (guest/init), so an early
    second scan passes over a leak from the job's last seconds. A console without kmemleak (a kernel
    without it) has nothing to check. "kmemleak scan done" says init got
    through both scans, not that each scanned everything: a scan stopped
    by a pending signal says nothing (guest/init runs them where none
    comes)."""
    problems = []
    if KMEMLEAK_OFF in text:
        problems.append("kmemleak was disabled during the run: leaks after that went unreported")
    if KMEMLEAK_ON not in text:
        return problems
    seen = {}
    for line in text.splitlines():
        m = INIT_MSG.match(line)
        if m:
            seen.setdefault(m.group(2), float(m.group(1)))
    end, second = seen.get("job exited"), seen.get("kmemleak second scan")
    missing = [f"'init: {m}'" for m in ("job exited", "kmemleak second scan",
                                        "kmemleak scan done") if m not in seen]
    if missing:
        problems.append(f"kmemleak's scans did not finish (no {', no '.join(missing)}): "
                        "leaks went unreported")
    # init starts the second scan at or after the job's end rounded down
    # plus 6 s, by /proc/uptime; "job exited" is stamped a little later
    # than that read: 0.1 s of slack.
    if end is not None and second is not None and second - end < 4.9:
        problems.append(f"kmemleak's second scan began {second - end:.2f} s after the job "
                        "ended, less than the 5 s an object must be old to be reported: a "
                        "leak from the job's last seconds went unreported")
    return problems


def console_result(ctx, run, prefix=""):
    name = f"{prefix}console free of kernel reports (BUG/WARNING/KASAN/kmemleak/lockdep)"
    path = os.path.join(run, "console.log")
    text, p = ctx.read(path)
    if p:
        return Result(False, name, diag=[f"no console log: {p}"])
    if not text.strip():
        return Result(False, name, diag=["the console log is empty: the guest never printed"])
    scan = subprocess.run([os.path.join(HERE, "scan-console.sh"), path],
                          capture_output=True, text=True)
    if scan.returncode:
        return Result(False, name, diag=scan.stderr.strip().splitlines()[:60])
    problems = kmemleak_problems(text)
    if problems:
        return Result(False, name, diag=problems)
    return Result(True, name)


def read_patch_cases(path):
    """DIR/AREA/patch-cases: "NNNN SUITE.CASE" or "NNNN SUITE.CASE/PARAM"
    lines, the KUnit cases and parameters (by their description) a patch of
    the series adds; ([(patch, suite, case, param or None)], [problems])."""
    cases, problems = [], []
    if not os.path.exists(path):
        return cases, problems
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^(\d{4})\s+([\w-]+)\.(\w+)(?:/(\S.*))?$", line)
        if m:
            cases.append(m.groups())
        else:
            problems.append(f"{os.path.basename(path)}:{n}: not 'NNNN SUITE.CASE[/PARAM]': "
                            f"{line}")
    return cases, problems


def from_kunit(ctx, run, prefix="", patch_cases=()):
    """KUnit's KTAP from the console, by indentation depth (4 spaces per
    level): depth 0 the suites' results and the plan of suites, depth 1 a
    suite's header, plan and cases, depth 2 a parameterised case's
    parameters. Each case is a result, then one per suite (plan, cases
    and its own result agree), then one for the whole KTAP."""
    out = []
    text, p = ctx.read(os.path.join(run, "console.log"))
    top = f"{prefix}KUnit: the console's KTAP is complete"
    if p:
        return [Result(False, top, diag=[p])]
    started, top_plan, suites, cur, params, init_err = False, None, [], None, [], None
    top_problems = []

    def new_suite(name):
        return {"name": name, "plan": None, "cases": [], "end": None, "problems": [],
                "subtest": True}

    for raw in text.splitlines():
        line = STAMP.sub("", raw).rstrip()
        body = line.lstrip(" ")
        if not body:
            continue
        depth = (len(line) - len(body)) // 4
        if depth == 0:
            if body.startswith("KTAP version") or body.startswith("TAP version"):
                started = True
                continue
            if not started:
                continue
            m = PLAN.match(body)
            if m:
                if top_plan is None:
                    top_plan = int(m.group(1))
                else:
                    top_problems.append(f"a second plan of suites: {body}")
                continue
            m = RESULT.match(body)
            if not m:
                continue
            desc, directive, reason = m.group(3).strip(), None, ""
            d = DIRECTIVE.match(desc)
            if d:
                desc, directive, reason = d.group(1).strip(), d.group(2).lower(), d.group(3)
            if cur is None or cur["name"] != desc:
                if cur is not None:
                    cur["problems"].append(f"its result never came (next: {body})")
                cur = new_suite(desc)
                cur["subtest"] = False
                suites.append(cur)
            cur["end"] = (m.group(1) == "ok", int(m.group(2) or 0), directive, reason)
            if init_err:
                cur["problems"].append(init_err)
                init_err = None
            cur = None
            continue
        if not started:
            continue
        if depth == 1:
            if body.startswith("# Subtest:"):
                if cur is not None:
                    cur["problems"].append("its result never came (a new suite began)")
                cur = new_suite(body.split(":", 1)[1].strip())
                suites.append(cur)
                params = []
                continue
            if "failed to initialize" in body:
                init_err = body.lstrip("# ").strip()
                continue
            m = PLAN.match(body)
            if m and cur is not None:
                if cur["plan"] is not None:
                    cur["problems"].append(f"a second plan: {body}")
                cur["plan"] = int(m.group(1))
                continue
            m = RESULT.match(body)
            if m and cur is not None:
                desc, directive, reason = m.group(3).strip(), None, ""
                d = DIRECTIVE.match(desc)
                if d:
                    desc, directive, reason = d.group(1).strip(), d.group(2).lower(), d.group(3)
                cur["cases"].append((m.group(1) == "ok", int(m.group(2) or 0), desc,
                                     directive, reason, params))
                params = []
            continue
        # depth >= 2: a parameterised case's own subtest; it names the
        # case, never the suite.
        if body.startswith("# Subtest:"):
            params = []
            continue
        m = RESULT.match(body)
        if m:
            params.append((m.group(1) == "ok", m.group(3).strip()))

    if not started:
        return [Result(False, top, diag=["no KTAP on the console: KUnit not built in, "
                                         "or the boot failed before it ran"])]
    if cur is not None:
        cur["problems"].append("its result never came: the console ends inside the suite")
    # One result per tests/AREA/patch-cases line, in every run: the case
    # or parameter is there exactly when the kernel has its patch. A whole
    # case's line stands for the case's own result (kept in whole_res), so
    # that the count is the same whether the case ran or not.
    whole = {(suite, case) for _, suite, case, param in patch_cases if param is None}
    whole_res = {}
    for n, s in enumerate(suites, 1):
        problems = s["problems"]
        for i, (ok, num, desc, directive, reason, prm) in enumerate(s["cases"], 1):
            name = f"{prefix}{s['name']}.{desc}"
            if num != i:
                problems.append(f"case {i} is numbered {num}")
            failed = [pd for pok, pd in prm if not pok]
            if directive and directive.startswith("skip"):
                r = (ctx.skip_result(name, reason) if ok else
                     Result(False, name, diag=[f"not ok with a SKIP: {reason}"]))
            elif directive:
                r = Result(False, f"{name} (directive {directive.upper()} is not accepted)")
            elif ok and failed:
                r = Result(False, f"{name} (reported ok, but parameters failed)",
                           diag=failed[:5])
            else:
                r = Result(ok, name + (f" ({len(prm)} parameters)" if prm else ""),
                           diag=[f"failed parameter: {x}" for x in failed[:5]])
            if (s["name"], desc) in whole:
                if (s["name"], desc) in whole_res:
                    problems.append(f"case {desc} reported more than once")
                whole_res.setdefault((s["name"], desc), r)
            else:
                out.append(r)
    for patch, suite, case, param in patch_cases:
        there = any(s["name"] == suite and any(c[2] == case and (
            param is None or any(pd == param for _, pd in c[5])) for c in s["cases"])
            for s in suites)
        what = "parameter" if param else "case"
        name = f"{prefix}{suite}.{case}" + (f"/{param}" if param else "")
        if patch not in ctx.lacks:
            if there and param is None:
                out.append(whole_res[(suite, case)])
                continue
            out.append(Result(there, f"{name}: patch {patch}'s {what} ran" if there else
                              f"{name} (patch {patch}'s {what}) never ran"))
        elif there:
            out.append(Result(False, f"{name} ran, but it is patch {patch}'s {what} and this "
                              f"kernel lacks patch {patch}"))
        else:
            out.append(ctx.skip_result(name, f"needs patch {patch}, which this kernel lacks"))
    for n, s in enumerate(suites, 1):
        problems = s["problems"]
        if not s["subtest"]:
            problems.insert(0, "failed before running any case (no '# Subtest:' and no "
                            "plan: its init failed)")
        elif s["plan"] is None:
            problems.append("no plan (1..N) of cases")
        elif s["plan"] != len(s["cases"]):
            problems.append(f"{len(s['cases'])} cases where its plan says 1..{s['plan']}")
        end = s["end"]
        if end is None:
            pass  # reported above
        else:
            ok, num, directive, reason = end
            if num != n:
                problems.append(f"its result is numbered {num}, not {n}")
            if not ok:
                problems.append("KUnit reports the suite as not ok")
            elif directive and not all(c[3] for c in s["cases"]):
                problems.append(f"the suite is skipped ({reason}) but not all of its cases")
        plan = f"plan 1..{s['plan']}" if s["plan"] is not None else "no plan"
        out.append(Result(not problems, f"{prefix}KUnit suite {s['name']}: complete "
                          f"({plan}, {len(s['cases'])} cases)", diag=problems))
    if top_plan is None:
        top_problems.append("no plan of suites (1..N)")
    elif top_plan != len(suites):
        top_problems.append(f"{len(suites)} suites where the plan says 1..{top_plan}")
    out.append(Result(not top_problems, f"{top} ({len(suites)} suites)", diag=top_problems))
    return out


# --- areas -------------------------------------------------------------------

def expected_count(path):
    """The file's one number (comments aside), or (None, why)."""
    try:
        lines = [x.split("#", 1)[0].strip() for x in open(path)]
    except FileNotFoundError:
        return None, f"{path} is missing"
    except OSError as e:
        return None, f"{path}: {e.strerror}"
    lines = [x for x in lines if x]
    if not lines:
        return None, f"{path} holds no number"
    if len(lines) > 1:
        return None, f"{path} holds more than one line besides comments: {' | '.join(lines[:3])}"
    if not re.fullmatch(r"[0-9]+", lines[0]):
        return None, f"{path}: not a number: {lines[0]}"
    return int(lines[0]), None


def collect_run(ctx, run, vm_rc, kunit=False, host=False, prefix="", patch_cases=()):
    res = [vm_result(ctx, run, vm_rc, prefix, host)]
    if not host:
        res.append(console_result(ctx, run, prefix))
    res += from_streams(ctx, run, prefix)
    hp = os.path.join(run, "host.tap")
    if os.path.exists(hp):
        # vm_pre/vm_post write it on the host; its plan is optional (the
        # area's expected count covers it).
        res += from_stream(ctx, "host.tap", hp, plan_optional=True, prefix=prefix)
    if kunit:
        res += from_kunit(ctx, run, prefix, patch_cases)
    return res


AREA_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s+(guest|host|manual)\s*(?:#.*)?$")


def declared_areas(tests):
    """DIR/areas: "AREA guest|host|manual  # what it tests" lines (a manual
    area is a host area that runs only when named). ([(area, kind)],
    [problems]): a malformed or repeated line, a declared area without its
    guest.sh/host.sh or expected, a directory of DIR with a guest.sh or
    host.sh that is not declared."""
    path = os.path.join(tests, "areas")
    top = os.path.basename(os.path.abspath(tests))
    rel = f"{top}/areas"
    areas, problems = [], []
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        return [], [f"{rel}: {e.strerror}: the areas are declared there"]
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = AREA_LINE.match(line.strip())
        if not m:
            problems.append(f"{rel}:{n}: not 'AREA guest|host|manual  # comment': {line}")
            continue
        area, kind = m.groups()
        if any(a == area for a, _ in areas):
            problems.append(f"{rel}:{n}: {area} declared twice")
            continue
        areas.append((area, kind))
        d = os.path.join(tests, area)
        script = "host" if kind == "manual" else kind
        for f in (f"{script}.sh", "expected"):
            if not os.path.isfile(os.path.join(d, f)):
                problems.append(f"{top}/{area}: declared as a {kind} area in {rel}, but "
                                f"{top}/{area}/{f} is missing")
        other = "host" if script == "guest" else "guest"
        if os.path.exists(os.path.join(d, f"{other}.sh")):
            problems.append(f"{top}/{area}: declared as a {kind} area in {rel}, but it has "
                            f"a {other}.sh")
    declared = {a for a, _ in areas}
    for d in sorted(os.listdir(tests)):
        if d in declared:
            continue
        there = [f for f in ("guest.sh", "host.sh") if os.path.isfile(os.path.join(tests, d, f))]
        if there:
            problems.append(f"{top}/{d}: has a {there[0]} but is not declared in {rel} "
                            "(add a line, or remove the area)")
    return areas, problems


def cmd_areas(a):
    """Print the declared areas ("AREA KIND" lines) and write the check of
    the declaration as a results file of its own (the pseudo-area
    "areas")."""
    areas, problems = declared_areas(a.tests)
    for area, kind in areas:
        print(area, kind)
    rel = os.path.basename(os.path.abspath(a.tests)) + "/areas"
    name = (f"areas: {rel} declares {len(areas)} areas; each has its guest.sh or "
            "host.sh and expected, and no other area is there")
    doc = {"area": "areas", "expected": 1, "counted": 1, "host": True, "seconds": None,
           "results": [Result(not problems, name, diag=problems).to_json()]}
    with open(a.out + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    return 0


def make_ctx(tests, area, since, lacks=()):
    sp = os.path.join(tests, "skip-reasons")
    skips = SkipReasons(sp)
    rel = os.path.relpath(sp, os.path.dirname(os.path.abspath(tests)))
    return Ctx(area, since, skips, rel, lacks), skips


def cmd_area(a):
    lacks = [x for x in (a.lacks or "").split(",") if x]
    bad = [x for x in lacks if not re.fullmatch(r"\d{4}", x)]
    ctx, skips = make_ctx(a.tests, a.area, a.since, lacks)
    conf = os.path.join(a.tests, a.area, "vm.conf")
    kunit = os.path.exists(conf) and re.search(r"^RESULTS=kunit-console\b",
                                               open(conf).read(), re.M) is not None
    res = [Result(False, f"{e} (tests/skip-reasons)") for e in skips.errors]
    if bad:
        res.append(Result(False, f"--lacks wants patch numbers NNNN, not {', '.join(bad)}"))
    patch_cases, problems = read_patch_cases(os.path.join(a.tests, a.area, "patch-cases"))
    res += [Result(False, f"tests/{a.area}/{p}") for p in problems]
    if patch_cases and not kunit:
        res.append(Result(False, f"tests/{a.area}/patch-cases names KUnit cases, but the area's "
                          "results are not KUnit's (RESULTS=kunit-console in its vm.conf)"))
    res += collect_run(ctx, a.run, a.vm_rc, kunit=kunit, host=a.host, patch_cases=patch_cases)
    exp_path = os.path.join(a.tests, a.area, "expected")
    rel = os.path.relpath(exp_path, os.path.dirname(os.path.abspath(a.tests)))
    want, why = expected_count(exp_path)
    why = why and why.replace(exp_path, rel)
    got = len(res)
    counted = got
    if why:
        res.append(Result(False, f"the area's expected number of results: {why}"))
    elif got != want:
        res.append(Result(False, f"{got} results where {rel} says {want}: results went "
                          "missing, or a program's count changed (then update the file)",
                          diag=[f"{r.name}" for r in res if r.name.endswith(")") and
                                ": complete (" in r.name]))
    doc = {"area": a.area, "expected": want, "counted": counted, "host": a.host,
           "seconds": a.seconds, "results": [r.to_json() for r in res]}
    for r in doc["results"]:
        r["name"] = f"{a.area}: {r['name']}"
    text = json.dumps(doc, indent=1)
    if a.out:
        with open(a.out + ".tmp", "w") as f:
            f.write(text)
        os.replace(a.out + ".tmp", a.out)
    else:
        print(text)
    return 0


def tap_line(ok, num, name, skip):
    name = " ".join(name.split()).replace("#", "\\#")
    line = f"{'ok' if ok else 'not ok'} {num} - {name}"
    if skip:
        line += f" # SKIP {' '.join(skip.split())}"
    return line


def cmd_run_tap(a):
    ctx, _ = make_ctx(a.tests, a.area, a.since)
    res = collect_run(ctx, a.run, a.vm_rc, prefix=f"{a.label}: ")
    for n, r in enumerate(res, 1):
        print(tap_line(r.ok, n, r.name, r.skip))
        for d in r.diag:
            print(f"# {d}")
    print(f"1..{len(res)}")
    return 0


def load_area(path):
    """An area's results; a file that is missing or broken is a failure."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        area = os.path.basename(path)[:-len(".json")]
        return {"area": area, "expected": None, "counted": 0, "seconds": None,
                "results": [{"ok": False, "skip": None, "diag": [str(e)],
                             "name": f"{area}: its results were not collected"}]}


def counts(d):
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for r in d["results"][:d["counted"]]:
        c["failed" if not r["ok"] else "skipped" if r["skip"] else "passed"] += 1
    return c


def area_line(d, c, width):
    exp = d["expected"] if d["expected"] is not None else "?"
    n = c["passed"] + c["failed"] + c["skipped"]
    mark = "" if n == d["expected"] else "  <- MISMATCH"
    return (f"{d['area'] + ':':<{width + 1}} {c['passed']} passed, {c['failed']} failed, "
            f"{c['skipped']} skipped (expected {exp}){mark}")


def cmd_summary(a):
    d = load_area(a.file)
    print(f"   {area_line(d, counts(d), len(d['area']))}")
    return 0


def cmd_report(a):
    areas = [load_area(path) for path in a.files]
    lines, fails, rows = ["TAP version 13"], [], []
    total = {"passed": 0, "failed": 0, "skipped": 0}
    num = 0
    body = []
    for d in areas:
        c = {"passed": 0, "failed": 0, "skipped": 0}
        for i, r in enumerate(d["results"]):
            num += 1
            line = tap_line(r["ok"], num, r["name"], r["skip"])
            body.append(line)
            body += [f"  # {x}" for x in r["diag"]]
            # the expected-count check (past "counted") is a failure of its own
            key = "failed" if not r["ok"] else "skipped" if r["skip"] else "passed"
            if i < d["counted"]:
                c[key] += 1
            total[key] += 1
            if not r["ok"]:
                fails.append((line, r["diag"]))
        rows.append((d, c))
    lines.append(f"1..{num}")
    lines += body
    with open(a.tap + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(a.tap + ".tmp", a.tap)
    if a.console:
        with open(a.console + ".tmp", "w") as f:
            for d in areas:
                if d.get("host"):
                    continue
                f.write(f"===== {d['area']} =====\n")
                try:
                    with open(os.path.join(a.runs, d["area"], "console.log"),
                              errors="replace") as c:
                        f.write(c.read())
                except OSError:
                    f.write("(no console log)\n")
        os.replace(a.console + ".tmp", a.console)

    for line, diag in fails:
        print(f"   FAIL: {line}")
        for x in diag[:60]:
            print(f"         | {x}")
    width = max([len(d["area"]) for d in areas] + [8])
    for d, c in rows:
        print(f"   {area_line(d, c, width)}")
    print_times(a, areas, width)
    print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return 1 if total["failed"] or not areas else 0


def print_times(a, areas, width):
    phases = []
    if a.times and os.path.exists(a.times):
        for line in open(a.times):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 2 and not f[0].startswith("test:"):
                phases.append((f[0], float(f[1]), f[2] if len(f) > 2 else "0"))
    width = max([width] + [len(p[0]) for p in phases]) + 2
    print("   time table (seconds):")
    for name, secs, rc in phases:
        print(f"     {name:<{width}} {secs:8.1f}{'' if rc == '0' else '  FAILED (' + rc + ')'}")
    if a.wall is not None:
        busy = sum(d.get("seconds") or 0 for d in areas)
        print(f"     {'tests':<{width}} {a.wall:8.1f}  ({a.lanes} lane{'s' * (a.lanes != 1)}; "
              f"the areas' own times add up to {busy:.1f})")
    for d in sorted(areas, key=lambda d: -(d.get("seconds") or 0)):
        if d.get("seconds") is not None:
            print(f"       {d['area']:<{width - 2}} {d['seconds']:8.1f}")
    if a.total is not None:
        print(f"     {'total':<{width}} {a.total:8.1f}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("area")
    p.add_argument("area")
    p.add_argument("--tests", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--vm-rc", type=int)
    p.add_argument("--since", type=float)
    p.add_argument("--seconds", type=float)
    p.add_argument("--host", action="store_true")
    p.add_argument("--lacks")
    p.add_argument("--out")
    p = sub.add_parser("areas")
    p.add_argument("--tests", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("run-tap")
    p.add_argument("--label", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--vm-rc", type=int, required=True)
    p.add_argument("--since", type=float)
    p.add_argument("--tests", default=os.path.join(HERE, "..", "tests"))
    p.add_argument("--area", default="")
    p = sub.add_parser("summary")
    p.add_argument("file")
    p = sub.add_parser("report")
    p.add_argument("--tap", required=True)
    p.add_argument("--console")
    p.add_argument("--runs")
    p.add_argument("--times")
    p.add_argument("--wall", type=float)
    p.add_argument("--lanes", type=int, default=1)
    p.add_argument("--total", type=float)
    p.add_argument("files", nargs="*")
    a = ap.parse_args(argv[1:])
    return {"area": cmd_area, "areas": cmd_areas, "run-tap": cmd_run_tap, "summary": cmd_summary,
            "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
