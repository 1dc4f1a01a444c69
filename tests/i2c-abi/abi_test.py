#!/usr/bin/env python3
"""tests/i2c-abi, part 2, on the test kernel: the i2c-dev ABI with SMBus 3.0
blocks.

- Existing binaries (Debian's i2c-tools, old-abi built against the unchanged
  6.1 uAPI headers) see exactly what they saw on the kernel from before the
  series: the transcript equals the one part 1 recorded there, and a block
  read answered with 255 bytes is EPROTO with the caller's buffer untouched.
- A new program (tools/smbus3) reads and writes 255-byte blocks, with PEC,
  both where the core emulates SMBus over raw I2C and on an SMBus-only
  adapter's native smbus_xfer; adapters without I2C_FUNC_SMBUS3_BLOCK refuse
  the new types.
- I2C_RDWR takes I2C_M_RECV_LEN_255 only with a buffer that can hold it;
  without I2C_M_RECV_LEN, or on an adapter without the bit, 0x0100 is
  passed on as in 6.1.
- The smbus3_write and smbus3_reply trace events carry 255-byte blocks.
- The i2c-dev ioctls, fuzzed: no buffer overrun, no hang (and the harness
  fails the run on any kernel report: KASAN, lockdep, kmemleak).
- All of it also through the compat ioctl path (compat_i2cdev_ioctl()):
  old-abi, smbus3-block and the fuzzer as 32-bit programs; the compat
  transcript equals the native one here and the compat one from before
  the series.
Output: TAP.
"""
import ctypes
import difflib
import errno
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from i2c_guest import (BIN, TOP, buses, delete_device, diag, insmod, new_device,  # noqa: E402
                       pec, plan, run, tap, TRACING, trace_events)
from abi_transcript import (EEPROM, STUB_ADDR, T_BIN, TESTUNIT, eeprom_image,  # noqa: E402
                            eeprom_path, fuzz, old_abi, reload, setup, transcript,
                            write_eeprom)

I2C_SLAVE, I2C_FUNCS, I2C_RDWR, I2C_SMBUS = 0x0703, 0x0705, 0x0707, 0x0720
I2C_FUNC_I2C, I2C_FUNC_SMBUS3_BLOCK = 0x1, 0x40
I2C_M_RD, I2C_M_RECV_LEN, I2C_M_RECV_LEN_255 = 0x1, 0x400, 0x100
I2C_SMBUS_READ, I2C_SMBUS_WRITE, I2C_SMBUS3_BLOCK_DATA = 1, 0, 9
BASE = os.path.join(TOP, "build/vm/i2c-abi-base/transcript{}.txt")
SMBUS3 = os.path.join(BIN, "smbus3-block")
COMPAT = " (32-bit, compat ioctls)"


class Msg(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint16), ("flags", ctypes.c_uint16),
                ("len", ctypes.c_uint16), ("buf", ctypes.c_void_p)]


class RdwrData(ctypes.Structure):
    _fields_ = [("msgs", ctypes.c_void_p), ("nmsgs", ctypes.c_uint32)]


class SmbusArgs(ctypes.Structure):
    _fields_ = [("read_write", ctypes.c_uint8), ("command", ctypes.c_uint8),
                ("size", ctypes.c_uint32), ("data", ctypes.c_void_p)]


libc = ctypes.CDLL(None, use_errno=True)
libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)


def ioctl_errno(fd, req, arg):
    """ioctl(fd, req, &arg): 0 or the errno."""
    ctypes.set_errno(0)
    return 0 if libc.ioctl(fd, req, ctypes.addressof(arg)) >= 0 else ctypes.get_errno()


def open_bus(bus, addr):
    fd = os.open(f"/dev/i2c-{bus}", os.O_RDWR)
    libc.ioctl(fd, I2C_SLAVE, addr)
    return fd


def funcs(bus):
    fd = os.open(f"/dev/i2c-{bus}", os.O_RDWR)
    buf = ctypes.c_ulong()
    err = ioctl_errno(fd, I2C_FUNCS, buf)
    os.close(fd)
    return -1 if err else buf.value


def rdwr_block(bus, addr, cmd, flags, buflen):
    """Write cmd, then a block read with I2C_M_RECV_LEN and the given extra
    flags into a buffer of buflen bytes followed by a guard.
    Returns (errno, data, guard intact)."""
    fd = open_bus(bus, addr)
    cmdbuf = (ctypes.c_uint8 * 1)(cmd)
    buf = (ctypes.c_uint8 * (buflen + 64))(*([0xa5] * (buflen + 64)))
    buf[0] = 1
    msgs = (Msg * 2)(Msg(addr, 0, 1, ctypes.addressof(cmdbuf)),
                     Msg(addr, I2C_M_RD | flags, buflen, ctypes.addressof(buf)))
    data = RdwrData(ctypes.addressof(msgs), 2)
    err = ioctl_errno(fd, I2C_RDWR, data)
    os.close(fd)
    got = bytes(buf[1:1 + buf[0]]) if not err else b""
    return err, got, all(v == 0xa5 for v in buf[buflen:])


def rdwr_read(bus, addr, cmd, flags, n):
    """Write cmd, then read n bytes with I2C_M_RD and the given extra flags
    (no I2C_M_RECV_LEN). Returns (errno, data)."""
    fd = open_bus(bus, addr)
    cmdbuf = (ctypes.c_uint8 * 1)(cmd)
    buf = (ctypes.c_uint8 * n)()
    msgs = (Msg * 2)(Msg(addr, 0, 1, ctypes.addressof(cmdbuf)),
                     Msg(addr, I2C_M_RD | flags, n, ctypes.addressof(buf)))
    err = ioctl_errno(fd, I2C_RDWR, RdwrData(ctypes.addressof(msgs), 2))
    os.close(fd)
    return err, bytes(buf) if not err else b""


def smbus3_ioctl(bus, addr, rw, cmd, block):
    """I2C_SMBUS with I2C_SMBUS3_BLOCK_DATA; returns (errno, union bytes)."""
    fd = open_bus(bus, addr)
    union = (ctypes.c_uint8 * 258)(*block)
    args = SmbusArgs(rw, cmd, I2C_SMBUS3_BLOCK_DATA, ctypes.addressof(union))
    err = ioctl_errno(fd, I2C_SMBUS, args)
    os.close(fd)
    return err, bytes(union)


def read_eeprom(bus):
    return open(eeprom_path(bus), "rb").read()


def hexes(data):
    return " ".join(f"0x{v:02x}" for v in data)


FUNCS_LINE = re.compile(r"^funcs -> ret=0 funcs=(0x[0-9a-f]+) undefined=(0x[0-9a-f]+)$")


def funcs_change(old, new):
    """The bits an old binary's raw I2C_FUNCS gained between two transcript
    lines, if both are old-abi's I2C_FUNCS lines and nothing else differs
    (no bit lost, and every gained bit one that 6.1's headers do not
    define); else None."""
    mo, mn = FUNCS_LINE.match(old), FUNCS_LINE.match(new)
    if not mo or not mn:
        return None
    fo, uo = (int(x, 16) for x in mo.groups())
    fn, un = (int(x, 16) for x in mn.groups())
    gained = fn & ~fo
    if fo & ~fn or un != uo | gained or not gained:
        return None
    return gained


def test_transcript(s, a, b, bits=""):
    """Existing binaries see what they saw before the series. The one
    difference allowed, shown and explained: old-abi prints I2C_FUNCS raw,
    and the crosswire adapters (not i2c-stub) now report
    I2C_FUNC_SMBUS3_BLOCK, a bit 6.1's headers do not define - old
    programs test the bits they know, as with every functionality bit the
    kernel added before. bits="32": the same with old-abi's 32-bit build
    (compat ioctls), against the compat transcript from before the series.
    Returns the transcript."""
    text = transcript(s, a, b, bits)
    with open(os.path.join(os.environ.get("T_OUT", "/tmp"), f"transcript{bits}.txt"), "w") as f:
        f.write(text)
    lines = text.splitlines()
    via = COMPAT if bits else ""
    base_file = BASE.format(bits)
    if not os.path.exists(base_file):
        tap(False, f"existing binaries{via} behave as on the kernel before the SMBus 3.0 "
            f"patches (no transcript from that kernel at {base_file}: see the host checks)")
        tap(False, f"old binary's{via} raw I2C_FUNCS: only I2C_FUNC_SMBUS3_BLOCK is new, on the "
            "crosswire pair only (no transcript from the kernel before the series)")
    else:
        base = open(base_file).read().splitlines()
        diff = list(difflib.unified_diff(base, lines, "before the series", "test kernel",
                                         lineterm="", n=1))
        diag("\n".join(diff[:60]))
        explained, unexplained = [], []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, lines,
                                                           autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            pairs = list(zip(base[i1:i2], lines[j1:j2])) if i2 - i1 == j2 - j1 else []
            for k, (old, new) in enumerate(pairs):
                gained = funcs_change(old, new)
                # the command this output line belongs to
                cmd = next((x for x in reversed(lines[:j1 + k]) if x.startswith("$ ")), "?")
                if gained is None:
                    unexplained.append((old, new))
                else:
                    explained.append((cmd, gained))
                    diag(f"explained: {' '.join(cmd.split()[:5])} ...: I2C_FUNCS "
                         f"{old.split(' ', 3)[3]} -> "
                         f"{new.split(' ', 3)[3]}: new bit(s) {gained:#x}, undefined in 6.1's "
                         "headers")
            if not pairs:
                unexplained.append((base[i1:i2], lines[j1:j2]))
        tap(not unexplained, f"i2c-tools and old-abi{via}: the {len(lines)}-line transcript is the "
            "same as on the kernel before the SMBus 3.0 patches, but for "
            f"{len(explained)} explained I2C_FUNCS line(s) ({len(unexplained)} unexplained "
            "difference(s))")
        # Which old-abi run each funcs line belongs to: on i2c-stub (no
        # SMBus 3.0 blocks) nothing may change, on the raw crosswire pair
        # exactly I2C_FUNC_SMBUS3_BLOCK appears.
        on_a = [g for cmd, g in explained if cmd.startswith(f"$ old-abi {a} ")]
        on_s = [g for cmd, g in explained if cmd.startswith(f"$ old-abi {s} ")]
        tap(on_a == [I2C_FUNC_SMBUS3_BLOCK] and not on_s and len(explained) == 1,
            f"old binary's{via} raw I2C_FUNCS: the crosswire pair gains exactly "
            f"I2C_FUNC_SMBUS3_BLOCK ({I2C_FUNC_SMBUS3_BLOCK:#x}), i2c-stub is unchanged "
            f"(gained: crosswire {[hex(g) for g in on_a]}, i2c-stub {[hex(g) for g in on_s]})")

    def line(prefix):
        return next((x for x in lines if x.startswith(prefix)), "")

    for req, what in (("block-read:0x40 ", "a classic block read answered with 255 bytes"),
                      ("block-read:0x80 ", "... with 33 bytes"),
                      ("rdwr-recv-len:0x40:300 ", "I2C_RDWR + I2C_M_RECV_LEN, 255 bytes, into a "
                       "300-byte buffer (a large buffer alone does not opt in)"),
                      ("block-proc:0x03:0xff ", "a block process call answered with 255 bytes")):
        got = line(req)
        ok = "errno=Protocol error" in got and "guard=intact" in got
        if not req.startswith("rdwr"):  # the 34 bytes as the caller left them
            left = "01ff" + "a5" * 32 if req.startswith("block-proc") else "a5" * 34
            ok = ok and "data=" + left in got
        tap(ok, f"old binary{via}: {what}: EPROTO, caller's buffer untouched ({got[:70]})")
    tap(line("block-read:0x10 ").startswith("block-read:0x10 -> ret=0 "),
        f"old binary{via}: a 32-byte block read still works")
    tap(lines and "guard=CORRUPTED" not in text,
        f"old binary{via}: no request wrote past the ABI's buffer sizes")
    return text


def test_new_program(bus, peer, raw, bits=""):
    """tools/smbus3's smbus3-block, or with bits="32" its 32-bit build
    (compat ioctls), on a crosswire pair."""
    kind = "raw I2C, core's SMBus emulation" if raw else "SMBus-only adapter, native smbus_xfer"
    kind += COMPAT if bits else ""
    prog = os.path.join(T_BIN, "smbus3-block32") if bits else SMBUS3
    image = eeprom_image()
    write_eeprom(peer, image)
    want = bytes(image[(0x41 + i) & 0xff] for i in range(255))
    p = run(prog, bus, EEPROM, "read", 0x40)
    tap(p.returncode == 0 and p.stdout.strip() == f"255: {hexes(want)}",
        f"{kind}: smbus3-block reads a 255-byte SMBus block ({p.stderr.strip()})")
    p = run(prog, bus, EEPROM, "rdwr-read", 0x40)
    if raw:
        tap(p.returncode == 0 and p.stdout.strip() == f"255: {hexes(want)}",
            f"{kind}: I2C_RDWR with I2C_M_RECV_LEN_255 reads the 255-byte block")
    else:
        tap(p.returncode == 1 and "not supported" in p.stderr,
            f"{kind}: no raw I2C, I2C_RDWR refused ({p.stderr.strip()})")
    data = [(i * 13 + 5) & 0xff for i in range(255)]
    p = run(prog, bus, EEPROM, "write", 0x00, *data)
    got = read_eeprom(peer)
    tap(p.returncode == 0 and got[0] == 255 and list(got[1:256]) == data,
        f"{kind}: smbus3-block writes a 255-byte SMBus block (count and data in the eeprom)")
    p = run(prog, bus, EEPROM, "i2c-read", 0x00, 255)
    tap(p.returncode == 0 and p.stdout.strip() == f"255: {hexes(got[0:255])}",
        f"{kind}: 255-byte I2C block read")
    data = [(i * 3 + 1) & 0xff for i in range(255)]
    p = run(prog, bus, EEPROM, "i2c-write", 0x01, *data)
    got = read_eeprom(peer)
    tap(p.returncode == 0 and list(got[1:256]) == data, f"{kind}: 255-byte I2C block write")
    p = run(prog, bus, TESTUNIT, "proc-call", 0x03, 0xff)
    tap(p.returncode == 0 and p.stdout.strip() == f"255: {hexes(range(0xfe, -1, -1))}",
        f"{kind}: block process call answered with 255 bytes (slave-testunit)")

    # PEC over a 200-byte block: the eeprom holds the right PEC after the
    # data, then a wrong one.
    image = eeprom_image()
    image[0x20] = 200
    body = [EEPROM << 1, 0x20, EEPROM << 1 | 1] + list(image[0x20:0x20 + 201])
    image[0xe9] = pec(body)
    write_eeprom(peer, image)
    p = run(prog, "-p", bus, EEPROM, "read", 0x20)
    tap(p.returncode == 0 and p.stdout.strip() == f"200: {hexes(image[0x21:0xe9])}",
        f"{kind}: a 200-byte block read with a correct PEC")
    image[0xe9] ^= 0x5a
    write_eeprom(peer, image)
    p = run(prog, "-p", bus, EEPROM, "read", 0x20)
    tap(p.returncode == 1 and "Bad message" in p.stderr,
        f"{kind}: a wrong PEC after 200 bytes is EBADMSG ({p.stderr.strip()})")
    write_eeprom(peer, eeprom_image())
    p = run(old_abi(bits), bus, hex(EEPROM), "block-read:0x40", "block-read:0x10")
    tap(p.returncode == 0 and "block-read:0x40 -> ret=-1 errno=Protocol error" in p.stdout and
        "block-read:0x10 -> ret=0" in p.stdout and "CORRUPTED" not in p.stdout,
        f"{kind}: old binary: 255-byte answer to a classic block read is EPROTO, 32 works")


MUX_ADDR = 0x70


def test_mux(bus, peer, raw):
    """A PCA9548 mux (i2c-mux-pca954x) on a crosswire pair: its channels
    report the parent's I2C_FUNC_SMBUS3_BLOCK, and i2c-mux forwards SMBus
    3.0 blocks to the parent - smbus3_xfer() on the SMBus-only pair, the
    core's emulation over the forwarded master_xfer() on the raw one. The
    mux's control register is a slave-24c02 at 0x70 on the other side (the
    driver's select writes the channel mask as an SMBus byte); crosswire
    does no gating, so the eeprom answers on any channel."""
    kind = "raw I2C pair" if raw else "SMBus-only pair"
    new_device(peer, "slave-24c02", 0x1000 | MUX_ADDR)
    new_device(bus, "pca9548", MUX_ADDR)
    chan = buses().get(f"i2c-{bus}-mux (chan_id 0)")
    image = eeprom_image()
    write_eeprom(peer, image)
    want = bytes(image[(0x41 + i) & 0xff] for i in range(255))
    data = [(i * 11 + 7) & 0xff for i in range(255)]
    fc = funcs(chan) if chan is not None else -1
    pr = run(SMBUS3, chan, EEPROM, "read", 0x40) if chan is not None else None
    pw = run(SMBUS3, chan, EEPROM, "write", 0x00, *data) if chan is not None else None
    got = read_eeprom(peer)
    tap(chan is not None and fc >= 0 and bool(fc & I2C_FUNC_SMBUS3_BLOCK) and
        pr.returncode == 0 and pr.stdout.strip() == f"255: {hexes(want)}" and
        pw.returncode == 0 and got[0] == 255 and list(got[1:256]) == data,
        f"i2c-mux on the {kind}: channel 0 (i2c-{chan}) reports I2C_FUNC_SMBUS3_BLOCK "
        f"(funcs {fc:#x}) and carries a 255-byte block read and write "
        f"({(pr.stderr.strip() or 'read ok') if pr else 'no channel'}; "
        f"{(pw.stderr.strip() or 'write ok') if pw else 'no channel'})")
    delete_device(bus, MUX_ADDR)
    delete_device(peer, 0x1000 | MUX_ADDR)
    write_eeprom(peer, eeprom_image())


def traced_blocks(text, event, bus):
    """The blocks (count byte first) of EVENT's lines for adapter BUS in a
    trace, with the l= each line reports."""
    out = []
    for m in re.finditer(rf"\b{event}: i2c-{bus} a=\S+ f=\S+ c=\S+ \S+ l=(\d+) \[([0-9a-f ]*)\]",
                         text):
        out.append((int(m.group(1)), bytes.fromhex(m.group(2))))
    return out


def test_smbus3_trace(bus, peer):
    """smbus3_write and smbus3_reply (patch 0024) record a 255-byte block
    whole, count byte first, in place of smbus_write and smbus_reply,
    which hold 32-byte blocks; smbus_read and smbus_result record the
    transfers with the new protocols' names. A block process call's reply
    is traced although the call is issued as a write (I2C_SMBUS_WRITE, as
    smbus3-block and i2c-tools do)."""
    events = ("smbus3_write", "smbus3_reply", "smbus_write", "smbus_read", "smbus_reply",
              "smbus_result")
    if not all(os.path.isdir(f"{TRACING}/events/smbus/{e}") for e in events):
        why = f"no {TRACING}/events/smbus/smbus3_write or smbus3_reply (tracefs, patch 0024)"
        tap(False, f"tracing: a 255-byte SMBus 3.0 block read is in smbus3_reply ({why})")
        tap(False, f"tracing: a 255-byte SMBus 3.0 block write is in smbus3_write ({why})")
        tap(False, f"tracing: a block process call's 255-byte reply is in smbus3_reply ({why})")
        tap(False, f"tracing: smbus_read and smbus_result record SMBus 3.0 transfers ({why})")
        return
    image = eeprom_image()
    write_eeprom(peer, image)
    want = bytes([255]) + bytes(image[(0x41 + i) & 0xff] for i in range(255))
    data = [(i * 7 + 3) & 0xff for i in range(255)]

    traced = [f"smbus/{e}" for e in events]
    trace_events(traced, True)
    pr = run(SMBUS3, bus, EEPROM, "read", 0x40)
    pw = run(SMBUS3, bus, EEPROM, "write", 0x01, *data)
    pp = run(SMBUS3, bus, TESTUNIT, "proc-call", 0x03, 0xff)
    text = trace_events(traced, False)
    write_eeprom(peer, eeprom_image())
    replies = traced_blocks(text, "smbus3_reply", bus)
    answer = (256, bytes([255]) + bytes(range(0xfe, -1, -1)))
    call_replies = [r for r in replies if r == answer]
    replies = [r for r in replies if r != answer]
    # the process call's written part, [1, 0xff], is traced too
    writes = [w for w in traced_blocks(text, "smbus3_write", bus) if w != (2, bytes([1, 0xff]))]
    classic = re.findall(rf"\bsmbus_(?:write|reply): i2c-{bus} .*", text)
    reads = re.findall(rf"\bsmbus_read: i2c-{bus} a=\S+ f=\S+ c=(\S+) (\S+)", text)
    results = re.findall(rf"\bsmbus_result: i2c-{bus} a=\S+ f=\S+ c=(\S+) (\S+) (\S+) res=(\S+)",
                         text)
    if not (replies and writes):
        diag(text[-3000:])
    tap(pr.returncode == 0 and replies == [(256, want)],
        "tracing: a 255-byte SMBus 3.0 block read is in smbus3_reply, count byte and 255 bytes "
        f"({[n for n, _ in replies]} traced)")
    tap(pw.returncode == 0 and writes == [(256, bytes([255] + data))] and not classic,
        "tracing: a 255-byte SMBus 3.0 block write is in smbus3_write whole; smbus_write and "
        f"smbus_reply record no SMBus 3.0 transfer ({[n for n, _ in writes]} traced, "
        f"{len(classic)} smbus_write/smbus_reply lines)")
    tap(pp.returncode == 0 and call_replies == [answer],
        "tracing: a block process call's 255-byte reply is in smbus3_reply (issued as a write, "
        f"as smbus3-block and i2c-tools do; {len(call_replies)} traced)")
    want_results = [("40", "BLOCK3_DATA", "rd", "0"), ("1", "BLOCK3_DATA", "wr", "0"),
                    ("3", "BLOCK3_PROC_CALL", "wr", "0")]
    tap(reads == [("40", "BLOCK3_DATA")] and results == want_results,
        "tracing: smbus_read records the read request (not the process call's), smbus_result "
        f"the three results, with the new protocols' names (smbus_read {reads}, smbus_result "
        f"{results})")


def test_rdwr_rules(a, s):
    err, got, guard = rdwr_block(a, EEPROM, 0x40, I2C_M_RECV_LEN | I2C_M_RECV_LEN_255, 1 + 255)
    tap(err == 0 and len(got) == 255 and guard,
        f"I2C_RDWR: I2C_M_RECV_LEN_255 with a 256-byte buffer reads 255 bytes, nothing beyond "
        f"({errno.errorcode.get(err, err)}, {len(got)} bytes)")
    err, _, guard = rdwr_block(a, EEPROM, 0x40, I2C_M_RECV_LEN | I2C_M_RECV_LEN_255, 1 + 254)
    tap(err == errno.EINVAL and guard, "I2C_RDWR: I2C_M_RECV_LEN_255 with a buffer one byte "
        f"short is EINVAL ({errno.errorcode.get(err, err)})")
    err0, plain = rdwr_read(a, EEPROM, 0x40, 0, 40)
    err1, flagged = rdwr_read(a, EEPROM, 0x40, I2C_M_RECV_LEN_255, 40)
    tap(err0 == 0 and err1 == 0 and len(plain) == 40 and flagged == plain,
        "I2C_RDWR: 0x0100 (I2C_M_RECV_LEN_255) without I2C_M_RECV_LEN is passed on as in 6.1: "
        f"a 40-byte read returns what it does without the bit "
        f"({errno.errorcode.get(err1, err1)}, {len(flagged)} bytes)")
    err, _, guard = rdwr_block(a, EEPROM, 0x40, I2C_M_RECV_LEN, 1 + 255)
    tap(err == errno.EPROTO and guard, "I2C_RDWR: I2C_M_RECV_LEN alone keeps the 32-byte limit "
        f"({errno.errorcode.get(err, err)})")
    # i2c-stub has no raw I2C at all, so both are EOPNOTSUPP; the
    # transcript compares the same requests with the pre-series kernel.
    err0, _, _ = rdwr_block(s, STUB_ADDR, 0x10, I2C_M_RECV_LEN, 1 + 32)
    err1, _, _ = rdwr_block(s, STUB_ADDR, 0x10, I2C_M_RECV_LEN | I2C_M_RECV_LEN_255, 1 + 32)
    tap(err1 == err0 == errno.EOPNOTSUPP, "I2C_RDWR: I2C_M_RECV_LEN_255 on an adapter without "
        "I2C_FUNC_SMBUS3_BLOCK is passed on: the answer is the one without the bit "
        f"({errno.errorcode.get(err1, err1)}, without: {errno.errorcode.get(err0, err0)})")
    err, _ = smbus3_ioctl(s, STUB_ADDR, I2C_SMBUS_READ, 0x10, [0])
    tap(err == errno.EOPNOTSUPP, "I2C_SMBUS: I2C_SMBUS3_BLOCK_DATA on an adapter without "
        f"I2C_FUNC_SMBUS3_BLOCK is EOPNOTSUPP ({errno.errorcode.get(err, err)})")
    err, _ = smbus3_ioctl(a, EEPROM, I2C_SMBUS_WRITE, 0x60, [0])
    tap(err == errno.EINVAL, "I2C_SMBUS: an SMBus 3.0 block write of 0 bytes is EINVAL "
        f"({errno.errorcode.get(err, err)})")
    p = run(SMBUS3, "-3", s, STUB_ADDR, "read", 0x10)
    tap(p.returncode == 3, f"smbus3-block -3 on i2c-stub (no SMBus 3.0 bit) exits 3 "
        f"({p.stderr.strip()})")


def test_buses_work(s, a, b, sa, sb):
    """After the fuzzing, data written on each bus reads back: a byte on
    i2c-stub, 255-byte SMBus blocks on both crosswire pairs (checked in the
    target's eeprom too)."""
    v = os.urandom(1)[0]
    p = run("i2cset", "-y", s, hex(STUB_ADDR), "0x10", hex(v))
    q = run("i2cget", "-y", s, hex(STUB_ADDR), "0x10")
    got = q.stdout.strip()
    tap(p.returncode == 0 and q.returncode == 0 and got == f"0x{v:02x}",
        f"after the fuzzing, i2c-stub: a byte written with i2cset ({v:#04x}) reads back "
        f"({got or q.stderr.strip()})")
    for bus, peer, kind in ((a, b, "raw crosswire pair"), (sa, sb, "SMBus-only crosswire pair")):
        data = list(os.urandom(255))
        p = run(SMBUS3, bus, EEPROM, "write", 0x00, *data)
        image = read_eeprom(peer)
        q = run(SMBUS3, bus, EEPROM, "read", 0x00)
        tap(p.returncode == 0 and image[0] == 255 and list(image[1:256]) == data and
            q.returncode == 0 and q.stdout.strip() == f"255: {hexes(data)}",
            f"after the fuzzing, {kind}: a 255-byte block written reaches the eeprom and reads "
            f"back ({p.stderr.strip() or q.stderr.strip() or 'exit ' + str(p.returncode)})")


def main():
    got = setup(("pairs=1", "smbus_pairs=1"))
    if not tap(got is not None, "i2c-stub, a raw and an SMBus-only i2c-crosswire pair"):
        return plan()
    s, a, b = got
    bs = buses()
    sa, sb = bs.get("i2c-crosswire 1a smbus"), bs.get("i2c-crosswire 1b smbus")
    fa, fsa, fs = funcs(a), funcs(sa), funcs(s)
    tap(fa & I2C_FUNC_SMBUS3_BLOCK and fa & I2C_FUNC_I2C and fsa & I2C_FUNC_SMBUS3_BLOCK and
        not fsa & I2C_FUNC_I2C and not fs & I2C_FUNC_SMBUS3_BLOCK,
        f"I2C_FUNCS: SMBus 3.0 bit on both crosswire pairs (raw {fa:#x}, SMBus-only {fsa:#x}), "
        f"not on i2c-stub ({fs:#x})")

    native = test_transcript(s, a, b)
    # The compat transcript, on fresh modules: the same text as the
    # native one here, and as the compat one before the series.
    got = reload(("pairs=1", "smbus_pairs=1"))
    compat = test_transcript(*got, bits="32") if got else ""
    tap(got is not None and compat == native,
        f"compat ioctls: the transcript with the 32-bit old-abi is the native one "
        f"({len(compat.splitlines())} and {len(native.splitlines())} lines)")
    if got:
        s, a, b = got
    new_device(sb, "slave-24c02", 0x1000 | EEPROM)
    new_device(sb, "slave-testunit", 0x1000 | TESTUNIT)
    for bits in ("", "32"):
        test_new_program(a, b, True, bits)
        test_new_program(sa, sb, False, bits)
    if insmod("i2c-mux-pca954x"):
        test_mux(a, b, True)
        test_mux(sa, sb, False)
    else:
        tap(False, "i2c-mux on the raw I2C pair: i2c-mux-pca954x does not load")
        tap(False, "i2c-mux on the SMBus-only pair: i2c-mux-pca954x does not load")
    test_smbus3_trace(sa, sb)
    test_rdwr_rules(a, s)

    # A new seed each run unless the host sets I2CDEV_FUZZ_SEED (vm.conf
    # passes it on); the same seed for the native and the 32-bit run.
    fuzz(s, a, sa, iterations=int(os.environ.get("FUZZ_ITERATIONS", "20000")))
    test_buses_work(s, a, b, sa, sb)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
