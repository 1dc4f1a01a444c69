#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/idmap-ext4: RENAME_WHITEOUT over an existing target on ext4, a
filesystem that had idmapped mounts before the series: the hole patch
0023 closes is in the VFS (vfs_rename()), not in tmpfs. ext4 in a loop
file, idmapped with fs ids 0..999 <-> 10000..10999 (tools/idmap-mount).
Prints TAP; ownership is read on the ext4 mount itself, and what
reached the disk with debugfs on the unmounted image."""
import ctypes
import errno
import os
import re
import stat
import subprocess
import sys

from ext4_fixture import Skip, expect, lacks, main, offline, run

RENAME_WHITEOUT = 1 << 2
INVALID = 0xFFFFFFFF  # INVALID_UID/INVALID_GID as i_uid_write() stores them
OVERFLOW = 65534  # what stat() shows for an id with no mapping
libc = ctypes.CDLL(None, use_errno=True)
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def call(fn, *args):
    """0, or the errno of the libc call or os function FN(*ARGS)."""
    try:
        r = fn(*args)
    except OSError as e:
        return e.errno
    return ctypes.get_errno() if r is not None and r < 0 else 0


def as_user(uid, fn, *args):
    """call(FN, *ARGS) in a child running as uid/gid UID."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os._exit(call(fn, *args))
        except BaseException:  # noqa: BLE001 - report as a distinct status
            os._exit(255)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def renameat2(old, new, flags):
    return libc.renameat2(-100, old.encode(), -100, new.encode(), flags)


def rename_whiteout_as(uid, old, new):
    """renameat2(old, new, RENAME_WHITEOUT) as uid/gid UID: 0 or errno."""
    return as_user(uid, renameat2, old, new, RENAME_WHITEOUT)


def name(err):
    return "ok" if err == 0 else errno.errorcode.get(err, str(err))


def stored(img, path):
    """(type, inode, uid, gid) of PATH as the unmounted image holds it,
    read by debugfs (which prints the 32-bit ids signed: -1 is
    4294967295), or None when PATH is not there."""
    p = subprocess.run(["debugfs", "-R", f"stat {path}", img], capture_output=True, text=True,
                       env=dict(os.environ, DEBUGFS_PAGER="__none__"))
    m = re.search(r"Inode: (\d+)\s+Type: (.+?)\s+Mode:.*?User:\s+(-?\d+)\s+Group:\s+(-?\d+)",
                  p.stdout, re.S)
    if not m:
        return None
    return m[2], int(m[1]), int(m[3]) & INVALID, int(m[4]) & INVALID


def fsck(img):
    """e2fsck -fn's exit status and its complaints (0: clean)."""
    p = subprocess.run(["e2fsck", "-fn", img], capture_output=True, text=True)
    return p.returncode, " ".join(p.stdout.split()[-12:]) if p.returncode else ""


def debugfs_w(img, cmds):
    """Run debugfs's commands CMDS on the unmounted image, writing."""
    p = subprocess.run(["debugfs", "-w", "-f", "-", img], input="\n".join(cmds) + "\n",
                       capture_output=True, text=True)
    expect(p.returncode == 0 and "rror" not in p.stderr, f"debugfs {cmds}: {p.stderr.strip()}")


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


def who_can_remove(fs, mnt, path):
    """What each caller gets trying to get rid of d/PATH, a file whose
    stored ids have no mapping, in the order a user would try: through
    the idmapped mount as 10000 (fs 0, the directory's owner), then as
    host root on the ext4 mount itself. The last two steps (chown of
    both ids by host root, then unlink) repair it when they succeed."""
    f, g = f"{fs}/d/{path}", f"{mnt}/d/{path}"
    open(f"{fs}/d/spare", "w").close()
    return {
        "unlink by 10000 through the idmapped mount": as_user(10000, os.unlink, g),
        "chown 10000:10000 by 10000 through the idmapped mount":
            as_user(10000, os.chown, g, 10000, 10000),
        "unlink by root": call(os.unlink, f),
        "rename over it by root": call(os.rename, f"{fs}/d/spare", f),
        "chown 0:-1 by root": call(os.chown, f, 0, -1),
        "chown 0:0 by root": call(os.chown, f, 0, 0),
        "then unlink by root": call(os.unlink, f),
    }


@test
def unmapped_caller_rename_whiteout_refused_nothing_on_disk_on_ext4(fs, mnt):
    # The hole 0023 closes, on a filesystem that keeps what it is given:
    # without the check ext4 writes the whiteout with the unmapped
    # caller's ids, INVALID_UID/GID, to disk. The failure message of a
    # kernel without 0023 records what that whiteout is on disk, after an
    # unmount and a mount, and who can remove it.
    if lacks("0023"):
        raise Skip(lacks("0023"))
    fresh(fs, ["a", "b"])
    ino = os.lstat(f"{fs}/d/a").st_ino
    err = rename_whiteout_as(20000, f"{mnt}/d/a", f"{mnt}/d/b")
    a, b, fsck_rc = offline(fs, mnt, lambda img: (stored(img, "/d/a"), stored(img, "/d/b"), fsck(img)))
    if err != errno.EOVERFLOW:
        st = os.lstat(f"{fs}/d/a")
        raise AssertionError(
            f"uid 20000 (unmapped): rename {name(err)}, want EOVERFLOW. On disk after "
            f"unmount (debugfs): d/a {a}, d/b {b}; e2fsck -fn {fsck_rc}. Mounted again: "
            f"d/a mode {st.st_mode:o} rdev {st.st_rdev} owner {st.st_uid}:{st.st_gid}; "
            + "; ".join(f"{k}: {name(v)}" for k, v in who_can_remove(fs, mnt, "a").items()))
    expect(a == ("regular", ino, 0, 0), f"on disk d/a is {a}, want ('regular', {ino}, 0, 0)")
    expect(b is not None and b[0] == "regular" and b[2:] == (0, 0), f"on disk d/b is {b}")
    expect(fsck_rc == (0, ""), f"e2fsck -fn after the refused rename: {fsck_rc}")
    with open(f"{mnt}/d/a") as f, open(f"{mnt}/d/b") as g:
        expect(f.read() == "a" and g.read() == "b", "a refused rename changed a or b")


@test
def unmapped_ids_on_disk_block_removal_until_root_chowns_both_on_ext4(fs, mnt):
    # What such a whiteout means for its owner, on every kernel: a
    # whiteout (character device 0:0) stored with ids 4294967295, written
    # offline with debugfs, as the hole writes it. Nobody can unlink it or
    # rename over it (may_delete(): EOVERFLOW), after any number of
    # mounts; a chown of one id is refused (notify_change()); the caller
    # through the idmapped mount, without CAP_CHOWN over the filesystem,
    # cannot chown it; host root can chown both ids at once (chown_ok()'s
    # exception for invalid ids), and then unlink it.
    fresh(fs, [])
    offline(fs, mnt, lambda img: debugfs_w(img, ["cd /d", "mknod w c 0 0", f"sif w uid {INVALID}",
                                                 f"sif w gid {INVALID}"]))
    st = os.lstat(f"{fs}/d/w")
    expect(stat.S_ISCHR(st.st_mode) and st.st_rdev == 0 and (st.st_uid, st.st_gid) == (OVERFLOW,) * 2,
           f"mounted, d/w is mode {st.st_mode:o} rdev {st.st_rdev} owner {st.st_uid}:{st.st_gid}, "
           f"want a whiteout owned {OVERFLOW}:{OVERFLOW}")
    got = {k: name(v) for k, v in who_can_remove(fs, mnt, "w").items()}
    want = dict(zip(got, ["EOVERFLOW", "EPERM", "EOVERFLOW", "EOVERFLOW", "EOVERFLOW", "ok", "ok"]))
    expect(got == want, f"got {got}, want {want}")
    expect(sorted(os.listdir(f"{fs}/d")) == ["spare"], f"left: {os.listdir(f'{fs}/d')}")


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
