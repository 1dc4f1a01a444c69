#!/usr/bin/env python3
"""tests/i2c-abi, part 1, on the kernel from before the SMBus 3.0 patches
(variant abi-base: the whole series but the SMBus 3.0 and MCTP patches
0013-0018, so with i2c-crosswire). Writes the ABI
transcript to $T_OUT/transcript.txt for part 2 to compare, and the compat
transcript (old-abi's 32-bit build, through compat_i2cdev_ioctl()) to
$T_OUT/transcript32.txt; checks that a new program - tools/smbus3's
smbus3-block, built with the system's headers, with the series' headers
and as a 32-bit program - falls back to 32-byte blocks here; and fuzzes
i2c-dev on this kernel through both ioctl paths, as part 2 does on the
test kernel. Output: TAP.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from i2c_guest import BIN, plan, run, tap  # noqa: E402
from abi_transcript import (EEPROM, T_BIN, eeprom_image, fuzz, reload, setup, steps,  # noqa: E402
                            transcript, write_eeprom)


def main():
    buses = setup()
    if not tap(buses is not None, "i2c-stub and an i2c-crosswire pair with targets"):
        return plan()
    s, a, b = buses
    text = transcript(s, a, b)
    with open(os.path.join(os.environ["T_OUT"], "transcript.txt"), "w") as f:
        f.write(text)
    n = len(steps(s, a))
    tap(sum(line.startswith("$ ") for line in text.splitlines()) == n,
        f"ABI transcript written: {n} commands, {len(text.splitlines())} lines")
    # The same transcript with old-abi's 32-bit build, on fresh modules.
    buses = reload()
    text32 = transcript(*buses, bits="32") if buses else ""
    with open(os.path.join(os.environ["T_OUT"], "transcript32.txt"), "w") as f:
        f.write(text32)
    tap(buses is not None and text32 == text,
        f"compat ioctls: the transcript with the 32-bit old-abi is the native one "
        f"({len(text32.splitlines())} lines, written for part 2)")
    if buses:
        s, a, b = buses

    image = eeprom_image()
    write_eeprom(b, image)
    want32 = " ".join(f"0x{v:02x}" for v in image[0x11:0x31])
    for prog, label in ((os.path.join(BIN, "smbus3-block"), "system headers"),
                        (os.path.join(T_BIN, "smbus3-block-newhdr"), "the series' headers"),
                        (os.path.join(T_BIN, "smbus3-block32"), "32-bit, compat ioctls")):
        p = run(prog, a, EEPROM, "read", 0x10)
        tap(p.returncode == 0 and p.stdout.strip() == f"32: {want32}" and
            "using 32-byte blocks" in p.stderr,
            f"smbus3-block ({label}) on the old kernel: no SMBus 3.0 bit, falls back and "
            f"reads the 32-byte block ({p.stderr.strip()})")
        p = run(prog, a, EEPROM, "rdwr-read", 0x10)
        tap(p.returncode == 0 and p.stdout.strip() == f"32: {want32}",
            f"smbus3-block ({label}): I2C_RDWR block read falls back to 32 bytes")
        p = run(prog, "-3", a, EEPROM, "read", 0x10)
        tap(p.returncode == 3 and "no SMBus 3.0 blocks" in p.stderr,
            f"smbus3-block ({label}) -3: exits 3 on the old kernel ({p.stderr.strip()})")
        p = run(prog, a, EEPROM, "write", 0x60, *range(100))
        tap(p.returncode == 3 and "do not fit" in p.stderr,
            f"smbus3-block ({label}): a 100-byte write is refused, not truncated "
            f"({p.stderr.strip().splitlines()[-1]})")
        p = run(prog, a, EEPROM, "read", 0x40)
        tap(p.returncode == 1 and "Protocol error" in p.stderr,
            f"smbus3-block ({label}): a 255-byte answer is EPROTO on the old kernel "
            f"({p.stderr.strip().splitlines()[-1]})")
    fuzz(s, a)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
