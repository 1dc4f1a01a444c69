"""Guest-side helpers shared by the I2C test areas (tests/mctp, tests/i2c-abi):
TAP output, running commands, I2C adapters and devices through sysfs, the
kernel's I2C modules from the build tree, SMBus PEC."""
import glob
import os
import subprocess

TOP = os.environ.get("TOP", "/")
# The kernel whose modules are loaded: the test kernel unless told otherwise.
KOBJ = os.environ.get("KOBJ", os.path.join(TOP, "build/obj-test"))
BIN = os.path.join(TOP, "build/bin")
results = []


def tap(ok, name, skip=None):
    results.append(ok)
    line = f"{'ok' if ok else 'not ok'} {len(results)} - {name}"
    if skip:
        line += f" # SKIP {skip}"
    print(line, flush=True)
    return ok


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def plan():
    """Print the plan; the exit status of the suite."""
    print(f"1..{len(results)}", flush=True)
    return 0 if all(results) else 1


def run(*cmd, check=False, timeout=120):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode:
        diag(f"$ {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}")
    return p


def buses():
    """Adapter number by name, e.g. {'i2c-crosswire 0a': 3}."""
    out = {}
    for d in glob.glob("/sys/bus/i2c/devices/i2c-*"):
        out[open(f"{d}/name").read().strip()] = int(d.rsplit("-", 1)[1])
    return out


def new_device(bus, name, addr):
    with open(f"/sys/bus/i2c/devices/i2c-{bus}/new_device", "w") as f:
        f.write(f"{name} {addr:#x}")


def delete_device(bus, addr):
    with open(f"/sys/bus/i2c/devices/i2c-{bus}/delete_device", "w") as f:
        f.write(f"{addr:#x}")


MODULES = {"i2c-crosswire": "drivers/i2c/busses/i2c-crosswire.ko",
           "i2c-stub": "drivers/i2c/i2c-stub.ko",
           "i2c-mux-pca954x": "drivers/i2c/muxes/i2c-mux-pca954x.ko"}


def insmod(name, *params):
    return run("insmod", os.path.join(KOBJ, MODULES[name]), *params, check=True).returncode == 0


def rmmod(name):
    return run("rmmod", name, check=True).returncode == 0


def pec(data):
    """SMBus PEC: CRC-8, polynomial x^8 + x^2 + x + 1."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xff if crc & 0x80 else (crc << 1) & 0xff
    return crc


TRACING = "/sys/kernel/tracing"


def trace_events(events, start):
    """Record EVENTS ("system/event", tracefs) from an empty buffer
    (start), or stop, disable them and return the text recorded since,
    leaving the buffer empty and tracing on."""
    def wr(path, value):
        with open(f"{TRACING}/{path}", "w") as f:
            f.write(f"{value}\n")
    wr("tracing_on", 0)
    if start:
        wr("trace", "")
        for e in events:
            wr(f"events/{e}/enable", 1)
        wr("tracing_on", 1)
        return ""
    text = open(f"{TRACING}/trace").read()
    for e in events:
        wr(f"events/{e}/enable", 0)
    wr("trace", "")
    wr("tracing_on", 1)
    return text
