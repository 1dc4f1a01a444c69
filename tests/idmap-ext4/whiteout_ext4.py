#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/idmap: RENAME_WHITEOUT over an existing target on ext4, a
filesystem that had idmapped mounts before the series: the hole patch
0023 closes is in the VFS (vfs_rename()), not in tmpfs. ext4 in a loop
file, idmapped with fs ids 0..999 <-> 10000..10999 (tools/idmap-mount).
Prints TAP; ownership is read on the ext4 mount itself."""
import ctypes
import errno
import os
import stat
import subprocess
import sys
import traceback

W = "/tmp/wo-ext4"
FS, MNT, IMG = f"{W}/fs", f"{W}/mnt", f"{W}/ext4.img"
IDMAP = "idmap-mount"  # tools/idmap-mount, in PATH (build/bin) in the guest
RENAME_WHITEOUT = 1 << 2
libc = ctypes.CDLL(None, use_errno=True)
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise AssertionError(f"{' '.join(cmd)}: {p.returncode} {p.stderr.strip()}")
    return p


def rename_whiteout_as(uid, old, new):
    """renameat2(old, new, RENAME_WHITEOUT) as uid/gid UID: 0 or errno."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            r = libc.renameat2(-100, old.encode(), -100, new.encode(), RENAME_WHITEOUT)
            os._exit(0 if r == 0 else ctypes.get_errno())
        except BaseException:  # noqa: BLE001 - report as a distinct status
            os._exit(255)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def fresh(names):
    """d/ (0777, owned by fs 0) holding files NAMES (0666, fs 0)."""
    d = f"{FS}/d"
    run("rm", "-rf", d)
    os.mkdir(d)
    os.chmod(d, 0o777)
    for n in names:
        with open(f"{d}/{n}", "w") as f:
            f.write(n)
        os.chmod(f"{d}/{n}", 0o666)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


@test
def unmapped_caller_rename_whiteout_refused_on_ext4():
    fresh(["a", "b"])
    err = rename_whiteout_as(20000, f"{MNT}/d/a", f"{MNT}/d/b")
    expect(err == errno.EOVERFLOW, f"uid 20000 (unmapped): {err}, want EOVERFLOW")
    with open(f"{FS}/d/a") as f, open(f"{FS}/d/b") as g:
        expect(f.read() == "a" and g.read() == "b", "a refused rename changed a or b")


@test
def mapped_caller_whiteout_owned_by_its_stored_id_on_ext4():
    fresh(["a", "b"])
    err = rename_whiteout_as(10005, f"{MNT}/d/a", f"{MNT}/d/b")
    expect(err == 0, f"uid 10005 (fs 5): {err}")
    st = os.lstat(f"{FS}/d/a")
    expect(stat.S_ISCHR(st.st_mode) and st.st_rdev == 0,
           f"d/a is no whiteout: mode {st.st_mode:o} rdev {st.st_rdev}")
    expect((st.st_uid, st.st_gid) == (5, 5), f"whiteout stored as {st.st_uid}:{st.st_gid}, want 5:5")
    with open(f"{FS}/d/b") as f:
        expect(f.read() == "a", "b does not hold a's content")


@test
def whiteout_can_be_removed_afterwards_on_ext4():
    # What the hole left: a whiteout with invalid ids that nobody could
    # unlink through the idmapped mount. With the fix there is none, and
    # a whiteout made by a mapped caller unlinks like any file.
    err = rename_whiteout_as(10005, f"{MNT}/d/b", f"{MNT}/d/a")
    expect(err == 0, f"rename over the whiteout: {err}")
    os.unlink(f"{MNT}/d/b")
    expect(sorted(os.listdir(f"{FS}/d")) == ["a"], f"left: {os.listdir(f'{FS}/d')}")


def main():
    print(f"1..{len(TESTS)}")
    sys.stdout.flush()
    os.makedirs(FS, exist_ok=True)
    os.makedirs(MNT, exist_ok=True)
    run("truncate", "-s", "32M", IMG)
    run("mkfs.ext4", "-q", "-F", IMG)
    run("mount", "-o", "loop", IMG, FS)
    run(IDMAP, "--map=b:0:10000:1000", FS, MNT)
    for n, fn in enumerate(TESTS, start=1):
        try:
            fn()
            print(f"ok {n} {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - any failure fails the test
            print(f"not ok {n} {fn.__name__}")
            for line in (str(e) or traceback.format_exc()).splitlines():
                print(f"# {line}")
        sys.stdout.flush()
    run("umount", MNT)
    run("umount", FS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
