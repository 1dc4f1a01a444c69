#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/tc: tc actions offloaded on their own to netdevsim, and the
flower/matchall filters that use them (seed 010), driven with the host's
Debian tc. Prints TAP; each test names one behaviour.

What "the hardware" holds is read from netdevsim's debugfs table
(tc/offloaded), what tc believes from tc's own output; the tests compare
the two.
"""
import os
import re
import subprocess
import sys
import time
import traceback

BUS = "/sys/bus/netdevsim"
DBG = "/sys/kernel/debug/netdevsim"
CHURN = int(os.environ.get("TC_CHURN_CYCLES", "1000"))


class Skip(Exception):
    pass


def run(*cmd, ok=True):
    """Run a command; with ok=True it must succeed, with ok=False fail."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if ok is True and p.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    if ok is False and not p.returncode:
        raise AssertionError(f"{' '.join(cmd)} succeeded, expected an error")
    return p


def tc(*args, ok=True):
    return run("tc", *args, ok=ok)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


class Nsim:
    """A netdevsim device with one port, hw-tc-offload on, ingress qdisc."""

    def __init__(self, dev_id):
        self.id = dev_id
        with open(f"{BUS}/new_device", "w") as f:
            f.write(f"{dev_id} 1")
        netdir = f"{BUS}/devices/netdevsim{dev_id}/net"
        for _ in range(100):
            if os.path.isdir(netdir) and os.listdir(netdir):
                break
            time.sleep(0.05)
        self.port = os.listdir(netdir)[0]
        self.dbg = f"{DBG}/netdevsim{dev_id}/tc"
        run("ip", "link", "set", self.port, "up")
        run("ethtool", "-K", self.port, "hw-tc-offload", "on")
        tc("qdisc", "add", "dev", self.port, "ingress")

    def table(self):
        """Lines of the hardware table, without the counters."""
        with open(f"{self.dbg}/offloaded") as f:
            return [l.strip() for l in f if l.strip()]

    def actions(self):
        return [l for l in self.table() if l.startswith("action ")]

    def filters(self):
        return [l for l in self.table() if l.startswith("filter ")]

    def set_stats(self, what, pkts, nbytes, drops):
        with open(f"{self.dbg}/hw_stats", "w") as f:
            f.write(f"{what} {pkts} {nbytes} {drops}\n")

    def fail_next(self):
        with open(f"{self.dbg}/fail_next_offload", "w") as f:
            f.write("1")

    def reload(self):
        run("devlink", "dev", "reload", f"netdevsim/netdevsim{self.id}")
        self.port = os.listdir(f"{BUS}/devices/netdevsim{self.id}/net")[0]

    def delete(self):
        with open(f"{BUS}/del_device", "w") as f:
            f.write(str(self.id))


def action(kind, index):
    """tc's view of one action: dict of the fields the tests use."""
    p = tc("-s", "-d", "actions", "get", "action", kind, "index", str(index), ok=None)
    if p.returncode:
        return None
    return parse_action(p.stdout)


def parse_action(text):
    a = {"text": text}
    for key in ("ref", "bind", "in_hw_count"):
        m = re.search(rf"\b{key} (\d+)", text)
        a[key] = int(m.group(1)) if m else None
    a["skip_sw"] = bool(re.search(r"\bskip_sw\b", text))
    a["in_hw"] = bool(re.search(r"\bin_hw\b", text))
    m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+)", text)
    a["bytes"], a["pkts"], a["drops"] = map(int, m.groups()) if m else (None,) * 3
    m = re.search(r"Sent hardware (\d+) bytes (\d+) pkt", text)
    a["hw_bytes"], a["hw_pkts"] = map(int, m.groups()) if m else (None, None)
    return a


def filters(dev, proto=None):
    """tc's view of the filters on a port: list of filter texts."""
    sel = ["protocol", proto] if proto else []
    out = tc("-s", "-d", "filter", "show", "dev", dev, "ingress", *sel).stdout
    return [f for f in re.split(r"\n(?=filter )", out.strip()) if " handle " in f]


def flush(*devs):
    for d in devs:
        tc("filter", "del", "dev", d.port, "ingress", ok=None)
    for kind in ("police", "gact"):
        tc("actions", "flush", "action", kind, ok=None)


POLICE = ["rate", "100mbit", "burst", "10000k", "conform-exceed", "drop/pipe"]
# 100mbit is 12,500,000 bytes/s; 10000k of burst is 10,240,000 bytes.
POLICE_HW = "rate_bytes_ps 12500000 burst 10240000"

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def police_offloaded_alone_seed_transcript(d, _):
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    a = action("police", 200)
    expect(a["skip_sw"] and a["in_hw"] and a["in_hw_count"] == 1,
           f"expected skip_sw in_hw in_hw_count 1:\n{a['text']}")
    expect((a["ref"], a["bind"]) == (1, 0), f"ref/bind {a['ref']}/{a['bind']}, want 1/0")
    expect("used_hw_stats delayed" in a["text"], "used_hw_stats delayed missing")
    hw = d.actions()
    expect(len(hw) == 1 and f"action police index 200 {POLICE_HW}" in hw[0]
           and "conform pipe exceed drop" in hw[0], f"hardware table: {hw}")


@test
def flower_filters_share_the_offloaded_meter_seed_transcript(d, _):
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    for n, proto in enumerate(("ip", "ipv6"), start=2):
        tc("filter", "add", "dev", d.port, "protocol", proto, "parent", "ffff:",
           "flower", "skip_sw", "ip_proto", "tcp", "action", "police", "index", "200")
        f = filters(d.port, proto)
        expect(len(f) == 1 and "skip_sw" in f[0] and re.search(r"in_hw in_hw_count 1\b", f[0]),
               f"{proto} filter not in_hw in_hw_count 1:\n{f}")
        a = action("police", 200)
        expect((a["ref"], a["bind"]) == (n, n - 1),
               f"after the {proto} filter ref/bind {a['ref']}/{a['bind']}, want {n}/{n - 1}")
        expect(a["in_hw_count"] == 1, f"action in_hw_count {a['in_hw_count']}")
    hw = d.table()
    expect("users 2" in d.actions()[0], f"meter should have 2 users: {hw}")
    expect(len(d.filters()) == 2 and all("police:200:shared" in l for l in d.filters()),
           f"filters should use the shared meter 200: {hw}")


@test
def police_with_tc_default_reclassify_is_refused(d, _):
    # The seed's exact command relies on exceed=reclassify (tc's default);
    # 6.1's act_police refuses to describe it for offload.
    p = tc("actions", "add", "action", "police", "rate", "100mbit", "burst", "10000k",
           "index", "200", "skip_sw", ok=False)
    expect("offload" in p.stderr, f"no explanation: {p.stderr}")
    expect(action("police", 200) is None and not d.actions(), "something was left behind")


@test
def in_hw_count_follows_devices(d, _):
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    d2 = Nsim(d.id + 1)
    try:
        expect(action("police", 200)["in_hw_count"] == 2, "second device: in_hw_count not 2")
        expect(len(d2.actions()) == 1, "second device does not hold the meter")
    finally:
        d2.delete()
    a = action("police", 200)
    expect(a and a["in_hw_count"] == 1, f"after deleting it: {a and a['in_hw_count']}, want 1")


@test
def hardware_counters_reported_once(d, _):
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:",
       "flower", "skip_sw", "ip_proto", "tcp", "action", "police", "index", "200")
    d.set_stats("action police 200", 100, 6400, 3)
    for _ in range(3):  # repeated reads must not add the same packets again
        a = action("police", 200)
        expect((a["pkts"], a["bytes"], a["drops"]) == (100, 6400, 3),
               f"counters {a['pkts']}/{a['bytes']}/{a['drops']}, want 100/6400/3")
        expect((a["hw_pkts"], a["hw_bytes"]) == (100, 6400), "not counted as hardware")
    f = filters(d.port, "ip")[0]
    expect("Sent 6400 bytes 100 pkt (dropped 3" in f, f"filter shows other counters:\n{f}")
    d.set_stats("action police 200", 150, 9600, 4)
    a = action("police", 200)
    expect((a["pkts"], a["bytes"], a["drops"]) == (150, 9600, 4),
           f"after the counters moved: {a['pkts']}/{a['bytes']}/{a['drops']}, want 150/9600/4")


@test
def filter_counters_reach_its_own_actions(d, _):
    tc("filter", "add", "dev", d.port, "protocol", "all", "parent", "ffff:",
       "matchall", "skip_sw", "action", "drop")
    fid = d.filters()[0].split()[1]
    d.set_stats(f"filter {fid}", 42, 4200, 42)
    for _ in range(2):
        f = filters(d.port)[0]
        expect("Sent 4200 bytes 42 pkt (dropped 42" in f, f"matchall counters:\n{f}")


@test
def mismatched_filter_and_action_flags_refused(d, _):
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:",
           "flower", "ip_proto", "tcp", "action", "police", "index", "200", ok=False)
    expect("Mismatch between action and filter offload flags" in p.stderr, p.stderr)
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:",
           "flower", "skip_hw", "ip_proto", "tcp", "action", "police", "index", "200", ok=False)
    expect("Mismatch" in p.stderr, p.stderr)
    expect(not filters(d.port) and not d.filters(), "a filter was left behind")
    expect(action("police", 200)["ref"] == 1, "the action kept a reference")


@test
def skip_sw_and_skip_hw_together_refused(d, _):
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw", "skip_hw",
       ok=False)
    expect(action("police", 200) is None and not d.actions(), "something was left behind")


@test
def skip_sw_without_capable_device_refused(d, _):
    d.delete()
    try:
        p = tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw",
               ok=False)
        expect(action("police", 200) is None, f"action left behind ({p.stderr.strip()})")
    finally:
        d.__init__(d.id)


@test
def unsupported_police_parameters_refused_with_reason(d, _):
    cases = [(["rate", "100mbit", "burst", "10000k", "conform-exceed", "pipe/pipe"],
              "supports only exceed action drop"),
             (["rate", "100mbit", "burst", "10000k", "peakrate", "200mbit", "mtu", "2000",
               "conform-exceed", "drop/pipe"], "does not support peakrate"),
             (["rate", "100mbit", "burst", "10000k", "overhead", "20",
               "conform-exceed", "drop/pipe"], "does not support overhead")]
    for args, why in cases:
        p = tc("actions", "add", "action", "police", *args, "index", "201", "skip_sw",
               ok=False)
        expect(why in p.stderr, f"{' '.join(args)}: message {p.stderr.strip()!r}")
        expect(not d.actions() and action("police", 201) is None, f"left behind: {d.table()}")


@test
def only_police_and_gact_offloaded_honestly(d, _):
    tc("actions", "add", "action", "gact", "drop", "index", "5", "skip_sw")
    tc("actions", "add", "action", "gact", "pass", "index", "6")
    tc("actions", "add", "action", "gact", "trap", "index", "7")
    expect(action("gact", 5)["in_hw_count"] == 1 and action("gact", 6)["in_hw_count"] == 1,
           "gact drop/pass not offloaded")
    expect(not action("gact", 7)["in_hw_count"], "gact trap counted in hardware")
    hw = d.actions()
    expect(len(hw) == 2 and "index 5 drop" in hw[0] and "index 6 pass" in hw[1], f"table {hw}")
    # Replacing pass by trap: the hardware entry goes, tc counts no copy.
    tc("actions", "replace", "action", "gact", "trap", "index", "6")
    expect(not action("gact", 6)["in_hw_count"] and len(d.actions()) == 1,
           f"stale entry after a refused replace: {d.actions()}")


@test
def unsupported_flower_key_refused(d, _):
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:", "flower",
           "skip_sw", "ip_tos", "0x10", "action", "drop", ok=False)
    expect("unsupported flower match key" in p.stderr, p.stderr)
    expect(not d.filters() and not filters(d.port), "filter left behind")


@test
def injected_offload_failure_leaves_nothing(d, _):
    d.fail_next()
    p = tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw", ok=False)
    expect("injected offload failure" in p.stderr, p.stderr)
    expect(action("police", 200) is None and not d.actions(), "left behind")
    d.fail_next()
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:", "flower",
           "skip_sw", "ip_proto", "udp", "action", "drop", ok=False)
    expect("injected offload failure" in p.stderr and not d.filters(), p.stderr)
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    expect(len(d.actions()) == 1, "the knob failed more than the next offload")


@test
def actions_reoffloaded_when_devices_come_and_go(d, _):
    d.delete()
    try:
        tc("actions", "add", "action", "police", *POLICE, "index", "300")
        expect(not action("police", 300)["in_hw_count"], "offloaded with no device")
    finally:
        d.__init__(d.id)
    expect(action("police", 300)["in_hw_count"] == 1, "not offloaded to the new device")
    expect(len(d.actions()) == 1, f"new device table {d.table()}")
    d.reload()
    expect(action("police", 300)["in_hw_count"] == 1 and len(d.actions()) == 1,
           "not offloaded again after devlink reload")
    d.delete()
    try:
        a = action("police", 300)
        expect(a and not a["in_hw_count"], "in_hw_count did not go down")
    finally:
        d.__init__(d.id)


@test
def skip_sw_action_deleted_with_its_last_hardware(d, _):
    tc("actions", "add", "action", "gact", "drop", "index", "9", "skip_sw")
    with open("/tmp/tc-monitor.txt", "w") as log:
        # line-buffered: tc's stdio buffer dies with it otherwise
        mon = subprocess.Popen(["stdbuf", "-oL", "tc", "monitor"], stdout=log,
                               stderr=subprocess.STDOUT)
    time.sleep(2)  # tc monitor has subscribed
    d.delete()
    try:
        time.sleep(2)
        mon.terminate()
        mon.wait(timeout=5)
        with open("/tmp/tc-monitor.txt") as log:
            seen = log.read()
        expect(action("gact", 9) is None, "skip_sw action survived its last hardware copy")
        expect(re.search(r"(?i)deleted action.*\n(?:.*\n){0,3}.*index 9", seen),
               f"tc monitor did not see the deletion:\n{seen}")
    finally:
        d.__init__(d.id)


@test
def ovs_meter_shared_by_two_flows(d, _):
    idx = str(0x10000001)
    tc("actions", "add", "action", "police", "pkts_rate", "1000", "pkts_burst", "100",
       "conform-exceed", "drop/pipe", "index", idx, "skip_sw")
    for proto in ("tcp", "udp"):
        tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:", "flower",
           "skip_sw", "ip_proto", proto, "action", "police", "index", idx)
    hw = d.actions()
    expect(len(hw) == 1 and f"index {idx} rate_pkt_ps 1000 burst_pkt 100" in hw[0]
           and "users 2" in hw[0], f"meter: {hw}")
    tc("filter", "del", "dev", d.port, "ingress")
    tc("actions", "del", "action", "police", "index", idx)
    expect(not d.table(), f"hardware table not empty: {d.table()}")


class TcSession:
    """One long-lived "tc -batch -": commands in, their output back.

    Spawning tc costs more than the kernel work under TCG with KASAN, so
    the churn test talks to one tc process. After the commands, a get of a
    software-only marker action ends the output to read.
    """
    MARK = 4242

    def __init__(self):
        tc("actions", "add", "action", "gact", "pass", "index", str(self.MARK), "skip_hw")
        self.p = subprocess.Popen(["stdbuf", "-oL", "tc", "-s", "-d", "-force", "-batch", "-"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)

    def run(self, cmds):
        self.p.stdin.write("\n".join(cmds + [f"actions get action gact index {self.MARK}"])
                           + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise AssertionError("tc -batch exited:\n" + "".join(out[-5:]))
            out.append(line)
            if re.search(rf"\bindex {self.MARK} ref", line):
                return "".join(out)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)
        tc("actions", "del", "action", "gact", "index", str(self.MARK))


def parse_police_list(out):
    """{index: parsed action} from tc's listing of police actions."""
    acts = {}
    for text in re.split(r"\n\s*(?=action order )", out):
        m = re.search(r"police (0x[0-9a-f]+)", text)  # police shows its index in hex
        if m:
            acts[int(m.group(1), 16)] = parse_action(text)
    return acts


@test
def churn_keeps_hardware_and_tc_in_step(d, _):
    """Add/replace/delete actions and filters; a device comes and goes."""
    d2 = None
    start = time.monotonic()
    s = TcSession()
    try:
        for i in range(CHURN):
            idx = 1 + i % 7
            rate = f"{1 + i % 50}mbit"
            cmds = [f"actions add action police rate {rate} burst 64k"
                    f" conform-exceed drop/pipe index {idx} skip_sw",
                    f"actions replace action police rate {rate} burst 128k"
                    f" conform-exceed drop/ok index {idx} skip_sw",
                    f"filter add dev {d.port} protocol ip parent ffff: prio {idx} flower"
                    f" skip_sw ip_proto tcp action police index {idx}",
                    f"filter del dev {d.port} parent ffff: prio {idx}"]
            if i % 3 == 2:
                cmds.append(f"actions del action police index {idx}")
            cmds.append("actions list action police")
            acts = parse_police_list(s.run(cmds))
            for dev in (d, d2) if d2 else (d,):
                hw_set = {int(l.split()[3]) for l in dev.actions()}
                expect(hw_set == set(acts), f"cycle {i}: netdevsim{dev.id} holds"
                       f" {sorted(hw_set)}, tc has {sorted(acts)}")
                expect(not dev.filters(), f"cycle {i}: filters left in hardware {dev.filters()}")
            for a, parsed in acts.items():
                n = parsed["in_hw_count"]
                expect(n == (2 if d2 else 1), f"cycle {i}: action {a} in_hw_count {n}")
            if i % 100 == 50:
                d2 = Nsim(d.id + 1)
            elif i % 100 == 99 and d2:
                d2.delete()
                d2 = None
    finally:
        s.close()
        if d2:
            d2.delete()
    print(f"# {CHURN} cycles in {time.monotonic() - start:.0f} s")


def main():
    for path in (BUS, DBG):
        if not os.path.exists(path):
            print("1..0 # SKIP no netdevsim (CONFIG_NETDEVSIM) or debugfs")
            return 0
    print(f"1..{len(TESTS)}")
    d = Nsim(1)
    for n, fn in enumerate(TESTS, start=1):
        name = fn.__name__
        try:
            fn(d, None)
            print(f"ok {n} {name}")
        except Skip as e:
            print(f"ok {n} {name} # SKIP {e}")
        except Exception as e:  # noqa: BLE001 - any failure fails the test
            print(f"not ok {n} {name}")
            for line in (str(e) or traceback.format_exc()).splitlines():
                print(f"# {line}")
        sys.stdout.flush()
        try:
            flush(d)
        except Exception as e:  # noqa: BLE001
            print(f"# cleanup after {name}: {e}")
    d.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
