#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/runtimes: the container runtimes Debian 12 ships (podman 4.3.1,
crun 1.8.1, with newuidmap/newgidmap from uidmap) giving containers
idmapped tmpfs volumes, on the test kernel. Prints TAP; each test names
one behaviour.

No network and no registry: the container's root is a directory tree
made here (symlinks into a read-only bind of /usr), run with podman
--rootfs or as a hand-written OCI bundle with crun, --network none.
Ownership is always read back from the filesystem's own namespace (stat
on the tmpfs outside any idmapped mount), never from the runtime's
answer. Every test also fails on a kernel report that appears while it
runs, and on any container, mount or cgroup it leaves behind.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kmsg  # noqa: E402
from cases import run_case  # noqa: E402

W = "/tmp/rt"                 # work area (tmpfs in the guest)
ROOTFS = f"{W}/rootfs"
VOL = f"{W}/vol"              # the pod volume: tmpfs of the initial namespace
HOSTMAP = 100000              # container ids 0..65535 are host 100000..
USER, UID = "rtuser", 1000    # the rootless user, subuid/subgid 100000:65536
UHOME = f"/home/{USER}"
PODMAN = ["podman", "--root", f"{W}/storage", "--runroot", "/run/rt-podman",
          "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
          "--events-backend", "file", "--runtime", "/usr/bin/crun"]
RUN_OPTS = ["--rm", "--network", "none", "-v", "/usr:/usr:ro"]
# crun 1.8.1's message when the kernel refuses to idmap a mount (its
# strings: "mount_setattr `%s`", "mount_setattr `/%s`"), with strerror:
# crun run names the destination (/data); under podman it names the
# source (the test's /usr/share/doc), as measured with both.
REFUSAL = re.compile(r"mount_setattr `(/data|/usr/share/doc)`: Invalid argument")
TESTS = []
TIMES = []


def test(fn):
    TESTS.append((fn.__name__, fn))
    return fn


def run(*cmd, ok=True, timeout=300, env=None, user=False):
    if user:
        cmd = ("setpriv", f"--reuid={UID}", f"--regid={UID}", "--init-groups", "--") + cmd
        env = dict(env or {}, HOME=UHOME, USER=USER, LOGNAME=USER,
                   XDG_RUNTIME_DIR=f"/run/user/{UID}", PATH=os.environ["PATH"])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if ok and p.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n"
                             f"{(p.stderr or p.stdout).strip()[-600:]}")
    return p


def expect(cond, what):
    if not cond:
        raise AssertionError(what() if callable(what) else what)


def timed(label, *cmd, **kw):
    t = time.monotonic()
    p = run(*cmd, **kw)
    TIMES.append((label, time.monotonic() - t))
    print(f"# {label}: {TIMES[-1][1]:.1f} s")
    return p


def owner(path):
    st = os.lstat(path)
    return (st.st_uid, st.st_gid)


def seen(out):
    """'U:G NAME' lines a container printed with stat -c '%u:%g %n'."""
    ids = {}
    for line in out.splitlines():
        m = re.fullmatch(r"(\d+):(\d+) (\S+)", line.strip())
        if m:
            ids[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return ids


# What every container runs: report its own user namespace's mappings
# and the volume's mount (the kernel's view from inside), the ids it
# sees, write as its root, then as ID (given), into w (0777, owned by
# 1000), then as its root into w0 (0777, owned by 0), and report each
# write's outcome.
SCRIPT = r"""
sed 's/^/uid_map /' /proc/self/uid_map
sed 's/^/gid_map /' /proc/self/gid_map
grep ' /data ' /proc/self/mountinfo | sed 's/^/mnt /'
stat -c '%u:%g %n' /data/f0 /data/f1000
touch /data/w/byroot 2>/tmp/e0 && echo 'root: created' || echo "root: $(cat /tmp/e0)"
setpriv --reuid="$1" --regid="$1" --clear-groups touch /data/w/by$1 2>/tmp/e; echo "$1: rc=$? $(cat /tmp/e)"
touch /data/w0/byroot 2>/tmp/e; echo "w0: rc=$? $(cat /tmp/e)"
"""


def inside(out, want_map, source, idmapped):
    """What the container read of its own namespace and of /data: its
    /proc/self/uid_map and gid_map must be the one line asked for
    (container 0 -> want_map[0], want_map[1] ids; a container without a
    user namespace reads "0 0 4294967295"), and /proc/self/mountinfo must
    show one mount at /data, the tmpfs SOURCE, with "idmapped" among its
    mount options (fs/proc_namespace.c show_mnt_opts(): is_idmapped_mnt())
    exactly when IDMAPPED."""
    maps = {k: [tuple(int(x) for x in m.group(1).split())
                for m in re.finditer(rf"^{k} +(\d+ +\d+ +\d+) *$", out, re.M)]
            for k in ("uid_map", "gid_map")}
    want = [(0,) + tuple(want_map)]
    expect(maps == {"uid_map": want, "gid_map": want},
           f"inside the container uid_map/gid_map are {maps}, asked for {want}:\n{out}")
    mnt = [l.split()[1:] for l in out.splitlines() if l.startswith("mnt ")]
    mnt = [f for f in mnt if len(f) > 4 and f[4] == "/data"]
    expect(len(mnt) == 1, f"want one mount at /data in the container's mountinfo: {mnt}\n{out}")
    f = mnt[0]
    opts = f[5].split(",")
    fs = f[f.index("-") + 1:]
    expect(fs[:2] == ["tmpfs", source], f"/data is {fs[:2]}, want tmpfs {source}: {f}")
    expect(("idmapped" in opts) == idmapped,
           f"/data's mount options {f[5]}: want {'' if idmapped else 'no '}idmapped")
    print(f"# inside: uid_map {' '.join(map(str, want[0]))}; /data {f[5]} {' '.join(fs[:2])}")


def volume():
    """A fresh pod volume: tmpfs in the initial namespace, as kubelet
    makes one, with files of 0 and 1000 and 0777 directories of 1000 and
    0."""
    if os.path.ismount(VOL):
        run("umount", VOL)
    os.makedirs(VOL, exist_ok=True)
    run("mount", "-t", "tmpfs", "-o", "mode=0755", "podvol", VOL)
    for name, ids in (("f0", 0), ("f1000", 1000)):
        open(f"{VOL}/{name}", "w").close()
        os.chown(f"{VOL}/{name}", ids, ids)
    for d, ids in (("w", 1000), ("w0", 0)):
        os.mkdir(f"{VOL}/{d}")
        os.chmod(f"{VOL}/{d}", 0o777)
        os.chown(f"{VOL}/{d}", ids, ids)


def rootfs():
    """The container's root: /usr comes in as a read-only bind; the rest
    is symlinks and empty mount points, owned by the container's root."""
    os.makedirs(ROOTFS, exist_ok=True)
    for d in ("usr", "proc", "sys", "dev", "etc", "run", "tmp", "data", "var"):
        os.makedirs(f"{ROOTFS}/{d}", exist_ok=True)
    for l in ("bin", "sbin", "lib", "lib64"):
        if not os.path.islink(f"{ROOTFS}/{l}"):
            os.symlink(f"usr/{l}", f"{ROOTFS}/{l}")
    for f in ("passwd", "group"):
        shutil.copy(f"/etc/{f}", f"{ROOTFS}/etc/{f}")
    for root, dirs, files in os.walk(ROOTFS):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), HOSTMAP, HOSTMAP)
    os.chown(ROOTFS, HOSTMAP, HOSTMAP)
    os.chmod(ROOTFS, 0o755)


def leftovers(cgroups=True):
    """Containers, runtime state, idmapped mounts and cgroups a run left
    (a container's cgroup goes once its last process is reaped: given
    a few seconds)."""
    for _ in range(20):
        left = _leftovers(cgroups)
        if not left:
            break
        time.sleep(0.5)
    return left


def stale_cgroups():
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        # libpod_parent is podman's parent cgroup, made once, kept
        found += [f"{root}/{d}" for d in dirs if re.match(r"libpod-|rt-", d)]
    return found


def _leftovers(cgroups):
    left = []
    p = run(*PODMAN, "ps", "-a", "--format", "{{.ID}} {{.Status}}", ok=False)
    left += [f"podman container {l}" for l in p.stdout.split("\n") if l.strip()]
    p = run("crun", "list", "-q", ok=False)
    left += [f"crun container {l}" for l in p.stdout.split("\n") if l.strip()]
    with open("/proc/self/mountinfo") as f:
        left += [f"mount {l.split()[4]}" for l in f
                 if "/rt-podman/" in l.split()[4] or "/bundle" in l.split()[4]]
    if cgroups:
        left += [f"cgroup {c}" for c in stale_cgroups()]
    return left


def podman_rootful(*args, inner_user=1000, label="podman run (rootful)", ok=True):
    return timed(label, *PODMAN, "run", *RUN_OPTS, "--uidmap", f"0:{HOSTMAP}:65536",
                 "--gidmap", f"0:{HOSTMAP}:65536", *args, "--rootfs", ROOTFS,
                 "/bin/sh", "-c", SCRIPT, "sh", str(inner_user), ok=ok)


def check_pod_pattern(out, writer_ids):
    ids = seen(out)
    expect(ids.get("/data/f0") == (0, 0) and ids.get("/data/f1000") == (1000, 1000),
           f"inside the container the volume's files are not 0:0 and 1000:1000:\n{out}")
    expect("root: created" in out and re.search(r"^w0: rc=0 ", out, re.M),
           f"container root could not write:\n{out}")
    expect(owner(f"{VOL}/w0/byroot") == (0, 0), f"w0/byroot stored as {owner(f'{VOL}/w0/byroot')}")
    expect(owner(f"{VOL}/w/byroot") == (0, 0),
           f"container root's file stored as {owner(f'{VOL}/w/byroot')}, want (0, 0)")
    expect(owner(f"{VOL}/w/by{writer_ids}") == (writer_ids, writer_ids),
           f"container uid {writer_ids}'s file stored as {owner(f'{VOL}/w/by{writer_ids}')}")


@test
def podman_rootful_idmapped_tmpfs_volume(_):
    """The Kubernetes pattern with podman: a tmpfs of the initial
    namespace, a container with a private user namespace, idmap."""
    volume()
    p = podman_rootful("--mount", f"type=bind,src={VOL},dst=/data,idmap")
    inside(p.stdout, (HOSTMAP, 65536), "podvol", True)
    check_pod_pattern(p.stdout, 1000)
    # Without idmap the same container sees the volume's owners as nobody
    # and cannot write: the mapping above is the mount's doing.
    volume()
    p = podman_rootful("-v", f"{VOL}:/data", label="podman run (rootful, no idmap)", ok=False)
    inside(p.stdout, (HOSTMAP, 65536), "podvol", False)
    ids = seen(p.stdout)
    expect(ids.get("/data/f0") == (65534, 65534), f"without idmap f0 is not nobody:\n{p.stdout}")
    expect(not os.path.exists(f"{VOL}/w/byroot") or owner(f"{VOL}/w/byroot") == (HOSTMAP, HOSTMAP),
           "without idmap container root's file is not stored as the host id")


def crun_bundle(name, data_opts, user):
    """A hand-written OCI bundle: private user namespace 0:100000:65536,
    /usr read-only, the volume at /data with DATA_OPTS."""
    b = f"{W}/bundle-{name}"
    os.makedirs(b, exist_ok=True)
    idmap = [{"containerID": 0, "hostID": HOSTMAP, "size": 65536}]
    config = {
        "ociVersion": "1.0.2",
        "process": {"user": {"uid": 0, "gid": 0}, "cwd": "/",
                    "args": ["/bin/sh", "-c", SCRIPT, "sh", str(user)],
                    "env": ["PATH=/usr/bin:/bin"], "noNewPrivileges": True,
                    "capabilities": {k: ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
                                         "CAP_SETUID", "CAP_SETGID"]
                                     for k in ("bounding", "effective", "permitted")}},
        "root": {"path": ROOTFS, "readonly": False},
        "hostname": name,
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
            {"destination": "/usr", "type": "bind", "source": "/usr",
             "options": ["rbind", "ro"]},
            {"destination": "/data", "type": "bind", "source": VOL,
             "options": ["bind"] + data_opts},
        ],
        "linux": {
            "namespaces": [{"type": t} for t in
                           ("user", "mount", "pid", "ipc", "uts", "network", "cgroup")],
            "uidMappings": idmap, "gidMappings": idmap,
        },
    }
    with open(f"{b}/config.json", "w") as f:
        json.dump(config, f, indent=1)
    return b


def crun_run(name, data_opts, user=1000, ok=True):
    b = crun_bundle(name, data_opts, user)
    return timed(f"crun run {name}", "crun", "run", "--bundle", b, f"rt-{name}", ok=ok)


@test
def crun_bundle_idmapped_tmpfs_volume(_):
    """The Kubernetes pattern with crun and a hand-written bundle: the
    mount option "idmap" maps the volume with the container's namespace."""
    volume()
    p = crun_run("pod", ["idmap"])
    inside(p.stdout, (HOSTMAP, 65536), "podvol", True)
    check_pod_pattern(p.stdout, 1000)


@test
def crun_mount_mapping_differs_from_the_containers(_):
    """crun's idmap=uids=...;gids=...: the volume gets a mapping of its
    own (fs id 1000 <-> the container's root only). Container root's
    writes land as 1000, fs id 0 is nobody inside, and container uid 5,
    mapped in the container but not in the mount, gets EOVERFLOW and
    creates nothing. A directory owned by fs id 0, which the mount does
    not map, cannot be written even with mode 0777: EACCES
    (inode_permission(), HAS_UNMAPPED_ID)."""
    volume()
    p = crun_run("custom", [f"idmap=uids=1000-{HOSTMAP}-1;gids=1000-{HOSTMAP}-1"], user=5)
    inside(p.stdout, (HOSTMAP, 65536), "podvol", True)
    ids = seen(p.stdout)
    expect(ids.get("/data/f0") == (65534, 65534) and ids.get("/data/f1000") == (0, 0),
           f"want f0 as nobody and f1000 as the container's root:\n{p.stdout}")
    expect(os.path.exists(f"{VOL}/w/byroot"), f"container root could not write:\n{p.stdout}")
    expect(owner(f"{VOL}/w/byroot") == (1000, 1000),
           f"container root's file stored as {owner(f'{VOL}/w/byroot')}, want (1000, 1000)")
    expect(re.search(r"^5: rc=1 .*Value too large", p.stdout, re.M),
           f"container uid 5 did not get EOVERFLOW:\n{p.stdout}")
    expect(not os.path.exists(f"{VOL}/w/by5"), "the refused create left a file")
    expect(re.search(r"^w0: rc=1 .*Permission denied", p.stdout, re.M),
           f"writing into a directory of an unmapped owner was not EACCES:\n{p.stdout}")
    expect(not os.path.exists(f"{VOL}/w0/byroot"), "the refused create in w0 left a file")


@test
def runtimes_refuse_idmap_where_the_kernel_does(_):
    """An idmap request on a filesystem that does not support idmapped
    mounts (the guest's 9p root): both runtimes fail with crun's own
    report of the kernel's refusal, mount_setattr(MOUNT_ATTR_IDMAP) on
    /data answered EINVAL (fs/namespace.c build_mount_idmapped(): no
    FS_ALLOW_IDMAP), podman passing crun's on; any other EINVAL (a bad
    option, a mapping crun cannot write) is not this refusal. Nothing of
    the container is left."""
    src = "/usr/share/doc"
    p = run(*PODMAN, "run", *RUN_OPTS, "--uidmap", f"0:{HOSTMAP}:65536", "--gidmap",
            f"0:{HOSTMAP}:65536", "--mount", f"type=bind,src={src},dst=/data,idmap",
            "--rootfs", ROOTFS, "/bin/true", ok=False)
    msg = (p.stderr + p.stdout).strip()
    print(f"# podman: rc={p.returncode}: {msg.splitlines()[-1] if msg else ''}")
    expect(p.returncode != 0, "podman ran a container with an idmapped 9p mount")
    expect(REFUSAL.search(msg), f"podman's error is not crun's refusal ({REFUSAL.pattern}):\n{msg}")
    b = crun_bundle("refused", ["idmap"], 0)
    with open(f"{b}/config.json") as f:
        c = json.load(f)
    c["mounts"][-1]["source"] = src
    with open(f"{b}/config.json", "w") as f:
        json.dump(c, f)
    p = run("crun", "run", "--bundle", b, "rt-refused", ok=False)
    msg = (p.stderr + p.stdout).strip()
    print(f"# crun: rc={p.returncode}: {msg.splitlines()[-1] if msg else ''}")
    expect(p.returncode != 0, "crun ran a container with an idmapped 9p mount")
    expect(REFUSAL.search(msg), f"crun's error is not its refusal ({REFUSAL.pattern}):\n{msg}")
    left = leftovers(cgroups=False)
    expect(not left, f"left behind: {left}")
    # crun 1.8.1 leaves the failed container's (empty) cgroup behind, for
    # podman's container as for its own: recorded, then removed, so that
    # the next test starts clean.
    for _ in range(20):
        if not stale_cgroups():
            break
        time.sleep(0.5)
    for c in stale_cgroups():
        print(f"# crun left the empty cgroup {c}")
        os.rmdir(c)


def user_setup():
    """rtuser (1000) with subordinate ids 100000:65536 in an /etc that is
    an overlay of the host's read-only one; home and runtime dir on tmpfs."""
    if not os.path.exists("/run/rt-etc/done"):
        for d in ("up", "work"):
            os.makedirs(f"/run/rt-etc/{d}", exist_ok=True)
        run("mount", "-t", "overlay", "rt-etc", "-o",
            "lowerdir=/etc,upperdir=/run/rt-etc/up,workdir=/run/rt-etc/work", "/etc")
        for f, line in (("passwd", f"{USER}:x:{UID}:{UID}::{UHOME}:/bin/sh"),
                        ("group", f"{USER}:x:{UID}:")):
            with open(f"/etc/{f}") as fh:
                keep = [l for l in fh if l.split(":")[2] != str(UID)]
            with open(f"/etc/{f}", "w") as fh:
                fh.writelines(keep + [line + "\n"])
        for f in ("subuid", "subgid"):
            with open(f"/etc/{f}", "w") as fh:
                fh.write(f"{USER}:{HOSTMAP}:65536\n")
        for d in (UHOME, f"/run/user/{UID}"):
            os.makedirs(d, exist_ok=True)
            os.chown(d, UID, UID)
            os.chmod(d, 0o700)
        open("/run/rt-etc/done", "w").close()


# Run inside podman's user namespace (podman unshare) as the rootless
# user: mount a tmpfs there, fill it, run a container with a nested
# mapping and the tmpfs as an idmapped volume, report what the container
# saw and (from the same namespace) what the tmpfs stored.
ROOTLESS = r"""
set -e
v=$HOME/vol
mkdir -p $v
mount -t tmpfs -o mode=0755 rootless-vol $v
touch $v/f0 $v/f1000; chown 1000:1000 $v/f1000
mkdir $v/w $v/w0; chmod 0777 $v/w $v/w0
"$@" -v $v:/data:idmap --rootfs "$ROOTFS" /bin/sh -c "$SCRIPT" sh 1000
stat -c 'stored %u:%g %n' $v/w/byroot $v/w/by1000
"""


@test
def podman_rootless_nested_idmapped_tmpfs_volume(_):
    """The seeds' case, by a runtime: rootless podman (uid 1000), a tmpfs
    mounted in its user namespace, a container with a nested mapping
    (--uidmap 0:1:65536) and -v TMPFS:/data:idmap. The container sees its
    own ids; its writes are stored as the ids of podman's namespace (its
    root's as the rootless user's 0, its 1000 as 1000), which the initial
    namespace sees in the user's subordinate range."""
    user_setup()
    rootless = ["podman", "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
                "--events-backend", "file", "--runtime", "/usr/bin/crun"]
    cmd = rootless + ["run", "--rm", "--network", "none", "-v", "/usr:/usr:ro",
                      "--uidmap", "0:1:65536", "--gidmap", "0:1:65536"]
    p = timed("podman unshare + run (rootless)", *rootless, "unshare", "/bin/sh", "-c", ROOTLESS,
              "sh", *cmd, user=True, env={"SCRIPT": SCRIPT, "ROOTFS": ROOTFS})
    out = p.stdout
    # Nested: the container's namespace maps onto podman's, whose 1..65536
    # are the user's subordinate ids; uid_map shows it relative to podman's.
    inside(out, (1, 65536), "rootless-vol", True)
    ids = seen(out)
    expect(ids.get("/data/f0") == (0, 0) and ids.get("/data/f1000") == (1000, 1000),
           f"inside the container the volume's files are not 0:0 and 1000:1000:\n{out}\n{p.stderr}")
    stored = {m.group(3): (int(m.group(1)), int(m.group(2)))
              for m in re.finditer(r"^stored (\d+):(\d+) \S+/(by\w+)$", out, re.M)}
    expect(stored == {"byroot": (0, 0), "by1000": (1000, 1000)},
           f"in podman's namespace the writes are stored as {stored}:\n{out}")
    # The initial namespace's view of the same inodes: the tmpfs lives in
    # podman's mount namespace, held by its pause process.
    with open(f"/run/user/{UID}/libpod/tmp/pause.pid") as f:
        pause = f.read().strip()
    expect(pause.isdigit(), f"no pause process of rootless podman: {pause!r}")
    p = run("nsenter", "-t", pause, "-m", "stat", "-c", "%u:%g %n",
            f"{UHOME}/vol/w/byroot", f"{UHOME}/vol/w/by1000")
    host = {os.path.basename(k): v for k, v in seen(p.stdout).items()}
    expect(host == {"byroot": (UID, UID), "by1000": (HOSTMAP + 999, HOSTMAP + 999)},
           f"the initial namespace sees {host}, want the user's own ids and its subordinate range")
    # A transcript for docs/runtimes.md, from this run.
    print(f"# $ podman unshare sh -c 'mount -t tmpfs rootless-vol ~/vol; ...; podman run "
          f"--uidmap 0:1:65536 --gidmap 0:1:65536 -v ~/vol:/data:idmap --rootfs ROOTFS ...'")
    for line in out.strip().splitlines():
        print(f"#   {line}")
    print(f"# $ nsenter -t {pause} -m stat -c '%u:%g %n' ~/vol/w/byroot ~/vol/w/by1000   # as root")
    for line in p.stdout.strip().splitlines():
        print(f"#   {line}")
    run(*rootless, "system", "migrate", user=True, ok=False)


def main():
    for tool in ("/usr/bin/podman", "/usr/bin/crun", "/usr/bin/newuidmap"):
        if not os.path.exists(tool):
            print(f"1..0 # SKIP {tool} missing")
            return 0
    print(f"1..{len(TESTS)}")
    sys.stdout.flush()
    if not os.path.ismount("/sys/fs/cgroup"):
        run("mount", "-t", "cgroup2", "cgroup2", "/sys/fs/cgroup")
    os.makedirs(W, exist_ok=True)
    rootfs()
    for n, (name, fn) in enumerate(TESTS, start=1):
        mark = kmsg.last_seq()  # its records: those numbered after it

        def case(fn=fn, mark=mark):
            fn(None)
            problems = kmsg.reports_since(mark)
            expect(not problems, "\n".join(problems))
            left = leftovers()
            expect(not left, f"left behind: {left}")
        run_case(n, name, case)
    for label, s in TIMES:
        print(f"# time {label}: {s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
