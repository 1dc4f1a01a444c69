#!/usr/bin/env python3
"""The outgoing patch sets, one per topic (scripts/outgoing.sh, make
outgoing; checked by tests/outgoing).

  outgoing.py --tree TREE --out DIR [--topics FILE] [--check-only]

Topics come from patches/topics (TOPIC PATCHES NEEDS AREAS, see there),
cover texts from patches/covers/TOPIC. For each topic, in the file's
order, the patches of the topics it needs (transitively, in the file's
order) and then its own are applied from patches/*.patch onto the tag
`baseline` of TREE, each with `git apply --cached` into a temporary index
and committed with its own author, date and message - in a scratch
repository that borrows TREE's objects, so TREE is only read and nothing
is checked out. Then `git format-patch` writes DIR/TOPIC/: a cover letter
(0000: what and why from patches/covers/TOPIC, how it was tested: the
make check areas and their result counts from tests/AREA/expected) and
the patches as [PATCH n/m], with base-commit and prerequisite-patch-id
lines, To (maintainers, reviewers) and Cc (lists) from TREE's
scripts/get_maintainer.pl (no git, no network). Nothing is sent.

Refused, naming the cause, before anything is written: a patch of
patches/series in no topic or in two, a topic naming a patch not in the
series, a NEEDS topic not declared on an earlier line, an area without
tests/AREA/expected, a missing cover text. Then a patch that does not
apply fails its topic, with git apply's message; every topic is tried.
A topic using another topic's new identifiers (a #define, a
struct/union/enum, an enum constant, an exported symbol; not one the
baseline has in include/ or the directories either touches) without
NEEDS fails too: it would apply and not build.
--check-only stops after applying (no files written). Exit status 1 on
any failure.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Topic:
    def __init__(self, name, numbers, needs, areas, line):
        self.name, self.numbers, self.needs, self.areas, self.line = name, numbers, needs, areas, line
        self.files = []      # patch file names, in order
        self.closure = []    # the topics applied first, in topics-file order
        self.cover = {}      # headers of patches/covers/TOPIC
        self.blurb = ""


def read_series(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out


def expand(spec):
    """'0002-0009,0011' -> ['0002', ..., '0009', '0011']"""
    out = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d{4})(?:-(\d{4}))?", part)
        if not m:
            raise ValueError(f"'{part}' is not NNNN or NNNN-NNNN")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        if b < a:
            raise ValueError(f"range '{part}' runs backwards")
        out += [f"{n:04d}" for n in range(a, b + 1)]
    return out


def parse_topics(path, series, tests, covers):
    """(topics in order, errors)"""
    errors = []
    by_number = {}
    for p in series:
        m = re.match(r"(\d{4})-", p)
        if not m:
            errors.append(f"patches/series: '{p}' is not named NNNN-subject.patch")
            continue
        by_number[m.group(1)] = p
    topics, names, owner = [], {}, {}
    with open(path) as f:
        lines = f.readlines()
    for i, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{os.path.basename(path)}:{i}"
        fields = line.split()
        if len(fields) not in (3, 4):
            errors.append(f"{where}: want 'TOPIC PATCHES NEEDS [AREAS]', got '{line}'")
            continue
        name, spec, needs = fields[:3]
        areas = fields[3] if len(fields) == 4 else "-"
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
            errors.append(f"{where}: topic name '{name}' (want lower case letters, digits, . _ -)")
            continue
        if name in names:
            errors.append(f"{where}: topic {name} declared twice")
            continue
        try:
            numbers = expand(spec)
        except ValueError as e:
            errors.append(f"{where}: topic {name}: {e}")
            numbers = []
        need_list = [] if needs == "-" else needs.split(",")
        area_list = [] if areas == "-" else areas.split(",")
        t = Topic(name, numbers, need_list, area_list, where)
        for n in numbers:
            if n not in by_number:
                errors.append(f"{where}: topic {name}: patch {n} is not in patches/series")
            elif n in owner:
                errors.append(f"{where}: patch {by_number[n]} is in topic {owner[n]} and in topic {name}")
            else:
                owner[n] = name
                t.files.append(by_number[n])
        for nd in need_list:
            if nd not in names:
                errors.append(f"{where}: topic {name} needs '{nd}', which is not declared on an earlier line")
        for a in area_list:
            if not os.path.isfile(os.path.join(tests, a, "expected")):
                errors.append(f"{where}: topic {name}: area '{a}' has no tests/{a}/expected")
        cover = os.path.join(covers, name)
        if not os.path.isfile(cover):
            errors.append(f"{where}: topic {name} has no cover text {cover}")
        else:
            t.cover, t.blurb = read_cover(cover)
            if "Subject" not in t.cover:
                errors.append(f"{cover}: no 'Subject:' line")
        names[name] = t
        topics.append(t)
    for n, p in by_number.items():
        if n not in owner:
            errors.append(f"patches/series: {p} is in no topic of {os.path.basename(path)}")
    order = {t.name: i for i, t in enumerate(topics)}
    for t in topics:
        seen = set()
        todo = [n for n in t.needs if n in names]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo += [m for m in names[n].needs if m in names]
        t.closure = sorted(seen, key=order.get)
    return topics, errors


def read_cover(path):
    """Headers (Subject, Prefix, To, Cc) up to the first blank line, then the text."""
    with open(path) as f:
        text = f.read()
    head, _, body = text.partition("\n\n")
    headers = {}
    for line in head.splitlines():
        k, _, v = line.partition(":")
        headers.setdefault(k.strip(), []).append(v.strip())
    return {k: v if k in ("To", "Cc") else v[0] for k, v in headers.items()}, body.strip("\n")


def added_lines(patch_path):
    """The added lines of a patch, per file: {path: [line, ...]}"""
    out, cur = {}, None
    with open(patch_path, errors="replace") as f:
        for line in f:
            if line.startswith("+++ "):
                cur = line[4:].strip()
                cur = cur[2:] if cur.startswith("b/") else cur
                out.setdefault(cur, [])
            elif cur and line.startswith("+"):
                out[cur].append(line[1:].rstrip("\n"))
    return out


DEFINES = [
    re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)"),
    re.compile(r"^\s*(?:struct|union|enum)\s+([A-Za-z_]\w*)\s*\{"),
    re.compile(r"^\s*EXPORT_SYMBOL(?:_GPL)?\(\s*(\w+)\s*\)"),
]
ENUM_CONST = re.compile(r"^\s*([A-Z][A-Z0-9_]{3,})\s*(?:=[^,]*)?,?\s*(?:/\*.*)?$")


def identifiers(topic, patches_dir):
    """(what the topic's patches define, the words their added code lines use)"""
    defined, used = set(), set()
    for p in topic.files:
        for path, lines in added_lines(os.path.join(patches_dir, p)).items():
            code = path.endswith((".c", ".h"))
            for line in lines:
                for rx in DEFINES:
                    m = rx.match(line)
                    if m:
                        defined.add(m.group(1))
                if path.endswith(".h"):
                    m = ENUM_CONST.match(line)
                    if m:
                        defined.add(m.group(1))
                if code:
                    # Comments and strings name things without using them.
                    s = re.sub(r'"(?:\\.|[^"\\])*"', "", line)
                    s = re.sub(r"/\*.*?(\*/|$)|//.*$", "", s)
                    if s.lstrip().startswith(("*", "/*")):
                        continue
                    used.update(WORD.findall(s))
    return defined, used


def touched(topic, patches_dir):
    files = set()
    for p in topic.files:
        files.update(added_lines(os.path.join(patches_dir, p)))
    return files


def check_needs(topics, patches_dir, tree, base):
    """Errors for topics using another topic's new identifiers without NEEDS."""
    ids = {t.name: identifiers(t, patches_dir) for t in topics}
    cand = []  # (topic, other, identifier)
    for t in topics:
        defined_t, used_t = ids[t.name]
        for u in topics:
            if u is t or u.name in t.closure:
                continue
            for ident in sorted((ids[u.name][0] & used_t) - defined_t):
                cand.append((t, u, ident))
    if not cand:
        return []
    # An identifier the baseline already has where either topic could take
    # it from (include/, the directories of the files they touch) is not
    # the other topic's. (Grepping the whole tree takes 15 s.)
    errors = []
    for t, u, ident in cand:
        dirs = {"include"} | {os.path.dirname(f) or "." for f in touched(t, patches_dir) | touched(u, patches_dir)}
        p = subprocess.run(["git", "-C", tree, "grep", "-q", "-w", "-e", ident, base, "--"] + sorted(dirs),
                           capture_output=True, text=True)
        if p.returncode == 1:
            errors.append(f"topic {t.name} uses {ident}, which topic {u.name} adds: declare "
                          f"NEEDS {u.name} (it would apply without it, and not build)")
    return errors


class Scratch:
    """A bare repository borrowing TREE's objects, with its own index."""

    def __init__(self, tree):
        self.dir = tempfile.mkdtemp(prefix="outgoing.")
        self.git_dir = os.path.join(self.dir, "repo.git")
        objects = os.path.join(git(["rev-parse", "--path-format=absolute", "--git-common-dir"],
                                   cwd=tree).strip(), "objects")
        subprocess.run(["git", "init", "-q", "--bare", self.git_dir], check=True)
        with open(os.path.join(self.git_dir, "objects/info/alternates"), "w") as f:
            f.write(objects + "\n")
        # Each git apply rewrites the index: with a split index only the
        # entries that changed, not 75,000.
        subprocess.run(["git", "--git-dir", self.git_dir, "config", "core.splitIndex", "true"], check=True)
        self.env = dict(os.environ, GIT_DIR=self.git_dir,
                        GIT_INDEX_FILE=os.path.join(self.dir, "index"))
        for k in list(self.env):
            if k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_WORK_TREE")):
                del self.env[k]
        self.index_at = None
        self.memo = {}  # (parent commit, patch file) -> commit

    def git(self, args, env=None, **kw):
        return git(args, env=dict(self.env, **(env or {})), **kw)

    def move_index(self, to):
        """The index at commit `to`: a full read-tree once (75,000 entries,
        seconds on a busy machine), afterwards only the paths that differ."""
        if self.index_at is None:
            self.git(["read-tree", to])
        elif self.index_at != to:
            paths = [x for x in self.git(["diff-tree", "-r", "-z", "--no-renames", "--name-only",
                                          self.index_at, to]).split("\0") if x]
            have = {}
            if paths:
                for entry in self.git(["--literal-pathspecs", "ls-tree", "-r", "-z", to, "--"] + paths).split("\0"):
                    if entry:
                        meta, path = entry.split("\t", 1)
                        mode, _, sha = meta.split()
                        have[path] = f"{mode} {sha}"
                info = "".join(f"{have.get(x, '0 ' + '0' * 40)}\t{x}\0" for x in paths)
                self.git(["update-index", "-z", "--index-info"], input=info)
        self.index_at = to
        if os.environ.get("OUTGOING_DEBUG_INDEX"):
            assert self.git(["write-tree"]).strip() == self.git(["rev-parse", f"{to}^{{tree}}"]).strip(), to

    def apply(self, parent, patch_path):
        """Commit patch_path on parent; (commit, None) or (None, error text)."""
        key = (parent, patch_path)
        if key in self.memo:
            return self.memo[key], None
        self.move_index(parent)
        msg, diff = os.path.join(self.dir, "msg"), os.path.join(self.dir, "diff")
        with open(patch_path, "rb") as f:
            info = subprocess.run(["git", "mailinfo", msg, diff], stdin=f, capture_output=True,
                                  env=self.env, check=True).stdout.decode()
        hdr = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
        p = subprocess.run(["git", "apply", "--cached", diff], capture_output=True, text=True,
                           env=self.env)
        if p.returncode:  # then git apply has left the index as it was
            return None, (p.stderr.strip() or f"git apply exit status {p.returncode}")
        tree = self.git(["write-tree"]).strip()
        with open(msg) as f:
            body = f.read().strip("\n")
        message = hdr.get("Subject", "").strip() + ("\n\n" + body if body else "") + "\n"
        who = {
            "GIT_AUTHOR_NAME": hdr.get("Author", ""), "GIT_AUTHOR_EMAIL": hdr.get("Email", ""),
            "GIT_AUTHOR_DATE": hdr.get("Date", ""),
            "GIT_COMMITTER_NAME": hdr.get("Author", ""), "GIT_COMMITTER_EMAIL": hdr.get("Email", ""),
            "GIT_COMMITTER_DATE": hdr.get("Date", ""),
        }
        commit = self.git(["commit-tree", tree, "-p", parent], env=who, input=message).strip()
        self.index_at = commit
        self.memo[key] = commit
        return commit, None

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def git(args, cwd=None, env=None, input=None):
    p = subprocess.run(["git"] + args, cwd=cwd, env=env, input=input, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def expected_count(tests, area):
    with open(os.path.join(tests, area, "expected")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                return int(line)
    raise ValueError(f"tests/{area}/expected holds no number")


def maintainers(tree, mfile, patch_paths):
    """(To, Cc): maintainers, reviewers and the like; mailing lists. From the
    tree's own script, offline (no git, no keyword matches: they hit words
    in context lines)."""
    p = subprocess.run([os.path.join(tree, "scripts/get_maintainer.pl"), "--mpath", mfile,
                        "--no-git", "--no-git-fallback", "--no-fixes", "--no-keywords", "--roles",
                        "--no-multiline", "--separator", "\n"] + patch_paths,
                       cwd=tree, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"get_maintainer.pl: {p.stderr.strip()}")
    to, cc = [], []
    for line in p.stdout.splitlines():
        # "Name <addr> (role:SUBSYSTEM (more),role:...)" or "addr (open list:...)"
        m = re.match(r"^(.*?>|[^\s<>]+@[^\s<>]+)\s+\((.*)\)$", line.strip())
        if not m:
            continue
        roles = [r.strip() for r in m.group(2).split(",")]
        (cc if any(re.match(r"(open |moderated |subscriber )?list\b", r) for r in roles) else to).append(m.group(1))
    return to, cc


def testing_text(t, tests, series, topics_by_name, version):
    wrap = lambda text: textwrap.fill(text, width=72, break_on_hyphens=False)
    out = ["How it was tested", "",
           wrap(f"Booted in QEMU on the debug test kernel (KASAN, kmemleak, lockdep) "
                f"built from Debian 12's linux-source-6.1 ({version}) with the whole "
                f"series applied ({len(series)} patches, patches/series). `make check` "
                f"runs the areas below; each must produce exactly the number of results "
                f"its tests/AREA/expected states, none failing (a skip passes only with "
                f"a reason tests/skip-reasons lists for the area):"), ""]
    if t.areas:
        w = max(len(a) for a in t.areas) + 6
        for a in t.areas:
            out.append(f"  {'tests/' + a:<{w}} {expected_count(tests, a):>4} results   "
                       f"scripts/run-tests.sh {a}")
    else:
        out.append("  (no make check area tests this topic)")
    out.append("")
    if t.closure:
        deps = ", ".join(f"{n} ({len(topics_by_name[n].files)} patch"
                         f"{'es' if len(topics_by_name[n].files) != 1 else ''})" for n in t.closure)
        where = (f"It applies on the base commit below after the topic(s) {deps}, whose "
                 f"patch ids the prerequisite-patch-id lines list")
    else:
        where = "It applies on the base commit below (Debian's unpatched tree) alone"
    out.append(wrap(where + "; `make check` checks that (tests/outgoing: `git apply` of "
                    "each topic on the baseline and its prerequisites, no kernel build)."))
    return "\n".join(out)


def fill_cover(path, t, text):
    with open(path) as f:
        s = f.read()
    if "*** SUBJECT HERE ***" not in s or "*** BLURB HERE ***" not in s:
        raise RuntimeError(f"{path}: git format-patch's cover letter placeholders not found")
    s = s.replace("*** SUBJECT HERE ***", t.cover["Subject"], 1)
    s = s.replace("*** BLURB HERE ***", text, 1)
    with open(path, "w") as f:
        f.write(s)


def stable_patch_ids(paths):
    """git patch-id --stable of each patch file, in order."""
    out = []
    for path in paths:
        with open(path) as f:
            p = subprocess.run(["git", "patch-id", "--stable"], stdin=f,
                               capture_output=True, text=True, check=True)
        out.append(p.stdout.split()[0])
    return out


def set_prerequisites(cover, ids):
    """Replace the cover letter's prerequisite-patch-id lines by IDS.
    git 2.39's format-patch --base computes some of them differently from
    `git patch-id --stable` on the same patch (seen with a patch that adds
    a trace event class), so a receiver could not match them; the ids are
    those of the needed topics' patch files as written."""
    with open(cover) as f:
        lines = f.read().split("\n")
    at = [i for i, x in enumerate(lines) if x.startswith("prerequisite-patch-id: ")]
    if len(at) != len(ids):
        raise RuntimeError(f"{cover}: {len(at)} prerequisite-patch-id lines, {len(ids)} prerequisites")
    for i, pid in zip(at, ids):
        lines[i] = f"prerequisite-patch-id: {pid}"
    with open(cover, "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--topics", default=os.path.join(TOP, "patches/topics"))
    ap.add_argument("--series", default=os.path.join(TOP, "patches/series"))
    ap.add_argument("--patches", default=os.path.join(TOP, "patches"))
    ap.add_argument("--covers", default=os.path.join(TOP, "patches/covers"))
    ap.add_argument("--tests", default=os.path.join(TOP, "tests"))
    ap.add_argument("--check-only", action="store_true")
    a = ap.parse_args()

    def fail(msgs):
        for m in msgs:
            print(f"outgoing: {m}", file=sys.stderr)
        sys.exit(1)

    try:
        base = git(["rev-parse", "--verify", "-q", "baseline^{commit}"], cwd=a.tree).strip()
    except RuntimeError:
        fail([f"{a.tree} has no tag baseline (make tree, or make check, makes it)"])
    series = read_series(a.series)
    topics, errors = parse_topics(a.topics, series, a.tests, a.covers)
    if errors:
        fail(errors)
    by_name = {t.name: t for t in topics}
    mk = git(["cat-file", "blob", f"{base}:Makefile"], cwd=a.tree)
    v = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)", mk, re.M))
    version = f"{v.get('VERSION', '?')}.{v.get('PATCHLEVEL', '?')}.{v.get('SUBLEVEL', '?')}"

    scratch = Scratch(a.tree)
    failed = []
    try:
        tips = {}
        for t in topics:
            parent, bad = base, None
            chain = [(n, f) for n in t.closure for f in by_name[n].files] + [(t.name, f) for f in t.files]
            prereq = base
            for i, (owner, f) in enumerate(chain):
                commit, err = scratch.apply(parent, os.path.join(a.patches, f))
                if err:
                    on = " + ".join(["baseline"] + t.closure)
                    of = f" (of topic {owner}, which it needs)" if owner != t.name else ""
                    bad = (f"topic {t.name}: {f}{of} does not apply on {on}"
                           f"{' + the patches before it' if i else ''}:\n    "
                           + err.replace("\n", "\n    "))
                    break
                parent = commit
                if owner != t.name:
                    prereq = commit
            if bad:
                failed.append(bad)
                print(f"   {t.name}: FAILED", flush=True)
                continue
            tips[t.name] = (prereq, parent)
            print(f"   {t.name}: {len(t.files)} patch(es) apply on baseline"
                  f"{''.join(' + ' + n for n in t.closure)}", flush=True)
        # Also for topics that apply: one that would not build without a
        # topic it does not declare.
        failed += check_needs(topics, a.patches, a.tree, base)
        if failed:
            fail(failed)
        if a.check_only:
            return
        os.makedirs(a.out, exist_ok=True)
        for d in os.listdir(a.out):  # the previous run's topics
            if os.path.isfile(os.path.join(a.out, d, "0000-cover-letter.patch")):
                shutil.rmtree(os.path.join(a.out, d))
        maint = {}
        for t in topics:
            mfile = os.path.join(scratch.dir, "MAINTAINERS")
            with open(mfile, "w") as f:
                f.write(scratch.git(["cat-file", "blob", f"{tips[t.name][1]}:MAINTAINERS"]))
            maint[t.name] = maintainers(a.tree, mfile, [os.path.join(a.patches, f) for f in t.files])
        for t in topics:
            prereq, tip = tips[t.name]
            to, cc = maint[t.name]
            # The lists of the topics it needs see what it builds on.
            cc = cc + [x for n in t.closure for x in maint[n][1]]
            to = t.cover.get("To", []) + [x for x in to if x not in t.cover.get("To", [])]
            cc = list(dict.fromkeys(x for x in t.cover.get("Cc", []) + cc if x not in to))
            outdir = os.path.join(a.out, t.name)
            args = ["format-patch", "-q", "--cover-letter", "--numbered", "--no-signature",
                    f"--subject-prefix={t.cover.get('Prefix', 'PATCH')}", f"--base={base}",
                    "-o", outdir]
            args += [f"--to={x}" for x in to] + [f"--cc={x}" for x in cc]
            # The cover letter's From and Date: the topic's last patch's.
            first = scratch.git(["show", "-s", "--format=%an%x00%ae%x00%ad", "--date=rfc2822",
                                 tip]).split("\x00")
            env = {"GIT_COMMITTER_NAME": first[0], "GIT_COMMITTER_EMAIL": first[1],
                   "GIT_COMMITTER_DATE": first[2].strip()}
            scratch.git(args + [f"{prereq}..{tip}"], env=env)
            written = [os.path.join(a.out, n, f) for n in t.closure
                       for f in sorted(os.listdir(os.path.join(a.out, n)))
                       if f.endswith(".patch") and not f.startswith("0000-")]
            set_prerequisites(os.path.join(outdir, "0000-cover-letter.patch"),
                              stable_patch_ids(written))
            text = t.blurb + "\n\n" + testing_text(t, a.tests, series, by_name, version)
            fill_cover(os.path.join(outdir, "0000-cover-letter.patch"), t, text)
            print(f"   wrote {outdir}/: cover letter + {len(t.files)} patch(es); "
                  f"To: {len(to)}, Cc: {len(cc)}", flush=True)
    finally:
        scratch.close()


if __name__ == "__main__":
    main()
