"""The i2c-dev ABI transcript: what existing binaries - Debian's i2c-tools
and old-abi, built against the unchanged 6.1 uAPI headers - see from
i2c-stub and from the tree's slave-24c02 and slave-testunit targets on a
raw i2c-crosswire pair. tests/i2c-abi runs it on the kernel from before the
SMBus 3.0 patches and on the test kernel: the two must be the same text.

The eeprom holds SMBus block counts of 32 (at 0x10, the classic limit), 33
(0x80) and 255 (0x40): classic block reads of the last two must fail with
EPROTO on both kernels, leaving the caller's buffer alone.

old-abi runs as a 64-bit program or, for the compat transcript, as its
32-bit build (old-abi32), whose ioctls go through compat_i2cdev_ioctl();
the transcript names it old-abi either way, so that the two transcripts
of one kernel must be the same text.
"""
import os
import re

from i2c_guest import TOP, buses, diag, insmod, new_device, rmmod, run, tap

T_BIN = os.environ.get("T_BIN", os.path.join(TOP, "build/tests/i2c-abi"))
STUB_ADDR = 0x08
EEPROM, TESTUNIT = 0x50, 0x30


def eeprom_image():
    image = bytearray((i * 7 + 3) & 0xff for i in range(256))
    image[0x10], image[0x40], image[0x80] = 0x20, 0xff, 0x21
    return image


def eeprom_path(bus):
    return f"/sys/bus/i2c/devices/{bus}-{0x1000 | EEPROM:04x}/slave-eeprom"


def write_eeprom(bus, image):
    with open(eeprom_path(bus), "wb") as f:
        f.write(image)


def old_abi(bits=""):
    """The old binary: old-abi (native) or old-abi32 (compat ioctls)."""
    return os.path.join(T_BIN, "old-abi" + bits)


def setup(crosswire_params=("pairs=1",)):
    """i2c-stub, then i2c-crosswire; targets on side b. Returns (stub, a, b)
    or None. The same load order gives the same bus numbers on any kernel."""
    if not insmod("i2c-stub", f"chip_addr={STUB_ADDR:#x}"):
        return None
    if not insmod("i2c-crosswire", *crosswire_params):
        return None
    bs = buses()
    s, a, b = bs.get("SMBus stub driver"), bs.get("i2c-crosswire 0a"), bs.get("i2c-crosswire 0b")
    if None in (s, a, b):
        return None
    new_device(b, "slave-24c02", 0x1000 | EEPROM)
    new_device(b, "slave-testunit", 0x1000 | TESTUNIT)
    write_eeprom(b, eeprom_image())
    return s, a, b


def reload(crosswire_params=("pairs=1",)):
    """Unload i2c-crosswire and i2c-stub, then setup() again: fresh
    registers and eeprom for the next transcript, on the same bus numbers
    (both adapters' numbers are free again, and the load order is the
    same)."""
    if not (rmmod("i2c-crosswire") and rmmod("i2c-stub")):
        return None
    return setup(crosswire_params)


def steps(s, a, bits=""):
    """(command...) run in order; bus numbers and addresses as arguments."""
    old = old_abi(bits)
    x = lambda v: f"{v:#04x}"  # noqa: E731
    return [
        ("i2cdetect", "-F", s), ("i2cdetect", "-F", a),
        ("i2cdetect", "-y", "-r", s), ("i2cdetect", "-y", a),
        # i2c-stub: SMBus only
        ("i2cset", "-y", s, x(STUB_ADDR), "0x10", "0x5a"),
        ("i2cget", "-y", s, x(STUB_ADDR), "0x10"),
        ("i2cset", "-y", s, x(STUB_ADDR), "0x20", "0x1234", "w"),
        ("i2cget", "-y", s, x(STUB_ADDR), "0x20", "w"),
        ("i2cdump", "-y", s, x(STUB_ADDR), "b"),
        ("i2cdump", "-y", "-r", "0x00-0x3f", s, x(STUB_ADDR), "w"),
        ("i2cdump", "-y", s, x(STUB_ADDR), "i"),
        ("i2cget", "-y", s, x(STUB_ADDR), "0x10", "s"),
        ("i2ctransfer", "-y", s, f"w1@{x(STUB_ADDR)}", "0x00", "r4"),
        (old, s, x(STUB_ADDR), "funcs", "byte-read:0x10", "byte-write:0x11:0x99",
         "word-read:0x20", "word-write:0x22:0xbeef", "word-read:0x22",
         "block-write:0x30:32", "block-write:0x30:33", "block-write:0x30:0",
         "block-read:0x30", "i2c-block-read:0x00:32", "i2c-block-read:0x00:33",
         "i2c-block-write:0x40:32", "i2c-block-write:0x40:33", "broken-i2c-block-read:0x40",
         "block-proc:0x50:1:2:3", "rdwr-recv-len:0x10:33",
         # 0x0100 (I2C_M_RECV_LEN_255 since the series) set by an old
         # program: passed on untouched, with and without I2C_M_RECV_LEN
         "rdwr-flags:0x10:4:0x100", "rdwr-flags:0x10:33:0x500"),
        # raw I2C pair: the eeprom and the testunit answer on the other side
        ("i2cget", "-y", a, x(EEPROM), "0x42"),
        ("i2cset", "-y", a, x(EEPROM), "0x11", "0x77"),
        ("i2cget", "-y", a, x(EEPROM), "0x11", "w"),
        ("i2cget", "-y", a, x(EEPROM), "0x10", "s"),
        ("i2cget", "-y", a, x(EEPROM), "0x40", "s"),
        ("i2cget", "-y", a, x(EEPROM), "0x80", "s"),
        ("i2cget", "-y", a, x(EEPROM), "0x00", "i", "32"),
        ("i2cdump", "-y", "-r", "0x00-0x7f", a, x(EEPROM), "b"),
        ("i2cdump", "-y", a, x(EEPROM), "i"),
        ("i2ctransfer", "-y", a, f"w1@{x(EEPROM)}", "0x80", "r32"),
        ("i2ctransfer", "-y", a, f"w1@{x(EEPROM)}", "0x00", "r256"),
        ("i2ctransfer", "-y", a, f"w3@{x(TESTUNIT)}", "0x03", "0x01", "0x10", "r?"),
        ("i2ctransfer", "-y", a, f"w3@{x(TESTUNIT)}", "0x03", "0x01", "0x21", "r?"),
        ("i2cget", "-y", a, "0x51"),
        (old, a, x(EEPROM), "funcs", "byte-read:0x42", "byte-write:0x12:0x99",
         "word-read:0x12", "word-write:0x14:0xbeef", "word-read:0x14",
         "block-read:0x10", "block-read:0x40", "block-read:0x80",
         "block-write:0x60:32", "block-write:0x60:33", "block-write:0x60:0",
         "i2c-block-read:0x00:32", "i2c-block-read:0x00:33", "i2c-block-write:0xa0:32",
         "i2c-block-write:0xa0:33", "broken-i2c-block-read:0x00",
         "rdwr-recv-len:0x10:33", "rdwr-recv-len:0x40:33", "rdwr-recv-len:0x40:300",
         "rdwr-recv-len:0x80:300", "rdwr-recv-len:0x10:20", "block-read:0x10",
         # a fixed-length read with 0x0100 and no I2C_M_RECV_LEN: the bit
         # means nothing there, as in 6.1
         "rdwr-flags:0x00:4:0x100", "rdwr-flags:0x40:40:0x100"),
        (old, a, x(TESTUNIT), "block-proc:0x03:0x10", "block-proc:0x03:0x20",
         "block-proc:0x03:0x21", "block-proc:0x03:0xff"),
    ]


def transcript(s, a, b, bits=""):
    """The text: each command, its output and exit status, then the eeprom.
    bits="32": old-abi's 32-bit build, named old-abi in the text."""
    out = []
    for cmd in steps(s, a, bits):
        p = run(*cmd, timeout=120)
        name = os.path.basename(str(cmd[0]))
        if cmd[0] == old_abi(bits):
            name = "old-abi"
        out.append(f"$ {name} {' '.join(map(str, cmd[1:]))}")
        out += p.stdout.splitlines() + [f"stderr: {line}" for line in p.stderr.splitlines()]
        out.append(f"exit {p.returncode}")
    image = open(eeprom_path(b), "rb").read()
    out.append("eeprom: " + image.hex())
    return "\n".join(out) + "\n"


def fuzz(*buses, iterations=20000):
    """i2cdev-fuzz on the buses, natively, then its 32-bit build (compat
    ioctls) with the same seed: the same requests through both paths. The
    seed is I2CDEV_FUZZ_SEED's (the host passes it to the guest) or a new
    one per run; a failure prints how to repeat it. Two results."""
    seed = os.environ.get("I2CDEV_FUZZ_SEED", "")
    for bits, label in (("", "native ioctls"), ("32", "32-bit, compat ioctls")):
        prog = os.path.join(T_BIN, "i2cdev-fuzz" + bits)
        p = run(prog, "-n", iterations, *(["-s", seed] if seed else []), *buses, timeout=1200)
        diag(p.stdout + p.stderr)
        m = re.search(r"\bseed=(\d+)", p.stdout + p.stderr)
        seed = m.group(1) if m else seed
        ok = (p.returncode == 0 and f"iterations={iterations} " in p.stdout and
              "violations=0" in p.stdout)
        if not ok:
            diag(f"to repeat this run: I2CDEV_FUZZ_SEED={seed or '?'} "
                 f"(or i2cdev-fuzz{bits} -s {seed or '?'} -n {iterations} BUS...)")
        tap(ok, f"i2cdev-fuzz{bits} ({label}, seed {seed or 'unknown'}): {iterations} random "
            f"requests on buses {', '.join(map(str, buses))}: nothing written past the ABI's "
            "sizes, no hang")
