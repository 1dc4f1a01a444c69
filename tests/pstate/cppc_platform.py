"""The guest's view of the emulated CPPC platform (platform/amd-pstate).

cppc.conf describes the platform; the simulator (tools/cppc-sim) keeps a
status page in the reserved register region, which the guest reads through
/dev/mem. Run as a program it checks that a simulator is attached:

    python3 cppc_platform.py check      exit 0, or 1 with the reason
"""
import mmap
import os
import struct
import sys
import time

PLATFORM = os.path.join(os.environ.get("TOP", "/"), "platform/amd-pstate")
CONF = os.path.join(PLATFORM, "cppc.conf")
sys.path.insert(0, PLATFORM)
from cppc_conf import load_conf  # noqa: E402
MAGIC = b"CPPCSIM1"
HEADER = struct.Struct("<8sIIQQI28x")  # magic version ncpus heartbeat elapsed_ns tick_us
CPU = struct.Struct("<IIIIIIIIQ24x")
CPU_FIELDS = ("enable", "desired", "applied", "desired_min", "desired_max",
              "enabled_count", "disabled_count", "out_of_range", "changes")


class NoSimulator(Exception):
    pass


class Platform:
    """Reads the registers and the simulator's status page."""

    def __init__(self, conf=None):
        self.conf = conf or load_conf(CONF)
        base, size = self.conf["CPPC_BASE"], self.conf["CPPC_SIZE"]
        try:
            fd = os.open("/dev/mem", os.O_RDONLY | os.O_SYNC)
        except OSError as e:
            raise NoSimulator(f"cannot open /dev/mem ({e.strerror}): kernel without CONFIG_DEVMEM?")
        try:
            self.mem = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ, offset=base)
        except OSError as e:
            raise NoSimulator(f"cannot map the CPPC region at {base:#x} ({e.strerror}): "
                              "guest booted without memmap= for it?")
        finally:
            os.close(fd)

    def header(self):
        magic, version, ncpus, heartbeat, elapsed, tick = HEADER.unpack_from(
            self.mem, self.conf["STATUS_OFFSET"])
        return {"magic": magic, "version": version, "ncpus": ncpus,
                "heartbeat": heartbeat, "elapsed_ns": elapsed, "tick_us": tick}

    def check(self, wait=2.0):
        """Raise NoSimulator with the reason unless a live simulator is attached."""
        h = self.header()
        if h["magic"] != MAGIC:
            raise NoSimulator(
                "no CPPC platform simulator is attached: no status page at "
                f"{self.conf['CPPC_BASE'] + self.conf['STATUS_OFFSET']:#x} "
                "(run tools/cppc-sim on the host next to QEMU; see platform/amd-pstate/vm-cppc.sh)")
        beat = h["heartbeat"]
        deadline = time.monotonic() + wait
        while self.header()["heartbeat"] == beat:
            if time.monotonic() > deadline:
                raise NoSimulator(f"the CPPC platform simulator stopped: no heartbeat for {wait} s")
            time.sleep(0.01)
        return h

    def cpu(self, n):
        off = self.conf["STATUS_OFFSET"] + HEADER.size + n * CPU.size
        return dict(zip(CPU_FIELDS, CPU.unpack_from(self.mem, off)))

    def reg32(self, cpu, name):
        off = cpu * self.conf["CPPC_STRIDE"] + self.conf[name]
        return struct.unpack_from("<I", self.mem, off)[0]

    def write_reg32(self, cpu, name, value):
        """Write a 32-bit register of cpu's block, as a writer other than the
        driver would (the tests' sentinels in MIN and MAX)."""
        base, size = self.conf["CPPC_BASE"], self.conf["CPPC_SIZE"]
        fd = os.open("/dev/mem", os.O_RDWR | os.O_SYNC)
        try:
            m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                          offset=base)
        finally:
            os.close(fd)
        struct.pack_into("<I", m, cpu * self.conf["CPPC_STRIDE"] + self.conf[name], value)
        m.close()

    def wait_desired(self, cpu, want, timeout=5.0):
        """Wait until the simulator saw DESIRED == want on cpu; return what it saw."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.cpu(cpu)["desired"]
            if seen == want or time.monotonic() > deadline:
                return seen
            time.sleep(0.02)


def main():
    if sys.argv[1:] != ["check"]:
        sys.exit("usage: cppc_platform.py check")
    try:
        h = Platform().check()
    except NoSimulator as e:
        print(f"cppc_platform: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"cppc_platform: simulator attached: {h['ncpus']} CPUs, tick {h['tick_us']} us")


if __name__ == "__main__":
    main()
