#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/idmap-ext4: RENAME_WHITEOUT over an existing target on ext4, a
filesystem that had idmapped mounts before the series: the hole patch
0023 closes is in the VFS (vfs_rename()), not in tmpfs. ext4 in a loop
file, idmapped with fs ids 0..999 <-> 10000..10999 (tools/idmap-mount).
Prints TAP; ownership is read on the ext4 mount itself."""
import ctypes
import errno
import os
import stat
import sys

from ext4_fixture import Skip, expect, lacks, main, run

RENAME_WHITEOUT = 1 << 2
libc = ctypes.CDLL(None, use_errno=True)
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


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


def fresh(fs, names):
    """d/ (0777, owned by fs 0) holding files NAMES (0666, fs 0)."""
    d = f"{fs}/d"
    run("rm", "-rf", d)
    os.mkdir(d)
    os.chmod(d, 0o777)
    for n in names:
        with open(f"{d}/{n}", "w") as f:
            f.write(n)
        os.chmod(f"{d}/{n}", 0o666)


@test
def unmapped_caller_rename_whiteout_refused_on_ext4(fs, mnt):
    if lacks("0023"):
        raise Skip(lacks("0023"))
    fresh(fs, ["a", "b"])
    err = rename_whiteout_as(20000, f"{mnt}/d/a", f"{mnt}/d/b")
    expect(err == errno.EOVERFLOW, f"uid 20000 (unmapped): {err}, want EOVERFLOW")
    with open(f"{fs}/d/a") as f, open(f"{fs}/d/b") as g:
        expect(f.read() == "a" and g.read() == "b", "a refused rename changed a or b")


@test
def mapped_caller_whiteout_owned_by_its_stored_id_on_ext4(fs, mnt):
    fresh(fs, ["a", "b"])
    err = rename_whiteout_as(10005, f"{mnt}/d/a", f"{mnt}/d/b")
    expect(err == 0, f"uid 10005 (fs 5): {err}")
    st = os.lstat(f"{fs}/d/a")
    expect(stat.S_ISCHR(st.st_mode) and st.st_rdev == 0,
           f"d/a is no whiteout: mode {st.st_mode:o} rdev {st.st_rdev}")
    expect((st.st_uid, st.st_gid) == (5, 5), f"whiteout stored as {st.st_uid}:{st.st_gid}, want 5:5")
    with open(f"{fs}/d/b") as f:
        expect(f.read() == "a", "b does not hold a's content")


@test
def whiteout_can_be_removed_afterwards_on_ext4(fs, mnt):
    # What the hole left: a whiteout with invalid ids that nobody could
    # unlink through the idmapped mount. With the fix there is none, and
    # a whiteout made by a mapped caller unlinks like any file.
    err = rename_whiteout_as(10005, f"{mnt}/d/b", f"{mnt}/d/a")
    expect(err == 0, f"rename over the whiteout: {err}")
    os.unlink(f"{mnt}/d/b")
    expect(sorted(os.listdir(f"{fs}/d")) == ["a"], f"left: {os.listdir(f'{fs}/d')}")


if __name__ == "__main__":
    sys.exit(main("/tmp/wo-ext4", TESTS))
