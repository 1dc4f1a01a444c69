#!/usr/bin/env python3
"""make outgoing's patch sets, checked on the host (no kernel build, no VM).

scripts/outgoing.sh writes every topic of patches/topics into a scratch
directory; then, independently of it: every patch of patches/series is in
exactly one topic; each topic's files are a cover letter and its patches
as [PATCH n/m], each carrying the series' patch unchanged (same patch id);
each topic applies with `git apply` (what `git am` does) from those files
onto the tag baseline of build/linux after the files of the topics it
needs, in order, in a scratch index; base-commit and prerequisite-patch-id
lines say exactly that; To and Cc are there; each cover letter names the
topic's areas with the counts of their tests/AREA/expected. Then crafted
topics files must make scripts/outgoing.sh fail, naming the cause: a
patch that does not apply, a missing NEEDS, a patch in two topics, a
patch in none. Output: TAP.

Environment: TREE (default build/linux), OUTGOING_TOPICS (the topics file
to check, default patches/topics: a broken one shows this failing).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
TREE = os.environ.get("TREE") or os.path.join(TOP, "build/linux")
TOPICS = os.environ.get("OUTGOING_TOPICS") or os.path.join(TOP, "patches/topics")
PATCHES = os.path.join(TOP, "patches")
OUTGOING = os.path.join(TOP, "scripts/outgoing.sh")
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from host_tap import results, tap  # noqa: E402


def run(args, env=None, **kw):
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


def read_series():
    with open(os.path.join(PATCHES, "series")) as f:
        return [x.split("#", 1)[0].strip() for x in f if x.split("#", 1)[0].strip()]


def expand(spec):
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += [f"{n:04d}" for n in range(int(a), int(b or a) + 1)]
    return out


def read_topics(path):
    """[(name, [NNNN...], [needs], [areas])] - a parser of its own, not outgoing.py's."""
    out = []
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            fields += ["-"] * (4 - len(fields))
            name, spec, needs, areas = fields[:4]
            out.append((name, expand(spec), [] if needs == "-" else needs.split(","),
                        [] if areas == "-" else areas.split(",")))
    return out


def write_topics(path, topics):
    with open(path, "w") as f:
        for name, nums, needs, areas in topics:
            f.write(f"{name} {','.join(nums)} {','.join(needs) or '-'} {','.join(areas) or '-'}\n")


def closure(topics, name):
    by = {t[0]: t for t in topics}
    order = [t[0] for t in topics]
    seen, todo = set(), list(by[name][2])
    while todo:
        n = todo.pop()
        if n not in seen and n in by:
            seen.add(n)
            todo += by[n][2]
    return sorted(seen, key=order.index)


def patch_id(path):
    with open(path) as f:
        p = run(["git", "patch-id", "--stable"], stdin=f)
    return p.stdout.split()[0] if p.stdout.split() else None


def expected(area):
    with open(os.path.join(TOP, "tests", area, "expected")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                return int(line)
    return None


def header(text, name):
    """An RFC 2822 header's addresses (folded lines joined)."""
    m = re.search(rf"^{name}: (.*(?:\n[ \t].*)*)", text.split("\n\n", 1)[0], re.M)
    if not m:
        return []
    return [x.strip() for x in re.sub(r"\n[ \t]+", " ", m.group(1)).split(",") if x.strip()]


def outgoing(out, topics_file, *args):
    env = dict(os.environ, OUTGOING_OUT=out, OUTGOING_TOPICS=topics_file, TREE=TREE)
    return run([OUTGOING, *args], env=env)


def main():
    work = tempfile.mkdtemp(prefix="outgoing-test.")
    try:
        check(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{len(results)}")


def check(work):
    p = run(["git", "-C", TREE, "rev-parse", "--verify", "-q", "refs/tags/baseline^{commit}"])
    base = p.stdout.strip()
    tap(p.returncode == 0 and bool(base), "build/linux has the tag baseline (the unpatched tree)",
        [f"{TREE}: no tag baseline; make check (or make tree) makes it"])

    series = read_series()
    number = {re.match(r"\d{4}", s).group(0): s for s in series if re.match(r"\d{4}-", s)}
    topics = read_topics(TOPICS)
    owners = {}
    for name, nums, _, _ in topics:
        for n in nums:
            owners.setdefault(n, []).append(name)
    diag = [f"patches/series: {number[n]} is in topics {', '.join(owners.get(n, [])) or 'none'}"
            for n in sorted(number) if len(owners.get(n, [])) != 1]
    diag += [f"topic {', '.join(o)}: patch {n} is not in patches/series"
             for n, o in sorted(owners.items()) if n not in number]
    tap(not diag and len(number) == len(series),
        f"every patch of patches/series ({len(series)}) is in exactly one topic of "
        f"{os.path.relpath(TOPICS, TOP)} ({len(topics)} topics)", diag)
    names = [t[0] for t in topics]
    diag = [f"topic {name} needs {n}, not declared on an earlier line"
            for i, (name, _, needs, _) in enumerate(topics) for n in needs if n not in names[:i]]
    tap(not diag, "each topic's NEEDS are topics declared before it", diag)

    out = os.path.join(work, "out")
    p = outgoing(out, TOPICS)
    err = [x for x in p.stderr.strip().splitlines() if not x.startswith("error: make outgoing")]
    tap(p.returncode == 0, "scripts/outgoing.sh (make outgoing) writes every topic",
        [f"exit status {p.returncode}", *err[:8]] + ([f"({len(err) - 8} lines more)"] if len(err) > 8 else []))
    wrote = p.returncode == 0

    def tap_written(ok, name, diag):
        """A check of what make outgoing wrote: when it wrote nothing, say
        that once instead of one line per topic."""
        if wrote:
            tap(ok, name, diag)
        else:
            tap(False, name, ["not checked: scripts/outgoing.sh wrote nothing (see the result above)"])

    # What it wrote, per topic: (cover text, [(subject, path)]).
    files, diag = {}, []
    for name, nums, _, _ in topics:
        d = os.path.join(out, name)
        got = sorted(os.listdir(d)) if os.path.isdir(d) else []
        m = len(nums)
        if len(got) != m + 1 or not got or not got[0].startswith("0000-cover-letter"):
            diag.append(f"{name}: want a cover letter and {m} patches, found {got or 'nothing'}")
            continue
        texts = []
        for i, g in enumerate(got):
            with open(os.path.join(d, g)) as f:
                texts.append(f.read())
            subj = " ".join(header(texts[-1], "Subject"))
            if not re.match(rf"\[PATCH(?: [^\]]*)? {i}/{m}\] ", subj):
                diag.append(f"{name}/{g}: subject '{subj[:60]}' is not [PATCH {i}/{m}]")
        files[name] = (texts[0], [os.path.join(d, g) for g in got[1:]], texts)
    tap_written(not diag and len(files) == len(topics),
        "each topic is a cover letter and its patches as [PATCH n/m], in order", diag)

    diag = []
    for name, nums, _, _ in topics:
        if name not in files:
            diag.append(f"{name}: not written")
            continue
        for n, path in zip(nums, files[name][1]):
            src = os.path.join(PATCHES, number.get(n, "?"))
            if not os.path.isfile(src) or patch_id(path) != patch_id(src):
                diag.append(f"{name}: {os.path.basename(path)} is not {number.get(n, n)} "
                            f"(patch id {patch_id(path)} vs {patch_id(src) if os.path.isfile(src) else '-'})")
    tap_written(not diag, "each written patch is the series' patch, unchanged (git patch-id --stable)", diag)

    # Apply as a maintainer would: the prerequisites' files, then the topic's.
    diag = []
    scratch = os.path.join(work, "repo.git")
    run(["git", "init", "-q", "--bare", scratch])
    objects = run(["git", "-C", TREE, "rev-parse", "--path-format=absolute", "--git-common-dir"]).stdout.strip()
    with open(os.path.join(scratch, "objects/info/alternates"), "w") as f:
        f.write(os.path.join(objects, "objects") + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=scratch, GIT_INDEX_FILE=os.path.join(work, "index"))
    # The baseline's index once (75,000 entries), a copy of it per topic.
    p = run(["git", "read-tree", base], env=env)
    if p.returncode:
        diag.append(f"git read-tree baseline: {p.stderr.strip()}")
    else:
        shutil.copy(env["GIT_INDEX_FILE"], os.path.join(work, "index.baseline"))
    for name, _, _, _ in topics:
        if p.returncode:
            break
        if name not in files or any(n not in files for n in closure(topics, name)):
            diag.append(f"{name}: not written (or a topic it needs is not)")
            continue
        shutil.copy(os.path.join(work, "index.baseline"), env["GIT_INDEX_FILE"])
        for owner in closure(topics, name) + [name]:
            bad = False
            for path in files[owner][1]:
                p = run(["git", "apply", "--cached", path], env=env)
                if p.returncode:
                    diag.append(f"{name}: {owner}/{os.path.basename(path)} does not apply: {p.stderr.strip()}")
                    bad = True
                    break
            if bad:
                break
    tap_written(not diag and len(files) == len(topics),
        "each topic applies (git apply, as git am does) on baseline + the topics it needs, in order", diag)

    diag = []
    for name, nums, _, _ in topics:
        if name not in files:
            continue
        cover = files[name][0]
        b = re.findall(r"^base-commit: (\S+)$", cover, re.M)
        if b != [base]:
            diag.append(f"{name}: base-commit {b}, want [{base}]")
        want = [patch_id(p) for n in closure(topics, name) if n in files for p in files[n][1]]
        got = re.findall(r"^prerequisite-patch-id: (\S+)$", cover, re.M)
        if got != want:
            diag.append(f"{name}: prerequisite-patch-id {got}, want {want} ({closure(topics, name)})")
    tap_written(not diag and len(files) == len(topics),
        "base-commit is the baseline; prerequisite-patch-id lines are the needed topics' patches", diag)

    diag = []
    for name, _, _, _ in topics:
        if name not in files:
            continue
        heads = {(tuple(header(t, "To")), tuple(header(t, "Cc"))) for t in files[name][2]}
        to, cc = next(iter(heads))
        if len(heads) != 1:
            diag.append(f"{name}: the files' To/Cc differ")
        if not any("@" in x for x in to) or not any("@" in x for x in cc):
            diag.append(f"{name}: To {list(to)}, Cc {list(cc)}")
    tap_written(not diag and len(files) == len(topics),
        "each topic's files carry the same To (maintainers) and Cc (lists)", diag)

    diag = []
    for name, _, _, areas in topics:
        if name not in files:
            continue
        cover = files[name][0]
        for ph in ("*** SUBJECT HERE ***", "*** BLURB HERE ***"):
            if ph in cover:
                diag.append(f"{name}: cover letter still says {ph}")
        named = dict(re.findall(r"^  tests/(\S+)\s+(\d+) results", cover, re.M))
        want = {a: str(expected(a)) for a in areas}
        if named != want:
            diag.append(f"{name}: cover letter names {named}, want {want} (tests/AREA/expected)")
    tap_written(not diag and len(files) == len(topics),
        "each cover letter names the topic's areas with their tests/AREA/expected counts", diag)

    # Crafted topics files: each must fail, saying why.
    def must_fail(label, crafted, pattern, *args):
        if crafted is None:
            tap(False, label, ["the crafted topics file could not be made from this topics file"])
            return
        path = os.path.join(work, "topics-crafted")
        write_topics(path, crafted)
        p = outgoing(os.path.join(work, "crafted-out"), path, *args)
        ok = p.returncode != 0 and re.search(pattern, p.stderr)
        tap(bool(ok), label, [f"exit status {p.returncode}, want a failure matching /{pattern}/",
                              *p.stderr.strip().splitlines()[:5]])

    # A patch moved before the patch of its topic that creates a file it changes.
    crafted, label = None, "a topic whose patches are out of order fails: does not apply"
    for i, (name, nums, needs, areas) in enumerate(topics):
        created = {}
        for j, n in enumerate(nums):
            text = open(os.path.join(PATCHES, number[n])).read() if n in number else ""
            for path in re.findall(r"^diff --git a/(\S+) b/\S+\nnew file mode", text, re.M):
                created.setdefault(path, j)
            for path in re.findall(r"^diff --git a/(\S+) b/\S+\nindex", text, re.M):
                if path in created and created[path] < j and crafted is None:
                    moved = nums[:created[path]] + [n] + [x for x in nums[created[path]:] if x != n]
                    crafted = topics[:i] + [(name, moved, needs, areas)] + topics[i + 1:]
                    label = (f"topic {name} with {n} moved before {nums[created[path]]} fails: "
                             f"does not apply")
                    pattern = rf"topic {re.escape(name)}: {n}-\S+ .*does not apply"
    must_fail(label, crafted, pattern if crafted else "", "--check-only")

    crafted = [(n, p, [], a) for n, p, _, a in topics] if any(t[2] for t in topics) else None
    must_fail("topics without their NEEDS fail: a topic uses what another adds",
              crafted, r"uses \w+, which topic \S+ adds: declare NEEDS", "--check-only")

    crafted = None
    if len(topics) >= 2 and topics[0][1]:
        last = topics[-1]
        crafted = topics[:-1] + [(last[0], last[1] + [topics[0][1][0]], last[2], last[3])]
    must_fail("a patch in two topics fails", crafted, r"is in topic \S+ and in topic", "--check-only")

    crafted = None
    for i in reversed(range(len(topics))):
        if len(topics[i][1]) >= 2:
            t = topics[i]
            crafted = topics[:i] + [(t[0], t[1][:-1], t[2], t[3])] + topics[i + 1:]
            break
    must_fail("a patch in no topic fails", crafted, r"is in no topic", "--check-only")

    # make bisect-check's boots (scripts/topic-boot-plan.py): every area a
    # topic names declares the patches its expected results assume, and
    # runs on the topic's last patch or is listed with the patch it lacks;
    # the areas run knowing the patches after the prefix (LACKS).
    plan_py = os.path.join(TOP, "scripts/topic-boot-plan.py")
    p = run([sys.executable, plan_py, TOP])
    diag = [] if p.returncode == 0 else [p.stderr.strip() or f"exit status {p.returncode}"]
    rows = {}
    pos = {re.match(r"\d{4}", s).group(0): i for i, s in enumerate(series)}
    for line in p.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) != 5 or fields[0] not in pos:
            diag.append(f"plan line '{line}': want NNNN TOPICS AREAS NOTES LACKS, NNNN in "
                        "patches/series")
            continue
        last, names, runs, notes, lacks = fields
        after = [n for n in pos if pos[n] > pos[last]]
        if lacks != (",".join(after) or "-"):
            diag.append(f"prefix {last}: lacks '{lacks}', want the patches after it: {after}")
        for name in names.split(","):
            rows[name] = (last, runs.split(","), notes)
    for name, nums, _, areas in topics:
        if name not in rows:
            diag.append(f"{name}: no prefix in the plan")
            continue
        last, runs, notes = rows[name]
        if last != max(nums, key=lambda n: pos.get(n, -1)):
            diag.append(f"{name}: prefix {last}, want its last patch in patches/series")
        whole = pos[last] == len(series) - 1
        if ("the whole series" in notes) != whole:
            diag.append(f"{name}: prefix {last} of {len(series)} patches, notes '{notes}'")
        for a in areas:
            path = os.path.join(TOP, "tests", a, "needs")
            if not os.path.exists(path):
                diag.append(f"{name}: tests/{a}/needs is missing")
                continue
            with open(path) as f:
                want = expand(",".join(l.strip() for l in f if l.strip() and not l.startswith("#")))
            unknown = [n for n in want if n not in pos]
            if unknown:
                diag.append(f"tests/{a}/needs names {unknown}, not in patches/series")
                continue
            later = [n for n in want if pos[n] > pos[last]]
            if whole or later:
                if a in runs or not (whole or f"{a} not run: tests/{a}/needs {', '.join(later)}" in notes):
                    diag.append(f"{name}: {a} at {last}: runs {runs}, notes '{notes}', lacks {later}")
            elif a not in runs:
                diag.append(f"{name}: {a} can run at {last} (needs {want}) but the plan runs {runs}")
    tap(not diag and bool(rows), "make bisect-check boots each topic's last patch with the areas "
        "its tests/AREA/needs allow, and says why it leaves others out", diag)

    # topic-boot.sh NNNN... keeps the other rows only while they stand for
    # today's tests (scripts/topic-boot-keep.py).
    keep_rows(os.path.join(TOP, "scripts/topic-boot-keep.py"))


def keep_rows(keep_py):
    def exp(a):
        with open(os.path.join(TOP, "tests", a, "expected")) as f:
            return int(next(l for l in (x.split("#")[0].strip() for x in f) if l))
    k = exp("kunit")
    plan = ("0001\ta\t-\t-\t0002,0003\n0002\tb\tkunit\t-\t0003\n"
            "0003\tc\t-\tthe whole series: make check\t-\n")
    good = {"0001": "boots", "0002": f"boots; kunit: {k - 1} passed, 0 failed, 1 skipped"}
    cases = [  # (what, rows, keys, fingerprints now, kept 0002 or None)
        ("a passing row whose count is today's and whose fingerprint is today's is kept",
         good, "0002 f1\n", "0001 f0\n0002 f1\n", True),
        ("a row from before fingerprints is kept on its count", good, "", "0002 f9\n", True),
        ("a row whose tests changed since (fingerprint) is not kept", good, "0002 f1\n",
         "0002 f2\n", False),
        ("a row whose count is not today's expected count is not kept",
         {**good, "0002": f"boots; kunit: {k - 2} passed, 0 failed, 1 skipped"}, "", "", False),
        ("a failed row is not kept", {**good, "0002": "**kunit: 1 passed, 1 failed**"}, "", "",
         False),
        ("a row of other areas than the plan's is not kept",
         {**good, "0002": f"boots; mctp: {k} passed, 0 failed, 0 skipped"}, "", "", False),
        ("a prefix without a row is not kept", {"0001": "boots"}, "", "", False),
    ]
    diag = []
    with tempfile.TemporaryDirectory() as d:
        for what, rows, keys, now, kept in cases:
            with open(f"{d}/boot.md", "w") as f:
                f.write("series abc 2026-01-02\n| last patch | topics | result | not run here |\n")
                f.write("|---|---|---|---|\n")
                f.writelines(f"| {n} | t | {r} |  |\n" for n, r in rows.items())
            with open(f"{d}/keys", "w") as f:
                f.write(keys)
            with open(f"{d}/plan", "w") as f:
                f.write(plan)
            p = subprocess.run([sys.executable, keep_py, TOP, f"{d}/boot.md", f"{d}/keys", "0001",
                                f"{d}/plan"], input=now, capture_output=True, text=True)
            ok = (p.returncode == 0 and p.stdout == f"0002\t{rows['0002']}\t2026-01-02\n"
                  if kept else p.returncode == 1 and "cannot keep 0002" in p.stderr)
            if not ok:
                diag.append(f"{what}: exit {p.returncode}, out {p.stdout!r}, err {p.stderr!r}")
    tap(not diag, "make bisect-check's rerun of some prefixes keeps another row only when it "
        "passed, ran today's areas, counts today's expected results and its tests are unchanged",
        diag)


if __name__ == "__main__":
    main()
