# SPDX-License-Identifier: GPL-2.0
"""tests/idmap-ext4's shared fixture: an ext4 image on loop mounted at FS,
and an idmapped mount of it at MNT with fs ids 0..999 shown as
10000..10999 (tools/idmap-mount, util-linux's syntax), and the TAP runner
of its programs. ext4 had idmapped mounts before the series, so what
these programs test is the VFS, on what 6.1 stable already has."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from cases import Skip, lacks, run_case  # noqa: E402,F401 - Skip, lacks: for the tests

IDMAP = "idmap-mount"  # tools/idmap-mount, in PATH (build/bin) in the guest
SHIFT = 10000  # fs id N is shown as SHIFT + N through MNT, for N < 1000


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise AssertionError(f"{' '.join(cmd)}: {p.returncode} {p.stderr.strip()}")
    return p


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def image(fs):
    """The ext4 image file mounted at FS (main() keeps it beside FS)."""
    return os.path.join(os.path.dirname(fs), "ext4.img")


def mount(fs, mnt):
    run("mount", "-o", "loop", image(fs), fs)
    run(IDMAP, f"--map=b:0:{SHIFT}:1000", fs, mnt)


def umount(fs, mnt):
    run("umount", mnt)
    run("umount", fs)


def offline(fs, mnt, fn):
    """Unmount the fixture, return fn(image) (the image file, nothing
    mounted, so debugfs and e2fsck see what reached the disk), mount it
    again with the same idmapped mount."""
    umount(fs, mnt)
    try:
        return fn(image(fs))
    finally:
        mount(fs, mnt)


def main(work, tests):
    """Mount the fixture under WORK, run TESTS (functions; raise Skip(why)
    to skip) as TAP with the plan first, unmount. Returns the exit status."""
    fs, mnt, img = f"{work}/fs", f"{work}/mnt", f"{work}/ext4.img"
    print(f"1..{len(tests)}")
    sys.stdout.flush()
    os.makedirs(fs, exist_ok=True)
    os.makedirs(mnt, exist_ok=True)
    run("truncate", "-s", "32M", img)
    run("mkfs.ext4", "-q", "-F", img)
    mount(fs, mnt)
    for n, fn in enumerate(tests, start=1):
        run_case(n, fn.__name__, fn, fs, mnt)
    umount(fs, mnt)
    return 0
