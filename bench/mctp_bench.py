#!/usr/bin/env python3
"""MCTP over I2C throughput, in the guest (run by scripts/run-bench-mctp.sh).

For each simulated bus clock of i2c-crosswire (module reloaded with
bus_hz) and each MTU (68: DSP0237's baseline, 254: the largest a 255-byte
block carries), two mctp-i2c interfaces on the two sides of the wire in
their own MCTP networks exchange request/response messages (mctp-echo
ping): messages per second and payload bytes per second, REPS repetitions,
one JSON line per repetition.
"""
import json
import os
import subprocess
import sys
import time

TOP = os.environ.get("TOP", "/")
KOBJ = os.environ["KOBJ"]
BIN = os.path.join(TOP, "build/bin")
CLOCKS = [int(x) for x in os.environ.get("MCTP_CLOCKS", "100000,400000,1000000").split(",")]
MTUS = [68, 254]
SIZES = [int(x) for x in os.environ.get("MCTP_SIZES", "64,4096").split(",")]
REPS = int(os.environ.get("MCTP_REPS", "5"))
COUNT = int(os.environ.get("MCTP_COUNT", "5"))


def run(*cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"mctp-bench: {' '.join(map(str, cmd))}: {p.stderr.strip()}")
    return p.stdout


def bus(name):
    for d in os.listdir("/sys/bus/i2c/devices"):
        p = f"/sys/bus/i2c/devices/{d}/name"
        if d.startswith("i2c-") and open(p).read().strip() == name:
            return int(d[4:])
    sys.exit(f"mctp-bench: no adapter '{name}'")


def sysfs(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    conf = os.path.join(BIN, "mctp-conf")
    for hz in CLOCKS:
        run("insmod", os.path.join(KOBJ, "drivers/i2c/busses/i2c-crosswire.ko"), f"bus_hz={hz}")
        a, b = bus("i2c-crosswire 0a"), bus("i2c-crosswire 0b")
        for mtu in MTUS:
            sysfs(f"/sys/bus/i2c/devices/i2c-{a}/new_device", "mctp-i2c-interface 0x1010")
            sysfs(f"/sys/bus/i2c/devices/i2c-{b}/new_device", "mctp-i2c-interface 0x1020")
            for dev, net, eid, peer, ll in ((f"mctpi2c{a}", 1, 8, 9, "20"),
                                            (f"mctpi2c{b}", 2, 9, 8, "10")):
                run(conf, "link", "set", dev, "net", net, "mtu", mtu, "up")
                run(conf, "addr", "add", eid, "dev", dev)
                run(conf, "route", "add", peer, "via", dev)
                run(conf, "neigh", "add", peer, "dev", dev, "lladdr", ll)
            srv = subprocess.Popen([os.path.join(BIN, "mctp-echo"), "serve", "--net", "2"],
                                   stdout=subprocess.DEVNULL)
            time.sleep(0.2)
            for size in SIZES:
                # warm-up, then the measured repetitions
                for rep in range(REPS + 1):
                    out = run(os.path.join(BIN, "mctp-echo"), "ping", "--net", 1, "--eid", 9,
                              "--sizes", size, "--count", COUNT, "--timeout", 60000)
                    r = dict(kv.split("=", 1) for kv in out.split())
                    if rep:
                        print(json.dumps({"bus_hz": hz, "mtu": mtu, "size": size,
                                          "count": COUNT, "msgs_per_s": float(r["msgs_per_s"]),
                                          "bytes_per_s": float(r["bytes_per_s"])}), flush=True)
            srv.kill()
            srv.wait()
            sysfs(f"/sys/bus/i2c/devices/i2c-{a}/delete_device", "0x1010")
            sysfs(f"/sys/bus/i2c/devices/i2c-{b}/delete_device", "0x1020")
        run("rmmod", "i2c_crosswire")


main()
