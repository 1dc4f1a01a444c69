#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/idmap-ext4: POSIX ACLs read through an idmapped ext4 mount with
the buffer sizes programs use, the bug patch 0001 fixes for the 6.1
stable tree. vfs_getxattr() translated the ACL's ids only when the
caller's buffer size was 4 + 8n; every power of two, XATTR_SIZE_MAX
included, came back with the ids as stored. Prints TAP."""
import ctypes
import os
import struct
import sys

from ext4_fixture import SHIFT, expect, main

libc = ctypes.CDLL(None, use_errno=True)
libc.getxattr.restype = ctypes.c_ssize_t
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
ACCESS, DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED = 0xFFFFFFFF  # ACL_UNDEFINED_ID, also (uid_t)-1
# The sizes programs pass: powers of two (what the bug mistranslated,
# XATTR_SIZE_MAX 65536 and a larger one getxattr() clamps to it) and
# libacl's first try, acl_ea_size(16) = 132, which is 4 + 8n.
SIZES = [64, 128, 256, 1024, 4096, 65536, 1 << 20, 132]
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def acl_xattr(user, group):
    """The xattr form of u::rw-,u:USER:r--,g::r--,g:GROUP:r--,m::r--,o::---."""
    ents = [(USER_OBJ, 6, UNDEFINED), (USER, 4, user), (GROUP_OBJ, 4, UNDEFINED),
            (GROUP, 4, group), (MASK, 4, UNDEFINED), (OTHER, 0, UNDEFINED)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in ents)


def getxattr(path, name, size):
    """getxattr(2) with a buffer of SIZE bytes: the bytes it returned."""
    buf = ctypes.create_string_buffer(size) if size else None
    n = libc.getxattr(path.encode(), name.encode(), buf, size)
    if n < 0:
        raise AssertionError(f"getxattr({path}, {name}, {size}): {os.strerror(ctypes.get_errno())}")
    return n if not size else buf.raw[:n]


def named_ids(raw):
    """(ACL_USER id, ACL_GROUP id) of an ACL in xattr form."""
    expect(len(raw) % 8 == 4 and struct.unpack_from("<I", raw)[0] == 2,
           f"not an ACL in xattr form: {len(raw)} bytes")
    ids = {tag: i for tag, _, i in struct.iter_unpack("<HHI", raw[4:])}
    return ids[USER], ids[GROUP]


def check_sizes(path, name, want, stored):
    seen = {}
    for size in SIZES:
        seen[size] = named_ids(getxattr(path, name, size))
    bad = {s: ids for s, ids in seen.items() if ids != want}
    expect(not bad, f"{name} read through the idmapped mount with these buffer sizes: "
           f"{bad}, want {want} at every size (stored: {stored})")
    n = getxattr(path, name, 0)
    expect(n == 4 + 6 * 8, f"size query: {n}, want {4 + 6 * 8}")
    expect(getxattr(path, name, n) and named_ids(getxattr(path, name, n)) == want,
           f"the exact size: {named_ids(getxattr(path, name, n))}, want {want}")


@test
def acl_ids_translated_at_every_buffer_size_on_ext4(fs, mnt):
    open(f"{fs}/f", "w").close()
    os.setxattr(f"{fs}/f", ACCESS, acl_xattr(5, 6))
    check_sizes(f"{mnt}/f", ACCESS, (SHIFT + 5, SHIFT + 6), (5, 6))
    # The ACL as stored is unchanged by reading it through the mount.
    expect(named_ids(os.getxattr(f"{fs}/f", ACCESS)) == (5, 6), "the stored ACL changed")


@test
def default_acl_ids_translated_at_every_buffer_size_on_ext4(fs, mnt):
    os.mkdir(f"{fs}/d")
    os.setxattr(f"{fs}/d", DEFAULT, acl_xattr(7, 8))
    check_sizes(f"{mnt}/d", DEFAULT, (SHIFT + 7, SHIFT + 8), (7, 8))


@test
def unmapped_acl_ids_read_as_invalid_at_every_buffer_size_on_ext4(fs, mnt):
    # fs id 5000 is outside the mount's 0..999. 6.1 reads it as
    # from_kuid() of an id with no mapping, (uid_t)-1
    # (fs/posix_acl.c posix_acl_getxattr_idmapped_mnt()), never as the raw
    # 5000, which would name another user.
    open(f"{fs}/u", "w").close()
    os.setxattr(f"{fs}/u", ACCESS, acl_xattr(5000, 6))
    check_sizes(f"{mnt}/u", ACCESS, (UNDEFINED, SHIFT + 6), (5000, 6))


@test
def acl_written_through_idmapped_ext4_stored_as_fs_ids(fs, mnt):
    # The write direction (posix_acl_setxattr_idmapped_mnt) and a read back
    # with XATTR_SIZE_MAX: the round trip a container's setfacl/getfacl makes.
    open(f"{fs}/w", "w").close()
    os.setxattr(f"{mnt}/w", ACCESS, acl_xattr(SHIFT + 9, SHIFT + 10))
    expect(named_ids(os.getxattr(f"{fs}/w", ACCESS)) == (9, 10),
           f"stored {named_ids(os.getxattr(f'{fs}/w', ACCESS))}, want (9, 10)")
    expect(named_ids(getxattr(f"{mnt}/w", ACCESS, 65536)) == (SHIFT + 9, SHIFT + 10),
           "read back through the mount with 65536 bytes")


if __name__ == "__main__":
    sys.exit(main("/tmp/acl-ext4", TESTS))
