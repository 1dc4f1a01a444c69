#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/tc: tc actions offloaded on their own to netdevsim, and the
flower/matchall filters that use them (seed 010), driven with the host's
Debian tc. Prints TAP; each test names one behaviour.

What "the hardware" holds is read from netdevsim's debugfs table
(tc/offloaded), what tc believes from tc's own output; the tests compare
the two.
"""
import collections
import json
import os
import random
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from cases import run_case  # noqa: E402

BUS = "/sys/bus/netdevsim"
DBG = "/sys/kernel/debug/netdevsim"
CHURN = int(os.environ.get("TC_CHURN_CYCLES", "600"))


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
        self.setup_port()

    def setup_port(self):
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

    def keep_refused(self, on=True):
        """Keep an action's previous version when a replace of it is
        refused, as mlx5 and nfp do (debugfs keep_refused)."""
        with open(f"{self.dbg}/keep_refused", "w") as f:
            f.write("1" if on else "0")

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


# A deleted flower or matchall filter lets go of its actions later, from
# RCU work (__fl_put(), mall_destroy() -> tcf_queue_work()): until then tc
# refuses to delete such an action (-EPERM while bound) and a flush stops
# at the first one: it fails with EPERM when that is the first action, and
# succeeds with "Unable to flush all TC actions" when it deleted some.
RELEASE_TIMEOUT = 10


def released(kind, index):
    """Wait until no filter binds the action (or it is gone); fail with
    what tc shows when one still does after RELEASE_TIMEOUT seconds."""
    deadline = time.monotonic() + RELEASE_TIMEOUT
    while True:
        a = action(kind, index)
        if a is None or a["bind"] == 0:
            return
        if time.monotonic() > deadline:
            expect(False, f"the filters never let go of {kind} {index}:\n{a['text']}")
        time.sleep(0.05)


def flush(*devs):
    """Best effort between cases: the devices' filters, then every police
    and gact action, flushed again while the filters' release is on its
    way (RELEASE_TIMEOUT)."""
    for d in devs:
        tc("filter", "del", "dev", d.port, "ingress", ok=None)
    deadline = time.monotonic() + RELEASE_TIMEOUT
    for kind in ("police", "gact"):
        tries = 0
        while True:
            tries += 1
            p = tc("actions", "flush", "action", kind, ok=None)
            if not (p.returncode or "Unable to flush" in p.stderr) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if tries > 1:
            print(f"# flush: {tries} tries for the {kind} actions "
                  f"({p.stderr.strip() or 'flushed'})", flush=True)


def emptied(*devs):
    """After flush(): tc holds no police or gact action and the devices'
    tables are empty. A case that leaves either behind fails under its
    own name."""
    for kind in ("police", "gact"):
        out = tc("actions", "list", "action", kind).stdout
        m = re.search(r"total acts (\d+)", out)
        # tc prints nothing at all when it holds none
        expect(not out.strip() or (m and m.group(1) == "0"),
               f"tc still holds {kind} actions after the flush:\n{out}")
    for d in devs:
        expect(not d.table(), f"netdevsim{d.id} still holds after the flush: {d.table()}")


POLICE = ["rate", "100mbit", "burst", "10000k", "conform-exceed", "drop/pipe"]
# 100mbit is 12,500,000 bytes/s; 10000k of burst is 10,240,000 bytes.
POLICE_HW = "rate_bytes_ps 12500000 burst 10240000"

TESTS = []


def test(fn):
    TESTS.append((fn.__name__, fn))
    return fn


def core_test(fn):
    """A refusal the tc core makes before any driver is asked: it holds
    on a kernel without the series too, and its name says so."""
    TESTS.append((f"tc core: {fn.__name__}", fn))
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


@core_test
def police_with_tc_default_reclassify_is_refused(d, _):
    # The seed's exact command relies on exceed=reclassify (tc's default).
    # 6.1's act_police cannot describe reclassify for offload
    # (tcf_police_act_to_flow_act), so tcf_action_offload_add_ex() refuses
    # the skip_sw action before any driver is asked.
    p = tc("actions", "add", "action", "police", "rate", "100mbit", "burst", "10000k",
           "index", "200", "skip_sw", ok=False)
    expect("Failed to setup tc actions for offload" in p.stderr,
           f"not act_api's refusal: {p.stderr.strip()!r}")
    expect(action("police", 200) is None, "the action was left behind")


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
    """The refusals are the tc core's (tcf_action_init); what makes them
    mean "the flags differ" is that the filter with matching flags is
    then offloaded onto the same meter."""
    tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:",
           "flower", "ip_proto", "tcp", "action", "police", "index", "200", ok=False)
    expect("Mismatch between action and filter offload flags" in p.stderr, p.stderr)
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:",
           "flower", "skip_hw", "ip_proto", "tcp", "action", "police", "index", "200", ok=False)
    expect("Mismatch" in p.stderr, p.stderr)
    expect(not filters(d.port) and not d.filters(), "a filter was left behind")
    expect(action("police", 200)["ref"] == 1, "the action kept a reference")
    tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:",
       "flower", "skip_sw", "ip_proto", "tcp", "action", "police", "index", "200")
    f = filters(d.port, "ip")
    expect(len(f) == 1 and re.search(r"in_hw in_hw_count 1\b", f[0]),
           f"the skip_sw filter is not in hardware:\n{f}")
    expect(len(d.filters()) == 1 and "police:200:shared" in d.filters()[0]
           and "users 1" in d.actions()[0], f"hardware table: {d.table()}")


@core_test
def skip_sw_and_skip_hw_together_refused(d, _):
    # tcf_action_init_1(): tc_act_flags_valid() fails, EINVAL without an
    # extack message, before the action exists.
    p = tc("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw", "skip_hw",
           ok=False)
    expect("Invalid argument" in p.stderr, f"not EINVAL: {p.stderr.strip()!r}")
    expect(action("police", 200) is None, "the action was left behind")


@test
def skip_sw_without_capable_device_refused(d, _):
    """Refused while no netdevsim exists (the tc core: in_hw_count 0);
    the same command is accepted and held by netdevsim once it is back,
    so the refusal was about the missing device."""
    add = ("actions", "add", "action", "police", *POLICE, "index", "200", "skip_sw")
    d.delete()
    try:
        p = tc(*add, ok=False)
        expect(action("police", 200) is None, f"action left behind ({p.stderr.strip()})")
    finally:
        d.__init__(d.id)
    tc(*add)
    a = action("police", 200)
    expect(a["in_hw_count"] == 1, f"with netdevsim back: in_hw_count {a['in_hw_count']}, want 1")
    hw = d.actions()
    expect(len(hw) == 1 and f"action police index 200 {POLICE_HW}" in hw[0],
           f"hardware table: {hw}")


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
    # ICMP type/code (FLOW_DISSECTOR_KEY_ICMP): not in NSIM_TC_FLOWER_KEYS.
    p = tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:", "flower",
           "skip_sw", "ip_proto", "icmp", "type", "8", "action", "drop", ok=False)
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


def wait_for(path, pattern, timeout=60):
    """The text of path once pattern appears in it (a log being written)."""
    deadline = time.monotonic() + timeout
    while True:
        with open(path) as f:
            text = f.read()
        if re.search(pattern, text) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


class TcMonitor:
    """`tc monitor` writing to a file, seen subscribed before it is used."""

    def __init__(self, logname="/tmp/tc-monitor.txt"):
        self.logname = logname
        with open(logname, "w") as log:
            # line-buffered: tc's stdio buffer dies with it otherwise
            self.mon = subprocess.Popen(["stdbuf", "-oL", "tc", "monitor"], stdout=log,
                                        stderr=subprocess.STDOUT)
        try:
            # tc monitor has subscribed once it reports a software-only
            # probe; under TCG that can take seconds, and what it misses
            # is lost.
            tc("actions", "add", "action", "gact", "pass", "index", "4243", "skip_hw")
            for _ in range(120):
                seen = wait_for(logname, r"index 4243", timeout=0.5)
                if "index 4243" in seen:
                    break
                tc("actions", "replace", "action", "gact", "pass", "index", "4243", "skip_hw")
            expect("index 4243" in seen, f"tc monitor never started:\n{seen}")
        except BaseException:
            self.close()
            raise

    def deleted(self, kind_index, timeout=60):
        """Whether tc monitor reported the deletion of an action; kind_index
        is how tc prints it ("index 9" for gact, "police 0x7")."""
        pattern = rf"(?i)deleted action.*\n(?:.*\n){{0,3}}.*{kind_index}\b"
        seen = wait_for(self.logname, pattern, timeout=timeout)
        return re.search(pattern, seen), seen

    def close(self):
        self.mon.terminate()
        self.mon.wait(timeout=30)


@test
def skip_sw_action_deleted_with_its_last_hardware(d, _):
    tc("actions", "add", "action", "gact", "drop", "index", "9", "skip_sw")
    mon = TcMonitor()
    try:
        d.delete()
        try:
            seen, text = mon.deleted("index 9")
            expect(action("gact", 9) is None, "skip_sw action survived its last hardware copy")
            expect(seen, f"tc monitor did not see the deletion:\n{text}")
        finally:
            d.__init__(d.id)
    finally:
        mon.close()


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
    released("police", idx)
    tc("actions", "del", "action", "police", "index", idx)
    expect(not d.table(), f"hardware table not empty: {d.table()}")


# --- churn -----------------------------------------------------------------
# A model of what must exist after every batch of commands, compared with
# the hardware's truth (netdevsim's debugfs table) and with tc's own view
# (tc -j actions list / filter show), field by field.

PROTO_ID = {"ip": 0x0800, "ipv6": 0x86DD, "all": 0x0003}  # ETH_P_*
IP_PROTO = {"tcp": 6, "udp": 17}
FLAGS = ("skip_sw", "", "skip_hw")  # an action's flags; its filters' must match


def json_pairs(pairs):
    """A JSON object that keeps repeated keys: police prints its exceed
    and its conform verdict both as "control_action" (m_police.c); the
    second is stored as "control_action+"."""
    obj = {}
    for k, v in pairs:
        while k in obj:
            k += "+"
        obj[k] = v
    return obj


def is_dump(cmd):
    return cmd.split()[1] in ("list", "show")


class TcBatch:
    """One long-lived "tc -j -batch -", without -force: tc stops at the
    first command that fails and names its line ("Command failed -:N").

    Spawning tc costs more than the kernel work under TCG with KASAN, so
    the churn test talks to one tc process. Each list or show prints one
    JSON document on one line; any other output (an error, a warning)
    fails the test.
    """
    TIMEOUT = 300

    def __init__(self):
        self.p = subprocess.Popen(["tc", "-j", "-batch", "-"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.sent = []
        self.buf = b""
        self.commands = 0

    def _line(self):
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.p.stdout], [], [], self.TIMEOUT)
            if not ready:
                raise AssertionError(f"tc -batch answered nothing in {self.TIMEOUT} s after:"
                                     f"\n  tc {self.sent[-1]}")
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                line, self.buf = self.buf, b""
                return line.decode(errors="replace") or None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def run(self, cmds):
        """Run the commands; return the JSON documents of the dumps."""
        if not cmds:
            return []  # a blank line would still count in tc's line numbers
        self.sent += cmds
        self.commands += len(cmds)
        try:
            self.p.stdin.write(("\n".join(cmds) + "\n").encode())
            self.p.stdin.flush()
        except BrokenPipeError:
            pass  # tc exited; what it printed says why
        docs, said = [], []
        while len(docs) < sum(map(is_dump, cmds)):
            line = self._line()
            if line is None:
                self._died(said)
            if line.startswith("["):
                docs.append(json.loads(line, object_pairs_hook=json_pairs))
            elif line.strip():
                said.append(line.strip())
        if said:
            raise AssertionError("tc printed: " + " | ".join(said) + "\nfor:\n  tc "
                                 + "\n  tc ".join(cmds))
        return docs

    def _died(self, said):
        self.p.wait(timeout=30)
        failed = [int(m.group(1)) for m in
                  (re.match(r"Command failed \S+:(\d+)", s) for s in said) if m]
        what = f"tc {self.sent[failed[0] - 1]}" if failed else "tc -batch"
        raise AssertionError(f"`{what}` failed (exit {self.p.returncode}): "
                             + " | ".join(s for s in said if not s.startswith("Command failed")))

    def close(self):
        self.p.stdin.close()
        rest = (self.buf + self.p.stdout.read()).decode(errors="replace").strip()
        rc = self.p.wait(timeout=30)
        expect(rc == 0 and not rest, f"tc -batch ended with {rc}: {rest}")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


class ChurnModel:
    """What must exist: actions by kind and index, filters by priority
    (one filter per priority, on the first device's port)."""

    def __init__(self):
        self.police = {}   # index: {flags, meter (unit, rate, burst), conform}
        self.gact = {}     # index: {flags, verdict}
        # prio: {kind, proto, ip_proto, flags, police, gact, gact_hw}
        self.filters = {}
        self.devices = 1

    def users(self, kind, index):
        return sum(1 for f in self.filters.values() if f[kind] == index)

    # What netdevsim must hold, in the fields its table shows.
    def hw_actions(self, first):
        want = {}
        for idx, a in self.police.items():
            if a["flags"] != "skip_hw":
                unit, rate, burst = a["meter"]
                want[("police", idx)] = {
                    "meter": f"rate_{'bytes' if unit == 'bytes' else 'pkt'}_ps {rate} "
                             f"burst{'' if unit == 'bytes' else '_pkt'} {burst}",
                    "conform": a["conform"], "exceed": "drop",
                    "users": self.users("police", idx) if first else 0, "stale": False}
        for idx, a in self.gact.items():
            if a["flags"] != "skip_hw":
                # netdevsim counts the users of meters only
                want[("gact", idx)] = {"verdict": a["verdict"], "users": 0, "stale": False}
        return want

    def hw_filters(self, port):
        want = {}
        for prio, f in self.filters.items():
            if f["flags"] == "skip_hw":
                continue
            acts = [f"police:{f['police']}:shared"]
            if f["gact"] is not None:
                acts.append(f["gact_hw"])
            want[prio] = {"port": port, "kind": f["kind"],
                          "protocol": f"0x{PROTO_ID[f['proto']]:04x}",
                          "ip_proto": IP_PROTO.get(f["ip_proto"], 0), "actions": " ".join(acts)}
        return want

    # What tc must report.
    def tc_actions(self, kind):
        want = {}
        for idx, a in getattr(self, kind).items():
            users = self.users(kind, idx)
            hw = a["flags"] != "skip_hw"
            w = {"ref": 1 + users, "bind": users,
                 "skip_sw": a["flags"] == "skip_sw", "skip_hw": not hw,
                 # iproute2 prints neither for skip_hw actions
                 "in_hw": hw, "not_in_hw": False,
                 "in_hw_count": self.devices if hw else None}
            if kind == "police":
                w.update(exceed="drop", conform=a["conform"])
            else:
                w.update(verdict=a["verdict"])
            want[idx] = w
        return want

    def tc_filters(self):
        want = {}
        for prio, f in self.filters.items():
            in_hw = f["flags"] != "skip_hw"
            acts = [f"police {f['police']}"] + ([f"gact {f['gact']}"] if f["gact"] else [])
            want[prio] = {"kind": f["kind"], "protocol": f["proto"], "handle": 1,
                          "skip_sw": f["flags"] == "skip_sw", "skip_hw": not in_hw,
                          "in_hw": in_hw, "not_in_hw": not in_hw,
                          # iproute2 6.1 prints in_hw_count for flower only
                          "in_hw_count": 1 if in_hw and f["kind"] == "flower" else None,
                          "ip_proto": f["ip_proto"], "actions": " ".join(acts)}
        return want


HW_ACTION = re.compile(r"action (police|gact) index (\d+) (.*) users (\d+)( stale)? packets ")
HW_FILTER = re.compile(r"filter \d+ port (\d+) (\w+) prio (\d+) protocol (0x[0-9a-f]+)"
                       r" ip_proto (\d+) actions (.*) packets ")
HW_METER = re.compile(r"(rate_\w+ \d+ burst\w* \d+) mtu \d+ conform (\w+) exceed (\w+)$")


def hw_view(dev):
    """netdevsim's table, in the fields the model predicts."""
    acts, filts, odd = {}, {}, []
    for line in dev.table():
        m, f = HW_ACTION.match(line), HW_FILTER.match(line)
        if m:
            kind, idx, what, users, stale = m.groups()
            fields = {"users": int(users), "stale": bool(stale)}
            if kind == "police":
                meter = HW_METER.match(what)
                if not meter:
                    odd.append(line)
                    continue
                fields.update(meter=meter.group(1), conform=meter.group(2),
                              exceed=meter.group(3))
            else:
                fields.update(verdict=what)
            key = (kind, int(idx))
            if key in acts:
                odd.append(f"second entry {line}")
            acts[key] = fields
        elif f:
            port, kind, prio, proto, ip_proto, actions = f.groups()
            if int(prio) in filts:
                odd.append(f"second filter at prio {prio}: {line}")
            filts[int(prio)] = {"port": int(port), "kind": kind, "protocol": proto,
                                "ip_proto": int(ip_proto), "actions": actions}
        else:
            odd.append(line)
    return acts, filts, odd


def tc_action_view(doc):
    """tc -j actions list: {index: fields}."""
    view = {}
    for part in doc:
        for a in part.get("actions", []):
            ctl = lambda k: a.get(k, {}).get("type")  # noqa: E731
            fields = {"ref": a.get("ref"), "bind": a.get("bind"),
                      "skip_sw": a.get("skip_sw", False), "skip_hw": a.get("skip_hw", False),
                      "in_hw": a.get("in_hw", False), "not_in_hw": a.get("not_in_hw", False),
                      "in_hw_count": a.get("in_hw_count")}
            if a.get("kind") == "police":
                # the kernel leaves out a conform verdict of TC_ACT_OK (0),
                # tc then prints none: that is "pass"
                fields.update(exceed=ctl("control_action"),
                              conform=ctl("control_action+") or "pass")
            else:
                fields.update(verdict=ctl("control_action"))
            view[a.get("index")] = fields
    return view


def tc_filter_view(doc):
    """tc -j filter show: {prio: fields} of the filters (not the chain headers)."""
    view = {}
    for f in doc:
        o = f.get("options")
        if not o or "handle" not in o:
            continue
        acts = " ".join(f"{a.get('kind')} {a.get('index')}" for a in o.get("actions", []))
        view[f.get("pref")] = {
            "kind": f.get("kind"), "protocol": f.get("protocol"), "handle": o["handle"],
            "skip_sw": o.get("skip_sw", False), "skip_hw": o.get("skip_hw", False),
            "in_hw": o.get("in_hw", False), "not_in_hw": o.get("not_in_hw", False),
            "in_hw_count": o.get("in_hw_count"),
            "ip_proto": o.get("keys", {}).get("ip_proto"), "actions": acts}
    return view


Diff = collections.namedtuple("Diff", "where key field have want")


def differences(where, want, have):
    """Every way have differs from want, first key first."""
    out = []
    for key in sorted(set(want) | set(have), key=str):
        if key not in have or key not in want:
            out.append(Diff(where, key, None, have.get(key), want.get(key)))
            continue
        for field in want[key]:
            if want[key][field] != have[key].get(field):
                out.append(Diff(where, key, field, have[key].get(field), want[key][field]))
    return out


def describe(diff):
    where, key, field, have, want = diff
    if field:
        return f"{where}: {key} {field} {have!r}, want {want!r}"
    if have is None:
        return f"{where}: {key} missing (want {want})"
    return f"{where}: {key} should not exist ({have})"


DUMPS = ["actions list action police", "actions list action gact"]


class Churn:
    """Random but reproducible batches of tc commands that must all
    succeed; after each batch both truths are compared with the model."""
    POLICE = range(1, 13)
    GACT = range(1, 5)
    PRIOS = range(1, 11)
    OPS_PER_BATCH = 5

    def __init__(self, d, seed):
        self.d, self.d2 = d, None
        self.rng = random.Random(seed)
        self.m = ChurnModel()
        self.tc = TcBatch()
        self.rereads = 0
        self.unbound = set()   # actions a filter let go of in this batch
        self.lagging = set()   # of those, the ones tc still counted as bound
        # netdevsim's table names the port by its devlink port index
        ports = json.loads(run("devlink", "-j", "port", "show").stdout)["port"]
        self.port_index = next(int(name.rsplit("/", 1)[1]) for name, p in ports.items()
                               if p.get("netdev") == d.port)

    # -- commands -------------------------------------------------------
    def meter(self):
        """Police parameters whose burst survives tc's conversion to time
        and the kernel's back to bytes exactly (a whole number of 64-ns
        ticks: burst = 1 KiB * k per Mbit/s, 64 packets * j per kpps)."""
        # tc and netdevsim both show TC_ACT_OK as "pass"; "ok" is tc's synonym
        conform = self.rng.choice(("pipe", "pass"))
        if self.rng.random() < 0.75:
            n = self.rng.choice((1, 10, 100, 250, 1000, 2500, 10000))
            burst = 1024 * self.rng.randint(1, 64) * n
            args, meter = f"rate {n}mbit burst {burst}", ("bytes", n * 125000, burst)
        else:
            rate = 1000 * self.rng.choice((1, 2, 4, 5, 8, 10, 25, 100, 1000))
            burst = 64 * self.rng.randint(1, 16)
            args, meter = f"pkts_rate {rate} pkts_burst {burst}", ("pkts", rate, burst)
        return f"{args} conform-exceed drop/{conform.replace('pass', 'ok')}", meter, conform

    def op_add_police(self, busy):
        free = [i for i in self.POLICE if i not in self.m.police and ("police", i) not in busy]
        if not free:
            return None
        idx = self.rng.choice(free)
        flags = self.rng.choices(FLAGS, weights=(6, 3, 1))[0]
        args, meter, conform = self.meter()
        self.m.police[idx] = {"flags": flags, "meter": meter, "conform": conform}
        busy.add(("police", idx))
        return f"actions add action police {args} index {idx} {flags}".rstrip()

    def op_replace_police(self, busy):
        """Also of meters that filters use: the OVS case (a meter changed
        while flows use it)."""
        cand = [i for i in self.m.police if ("police", i) not in busy]
        if not cand:
            return None
        idx = self.rng.choice(cand)
        a = self.m.police[idx]
        args, a["meter"], a["conform"] = self.meter()
        busy.add(("police", idx))
        return f"actions replace action police {args} index {idx} {a['flags']}".rstrip()

    def op_del_police(self, busy):
        # Not one a filter let go of in this batch or that tc still counted
        # as bound at the last check: tc releases a deleted filter's
        # actions after an RCU grace period, and refuses to delete a bound
        # action.
        cand = [i for i in self.m.police if ("police", i) not in busy | self.lagging
                and not self.m.users("police", i)]
        if not cand:
            return None
        idx = self.rng.choice(cand)
        del self.m.police[idx]
        busy.add(("police", idx))
        return f"actions del action police index {idx}"

    def op_add_gact(self, busy):
        free = [i for i in self.GACT if i not in self.m.gact and ("gact", i) not in busy]
        if not free:
            return None
        idx = self.rng.choice(free)
        flags = self.rng.choices(FLAGS, weights=(6, 3, 1))[0]
        verdict = self.rng.choice(("drop", "pass"))
        self.m.gact[idx] = {"flags": flags, "verdict": verdict}
        busy.add(("gact", idx))
        return f"actions add action gact {verdict} index {idx} {flags}".rstrip()

    def op_replace_gact(self, busy):
        cand = [i for i in self.m.gact if ("gact", i) not in busy]
        if not cand:
            return None
        idx = self.rng.choice(cand)
        a = self.m.gact[idx]
        a["verdict"] = "pass" if a["verdict"] == "drop" else "drop"
        busy.add(("gact", idx))
        return f"actions replace action gact {a['verdict']} index {idx} {a['flags']}".rstrip()

    def op_del_gact(self, busy):
        cand = [i for i in self.m.gact
                if ("gact", i) not in busy | self.lagging and not self.m.users("gact", i)]
        if not cand:
            return None
        idx = self.rng.choice(cand)
        del self.m.gact[idx]
        busy.add(("gact", idx))
        return f"actions del action gact index {idx}"

    def filter_actions(self, flags, busy):
        """A police action and maybe a gact with the filter's flags."""
        police = [i for i in self.m.police if self.m.police[i]["flags"] == flags]
        gact = [i for i in self.m.gact if self.m.gact[i]["flags"] == flags]
        idx = self.rng.choice(police)
        g = self.rng.choice(gact) if gact and self.rng.random() < 0.3 else None
        busy.add(("police", idx))
        text = f"action police index {idx}"
        if g is not None:
            busy.add(("gact", g))
            text += f" action gact index {g}"
        return idx, g, text

    def gact_hw(self, g):
        """The verdict netdevsim copies into a filter entry: only police is
        shared with the standalone action (a replaced meter applies to its
        filters); a gact is copied when the filter is offloaded, and tc
        offers filters nothing when a bound action is replaced (as with
        nfp and mlx5)."""
        return None if g is None else self.m.gact[g]["verdict"]

    def op_add_filter(self, busy):
        free = [p for p in self.PRIOS if p not in self.m.filters and ("prio", p) not in busy]
        if not free or not self.m.police:
            return None
        prio = self.rng.choice(free)
        flags = self.m.police[self.rng.choice(list(self.m.police))]["flags"]
        idx, g, acts = self.filter_actions(flags, busy)
        busy.add(("prio", prio))
        if self.rng.random() < 0.7:
            proto, ipp = self.rng.choice(("ip", "ipv6")), self.rng.choice(("tcp", "udp"))
            kind, match = "flower", f"ip_proto {ipp} "
        else:
            proto, ipp, kind, match = "all", None, "matchall", ""
        self.m.filters[prio] = {"kind": kind, "proto": proto, "ip_proto": ipp, "flags": flags,
                                "police": idx, "gact": g, "gact_hw": self.gact_hw(g)}
        return (f"filter add dev {self.d.port} parent ffff: protocol {proto} prio {prio}"
                f" handle 1 {kind} {flags + ' ' if flags else ''}{match}{acts}")

    def op_del_filter(self, busy):
        cand = [p for p in self.m.filters if ("prio", p) not in busy]
        if not cand:
            return None
        prio = self.rng.choice(cand)
        f = self.m.filters.pop(prio)
        busy.update({("prio", prio), ("police", f["police"]), ("gact", f["gact"])})
        self.unbound.update({("police", f["police"]), ("gact", f["gact"])})
        return f"filter del dev {self.d.port} parent ffff: prio {prio}"

    def op_replace_filter(self, busy):
        cand = [p for p, f in self.m.filters.items()
                if f["kind"] == "flower" and ("prio", p) not in busy]
        if not cand:
            return None
        prio = self.rng.choice(cand)
        f = self.m.filters[prio]
        busy.update({("prio", prio), ("police", f["police"]), ("gact", f["gact"])})
        self.unbound.update({("police", f["police"]), ("gact", f["gact"])})
        f["police"], f["gact"], acts = self.filter_actions(f["flags"], busy)
        f["gact_hw"] = self.gact_hw(f["gact"])
        f["ip_proto"] = self.rng.choice(("tcp", "udp"))
        flags = f["flags"] + " " if f["flags"] else ""
        return (f"filter replace dev {self.d.port} parent ffff: protocol {f['proto']}"
                f" prio {prio} handle 1 flower {flags}ip_proto {f['ip_proto']} {acts}")

    OPS = (("op_add_police", 2), ("op_replace_police", 3), ("op_del_police", 1.5),
           ("op_add_gact", 0.5), ("op_replace_gact", 0.5), ("op_del_gact", 0.5),
           ("op_add_filter", 3), ("op_del_filter", 2), ("op_replace_filter", 2))

    def batch(self):
        busy, cmds = set(), []
        self.unbound = set()
        names, weights = zip(*self.OPS)
        for _ in range(4 * self.OPS_PER_BATCH):
            if len(cmds) == self.OPS_PER_BATCH:
                break
            cmd = getattr(self, self.rng.choices(names, weights)[0])(busy)
            if cmd:
                cmds.append(cmd)
        # Filter deletions first (nothing else in the batch depends on
        # them): tc lets go of their actions after an RCU grace period,
        # which then passes while the rest of the batch runs.
        return sorted(cmds, key=lambda c: not c.startswith("filter del "))

    # -- checks ---------------------------------------------------------
    def devices(self):
        return [self.d] + ([self.d2] if self.d2 else [])

    def compare(self, docs):
        diffs = []
        for n, dev in enumerate(self.devices()):
            acts, filts, odd = hw_view(dev)
            where = f"netdevsim{dev.id} table"
            diffs += [Diff(where, "unparsed line", None, line, None) for line in odd]
            diffs += differences(where, self.m.hw_actions(n == 0), acts)
            diffs += differences(where, self.m.hw_filters(self.port_index) if n == 0 else {},
                                 filts)
        police, gact, filters = docs
        diffs += differences(f"tc filter show dev {self.d.port} ingress", self.m.tc_filters(),
                             tc_filter_view(filters))
        return diffs + self.action_differences(police, gact)

    def action_differences(self, police, gact):
        return (differences("tc actions list action police", self.m.tc_actions("police"),
                            tc_action_view(police))
                + differences("tc actions list action gact", self.m.tc_actions("gact"),
                              tc_action_view(gact)))

    def restart_tc(self):
        """A new tc: iproute2 caches interface names and indexes, and a
        reloaded port has a new index (perhaps under an old name)."""
        self.tc.close()
        commands = self.tc.commands
        self.tc = TcBatch()
        self.tc.commands = commands

    def dumps(self):
        return DUMPS + [f"filter show dev {self.d.port} ingress"]

    def check(self, what, docs=None, lag_ok=frozenset()):
        """Compare. Only tc's ref and bind of an action may lag, above the
        model: tc lets go of a deleted filter's actions after an RCU grace
        period. For the actions a filter let go of in this batch (lag_ok)
        the lag is noted: they are not deleted, and the next check wants
        them exact. Other lags are re-read for up to 10 s."""
        diffs = self.compare(docs or self.tc.run(self.dumps()))
        deadline = time.monotonic() + 10
        while diffs:
            lag = [x for x in diffs if x.field in ("ref", "bind")
                   and isinstance(x.have, int) and x.have > x.want]
            late = {(x.where.split()[-1], x.key) for x in lag}
            if len(lag) < len(diffs) or time.monotonic() > deadline:
                more = f"\n(and {len(diffs) - 1} more differences)" if len(diffs) > 1 else ""
                raise AssertionError(f"after {what}:\n{describe(diffs[0])}{more}")
            if late <= lag_ok:
                self.lagging = late
                return
            self.rereads += 1
            time.sleep(0.02)
            diffs = self.action_differences(*self.tc.run(DUMPS))
        self.lagging = set()

    # -- devices --------------------------------------------------------
    EVENTS = 150  # cycles per round of device events

    def device_event(self, step):
        """netdevsim2 comes, is reloaded, the first device is reloaded
        (its port and filters go), netdevsim2 goes: one round per EVENTS
        cycles."""
        if step == self.EVENTS // 4:
            self.d2 = Nsim(self.d.id + 1)
            self.m.devices = 2
            return f"netdevsim{self.d2.id} created"
        if step == self.EVENTS // 2 and self.d2:
            self.d2.reload()
            return f"devlink reload of netdevsim{self.d2.id}"
        if step == 3 * self.EVENTS // 4 and self.d2:
            # The port and its filters go; skip_sw actions stay in d2.
            self.d.reload()
            self.d.setup_port()
            for f in self.m.filters.values():
                self.unbound.update({("police", f["police"]), ("gact", f["gact"])})
            self.m.filters.clear()
            return f"devlink reload of netdevsim{self.d.id} (its filters went with its port)"
        if step == self.EVENTS - 1 and self.d2:
            self.d2.delete()
            self.d2 = None
            self.m.devices = 1
            return "netdevsim2 deleted"
        return None

    def cleanup(self):
        cmds = [f"filter del dev {self.d.port} parent ffff: prio {p}" for p in self.m.filters]
        self.m.filters.clear()
        self.tc.run(cmds)
        # no lag allowed: the actions must be free before they are deleted
        self.check("deleting every filter")
        cmds = [f"actions del action police index {i}" for i in self.m.police]
        cmds += [f"actions del action gact index {i}" for i in self.m.gact]
        self.m.police.clear()
        self.m.gact.clear()
        self.check("deleting every action", self.tc.run(cmds + self.dumps()))
        for dev in self.devices():
            expect(not dev.table(), f"netdevsim{dev.id} table not empty: {dev.table()}")


@test
def churn_keeps_hardware_and_tc_in_step(d, _):
    """Add/replace/delete police and gact actions and the flower/matchall
    filters that use them, devices come, reload and go; after each batch
    netdevsim's table and tc's listings must be what the model says."""
    seed = int(os.environ.get("TC_CHURN_SEED", "10"))
    start = time.monotonic()
    c = Churn(d, seed)
    try:
        for i in range(CHURN):
            cmds = c.batch()
            try:
                docs = c.tc.run(cmds + c.dumps())
                c.check("tc " + "\n  tc ".join(cmds), docs[-3:], c.unbound)
                event = c.device_event(i % c.EVENTS)
                if event:
                    c.restart_tc()
                    c.check(event, lag_ok=c.unbound)
            except AssertionError as e:
                raise AssertionError(f"cycle {i} (seed {seed}): {e}") from None
        c.cleanup()
        c.tc.close()
    finally:
        c.tc.kill()
        if c.d2:
            c.d2.delete()
    print(f"# {CHURN} cycles, {c.tc.commands} tc commands in"
          f" {time.monotonic() - start:.0f} s; {c.rereads} re-reads waiting for"
          f" tc to release a deleted filter's actions")


def main():
    for path in (BUS, DBG):
        if not os.path.exists(path):
            print("1..0 # SKIP no netdevsim (CONFIG_NETDEVSIM) or debugfs")
            return 0
    print(f"1..{len(TESTS)}")
    d = Nsim(1)

    def case(fn):
        try:
            fn(d, None)
        finally:
            flush(d)
            emptied(d)
    for n, (name, fn) in enumerate(TESTS, start=1):
        run_case(n, name, case, fn)
    d.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
