#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/ovs: Open vSwitch 3.1 (Debian's openvswitch-switch) offloading
OpenFlow meters and the datapath flows that use them to netdevsim, with
other_config:hw-offload=true: the client seed 010's standalone action
offload was made for. Prints TAP; each test names one behaviour.

The hardware's truth is netdevsim's debugfs table (tc/offloaded); OVS's
view comes from ovs-ofctl/ovs-appctl, tc's from tc. Datapath flows are
installed the way OVS installs them, by traffic: frames sent out of a
netdevsim port are looped back to its ingress (prio qdisc + flower
mirred ingress redirect on egress, for the injected source address
only), so OVS receives them on the port and its handler threads put the
megaflow into the kernel datapath and into tc. Every test also fails on
a kernel report (WARNING, KASAN, BUG) that appears while it runs.
"""
import errno
import os
import random
import re
import socket
import subprocess
import sys
import time

BUS = "/sys/bus/netdevsim"
DBG = "/sys/kernel/debug/netdevsim"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "lib")]
import kmsg  # noqa: E402
from cases import lacks, run_case  # noqa: E402
from inject import frame  # noqa: E402
RUN = "/run/openvswitch"
DB = "/tmp/ovs"
ENV = dict(os.environ, OVS_RUNDIR=RUN, OVS_DBDIR=DB, OVS_LOGDIR=DB)
# OVS puts meter N's police action at index 0x10000000 + its datapath
# meter id (lib/netdev-offload-tc.c, METER_POLICE_IDS_BASE).
POLICE_BASE = 0x10000000
# make check runs 30 cycles (a device comes or goes every 6): a cycle
# costs 5-11 s under TCG on the debug kernel (ovs-ofctl, OVS's
# revalidator, tc). OVS_CHURN_CYCLES=500 runs 500 (every 100).
CHURN = int(os.environ.get("OVS_CHURN_CYCLES", "30"))
DEV_PERIOD = max(CHURN // 5, 2)
TESTS = []


def test(fn):
    TESTS.append((fn.__name__, fn))
    return fn


def run(*cmd, ok=True, timeout=120):
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)
    if ok and p.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return p


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def ofctl(*args, ok=True):
    return run("ovs-ofctl", "-O", "OpenFlow13", *args, ok=ok)


def show(*cmd):
    """A transcript line (TAP comments): the command and what it printed,
    for docs/tc.md to quote from a real run."""
    out = run(*cmd, ok=False).stdout if cmd[0] != "cat" else open(cmd[1]).read()
    print(f"# $ {' '.join(cmd)}")
    for line in out.rstrip("\n").splitlines():
        print(f"#   {line}")


def wait(fn, what, timeout=60):
    """fn() until it returns something true; its last value otherwise fails."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            what = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.3)


class Dev:
    """netdevsim device N with two ports, hw-tc-offload on, and the
    injected frames (source 10.0.0.1 on port 0, 10.0.0.3 on port 1)
    looped back from egress to ingress (loop(), once OVS has the ports)."""

    def __init__(self, n):
        self.n = n
        with open(f"{BUS}/new_device", "w") as f:
            f.write(f"{n} 2")
        d = f"{BUS}/devices/netdevsim{n}/net"
        wait(lambda: os.path.isdir(d) and len(os.listdir(d)) == 2, "netdevsim ports")
        self.ports = sorted(os.listdir(d), key=lambda p: int(open(f"{d}/{p}/phys_port_name").read()[1:]))
        self.dbg = f"{DBG}/netdevsim{n}/tc"
        for p in self.ports:
            run("ip", "link", "set", p, "up")
            run("ethtool", "-K", p, "hw-tc-offload", "on")

    def loop(self):
        """After OVS took the ports: it replaces their root qdiscs."""
        for i, p in enumerate(self.ports):
            run("tc", "qdisc", "replace", "dev", p, "root", "handle", "1:", "prio")
            run("tc", "filter", "add", "dev", p, "parent", "1:", "protocol", "ip", "flower",
                "src_ip", f"10.0.0.{1 + 2 * i}", "action", "mirred", "ingress", "redirect",
                "dev", p)

    def table(self):
        with open(f"{self.dbg}/offloaded") as f:
            return [l.strip() for l in f if l.strip()]

    def actions(self):
        return [l for l in self.table() if l.startswith("action ")]

    def filters(self):
        return [l for l in self.table() if l.startswith("filter ")]

    def set_stats(self, what):
        with open(f"{self.dbg}/hw_stats", "w") as f:
            f.write(what + "\n")

    def delete(self):
        with open(f"{BUS}/del_device", "w") as f:
            f.write(str(self.n))


def inject(port, proto, sport, dport, src=1):
    """One frame out of port, looped back to its ingress."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((port, 0x0800))  # skb->protocol ETH_P_IP, for the loop filter
        s.send(frame(proto, sport, dport, f"10.0.0.{src}"))


def hw_meter(d, index):
    for l in d.actions():
        if l.startswith(f"action police index {index} "):
            return l
    return None


def tc_police():
    """tc's police actions: {index: text} (tc actions list)."""
    out = run("tc", "-s", "-d", "actions", "list", "action", "police").stdout
    acts = {}
    for block in re.split(r"\n(?=\s*action order)", out):
        m = re.search(r"police (0x[0-9a-f]+|\d+) ", block)
        if m:
            acts[int(m.group(1), 0)] = block
    return acts


def field(text, name):
    m = re.search(rf"\b{name} (\d+)", text)
    return int(m.group(1)) if m else None


def binds_settled(d):
    """True once each of tc's police actions is bound by exactly the
    hardware filters that use it. OVS deletes a meter's police action
    right after the last filter using it, and a deleted filter lets go of
    its actions later, from RCU work (cls_flower's __fl_put() ->
    tcf_queue_work()): until then tc refuses the delete (-EPERM while
    bound) and OVS 3.1 forgets the action (del_meter_in_use_...). A test
    that deletes a meter no flow uses waits for this first; so does a tc
    flush, which stops at the first bound action."""
    fl = d.filters()
    return all(field(t, "bind") == sum(f"police:{i}:shared" in l for l in fl)
               for i, t in tc_police().items())


def unbound(idx):
    """tc's police action idx is gone or no filter binds it."""
    t = tc_police().get(idx)
    return t is None or field(t, "bind") == 0


def settle_binds(d, what):
    wait(lambda: binds_settled(d), lambda: f"{what}: tc's police binds to match the hardware "
         f"filters: tc {tc_police()}, hardware {d.table()}")


def meter_stats():
    """{meter: (packet_in_count, byte_in_count, band packet_count)}"""
    out = ofctl("meter-stats", "br0").stdout
    stats = {}
    for m in re.finditer(r"meter:(\d+) flow_count:\d+ packet_in_count:(\d+) byte_in_count:(\d+)"
                         r".*?\n0: packet_count:(\d+)", out, re.S):
        stats[int(m.group(1))] = tuple(int(x) for x in m.groups()[1:])
    return stats


def dp_flows():
    """Datapath flows OVS shows: list of (text, packets)."""
    out = run("ovs-appctl", "dpctl/dump-flows", "-m").stdout
    return [(l, int(re.search(r"packets:(\d+)", l).group(1)))
            for l in out.splitlines() if "packets:" in l]


def police_index_of(d, rate_field, value):
    """The index of the one hardware meter with this rate."""
    idx = [int(l.split()[3]) for l in d.actions() if f" {rate_field} {value} " in l]
    expect(len(idx) == 1, f"want one hardware meter with {rate_field} {value}: {d.table()}")
    return idx[0]


class Ovs:
    def start(self):
        os.makedirs(RUN, exist_ok=True)
        os.makedirs(DB, exist_ok=True)
        if not os.path.exists(f"{DB}/conf.db"):
            run("ovsdb-tool", "create", f"{DB}/conf.db",
                "/usr/share/openvswitch/vswitch.ovsschema")
            run("ovsdb-server", f"{DB}/conf.db", f"--remote=punix:{RUN}/db.sock",
                "--pidfile", "--detach", "--log-file")
            run("ovs-vsctl", "--no-wait", "init")
            # Flows stay until the tests delete them: under TCG a test
            # can take longer than the default 10 s idle time.
            run("ovs-vsctl", "--no-wait", "set", "Open_vSwitch", ".",
                "other_config:hw-offload=true", "other_config:max-idle=600000")
        run("ovs-vswitchd", "--pidfile", "--detach", "--log-file", timeout=300)

    def stop(self, cleanup=False):
        run("ovs-appctl", "-t", "ovs-vswitchd", "exit", *(["--cleanup"] if cleanup else []),
            timeout=300)
        wait(lambda: not os.path.exists(f"{RUN}/ovs-vswitchd.pid"), "ovs-vswitchd to exit")

    def bridge(self, d):
        run("ovs-vsctl", "add-br", "br0", "--", "add-port", "br0", d.ports[0],
            "--", "add-port", "br0", d.ports[1], timeout=300)
        self.rules(d)

    def rules(self, d):
        """Also after a restart: OpenFlow rules do not persist, the bridge
        (in the database) does."""
        # Only the tests' rules: no NORMAL flooding between the ports.
        ofctl("del-flows", "br0")
        ofctl("add-flow", "br0", "priority=0,actions=drop")
        d.loop()

    def running(self):
        return run("ovs-appctl", "-t", "ovs-vswitchd", "version", ok=False,
                   timeout=60).returncode == 0

    def restore(self, d):
        """The bridge and its rules, whatever a failed test left."""
        if not self.running():
            run("ovs-appctl", "-t", "ovs-vswitchd", "exit", ok=False, timeout=60)
            if os.path.exists(f"{RUN}/ovs-vswitchd.pid"):
                os.unlink(f"{RUN}/ovs-vswitchd.pid")  # a daemon that died
            self.start()
        run("ovs-vsctl", "--may-exist", "add-br", "br0", "--", "--may-exist", "add-port",
            "br0", d.ports[0], "--", "--may-exist", "add-port", "br0", d.ports[1], timeout=300)
        self.rules(d)

    def del_br(self):
        run("ovs-vsctl", "--if-exists", "del-br", "br0", timeout=300)


def log_size():
    """Where OVS's log ends now: ovs_refused_bound() reads only what comes after."""
    return os.path.getsize(f"{DB}/ovs-vswitchd.log")


def ovs_refused_bound(idx, what, since=0):
    """OVS's log says tc refused to delete police idx because filters still
    bind it: tc_del_policer_action() logs "Failed to delete police action
    (index: N), err=E", and tcf_idr_delete_index() answers a bound action
    with -EPERM, so E must be 1. Any other errno is another failure
    (ENOENT: already gone; EINVAL: a bad request), not the race explained."""
    pat = re.compile(rf"Failed to delete police action \(index: {idx}\), err=(\d+)")

    def errs():
        with open(f"{DB}/ovs-vswitchd.log") as f:
            f.seek(since)
            return [int(e) for e in pat.findall(f.read())]
    got = wait(errs, f"{what}: police {idx} left without OVS saying why", timeout=60)
    expect(set(got) == {errno.EPERM},
           f"{what}: OVS failed to delete police {idx} with err={got}, want err={errno.EPERM} "
           "(EPERM: tc refuses to delete an action filters bind)")


def police_left_in_step(d, idx, what, since):
    """After OVS deleted meter idx's flows, then its police action (del-br,
    exit --cleanup): tc lets go of a deleted filter's actions only after
    an RCU grace period (tcf_exts_destroy() from tcf_queue_work()), so the
    action's delete can lose that race: tc refuses it (-EPERM while
    bound), OVS logs "Failed to delete police action" and forgets it, and
    nothing of OVS's deletes it later (at start OVS cleans up its police
    range only once a port is offloaded). What tc keeps must be unbound
    and exactly what hardware holds; a tc flush then empties both. since:
    OVS's log size before del-br/exit (an earlier test may have logged the
    same index)."""
    wait(lambda: not d.table() or idx in tc_police(), lambda: f"after {what}: "
         f"hardware {d.table()}, tc {sorted(tc_police())}", timeout=60)
    tcv = tc_police()
    if idx in tcv:
        ovs_refused_bound(idx, f"after {what}", since)
        # The deleted filters' release (RCU work) may still be on its way.
        wait(lambda: unbound(idx),
             lambda: f"after {what}: tc to unbind police {idx}: {tc_police()}", timeout=60)
        tcv = tc_police()
        print(f"# after {what}: OVS's delete of police action {idx:#x} raced with tc's "
              "release: tc and hardware keep it until a tc flush", flush=True)
        expect(sorted(tcv) == [idx] and field(tcv[idx], "in_hw_count") == 1
               and field(tcv[idx], "bind") == 0,
               f"after {what}: tc keeps police {idx} unbound, in hardware once: {tcv}")
        expect([int(l.split()[3]) for l in d.actions()] == [idx] and not d.filters(),
               f"after {what}: hardware holds what tc holds ({idx}): {d.table()}")
        run("tc", "actions", "flush", "action", "police")
    expect(not d.table(), f"after {what}: {d.table()}")
    expect(idx not in tc_police(), f"after {what}: tc still holds the meter's police action")


def flows_using(d, index, users):
    """The meter's hardware entry once `users` hardware filters use it."""
    m = hw_meter(d, index)
    fl = [l for l in d.filters() if f"police:{index}:shared" in l]
    return m if m and f" users {users} " in m and len(fl) == users else None


def setup_two_flows(d):
    """Meter 1 (kbps) and two OpenFlow rules from port 0 using it, their
    datapath flows installed by a frame each."""
    ofctl("add-meter", "br0", "meter=1,kbps,burst,bands=type=drop,rate=1000,burst_size=100")
    idx = police_index_of(d, "rate_bytes_ps", 125000)
    for proto in ("tcp", "udp"):
        ofctl("add-flow", "br0", f"priority=10,in_port={d.ports[0]},{proto},"
              f"actions=meter:1,output:{d.ports[1]}")
    inject(d.ports[0], "tcp", 1000, 80)
    inject(d.ports[0], "udp", 1000, 53)
    wait(lambda: flows_using(d, idx, 2), f"two hardware flows using meter {idx}: {d.table()}")
    return idx


def metered(d):
    """Hardware filters that use a meter."""
    return [l for l in d.filters() if "police:" in l]


def clear(d):
    ofctl("del-flows", "br0")
    ofctl("add-flow", "br0", "priority=0,actions=drop")
    ofctl("del-meters", "br0", ok=False)
    # OVS keeps a megaflow whose rule went (its actions become drop) until
    # it idles out; delete them, and police actions OVS left behind
    # (del_meter_in_use_leaves_tc_and_hardware_in_step).
    run("ovs-appctl", "dpctl/del-flows", ok=False)
    settle_binds(d, "clean-up")
    run("tc", "actions", "flush", "action", "police", ok=False)
    wait(lambda: not d.table(), lambda: f"an empty hardware table: {d.table()}; OVS: "
         + run("ovs-appctl", "dpctl/dump-flows", ok=False).stdout
         + ofctl("dump-meters", "br0", ok=False).stdout)


# --- tests -------------------------------------------------------------------

@test
def kbps_meter_offloaded_as_shared_police(o, d):
    ofctl("add-meter", "br0", "meter=1,kbps,burst,bands=type=drop,rate=1000,burst_size=100")
    idx = police_index_of(d, "rate_bytes_ps", 125000)  # 1000 kbit/s
    expect(idx >= POLICE_BASE, f"index {idx:#x} below OVS's police base")
    a = tc_police().get(idx)
    expect(a and field(a, "in_hw_count") == 1,
           f"tc should show police {idx:#x} in_hw_count 1:\n{a}")
    hw = hw_meter(d, idx)
    # The burst hardware holds is the one tc holds (bytes).
    burst = re.search(r"burst (\d+)b", a)
    expect(burst and f" burst {burst.group(1)} " in hw and "conform pipe exceed drop" in hw
           and " users 0 " in hw, f"hardware {hw} vs tc:\n{a}")


@test
def pktps_meter_offloaded_as_packet_police(o, d):
    ofctl("add-meter", "br0", "meter=2,pktps,burst,bands=type=drop,rate=500,burst_size=50")
    idx = police_index_of(d, "rate_pkt_ps", 500)
    hw = hw_meter(d, idx)
    expect(" burst_pkt 50 " in hw, f"hardware {hw}")
    a = tc_police().get(idx)
    expect(a and "pkts_rate 500 pkts_burst 50" in a and field(a, "in_hw_count") == 1, a)


@test
def two_flows_share_one_hardware_meter(o, d):
    idx = setup_two_flows(d)
    fl = d.filters()
    expect(len(fl) == 2 and all(f"police:{idx}:shared redirect:1 " in l for l in fl),
           f"want two filters on port 0 metering with {idx} and forwarding to port 1: {fl}")
    expect(len(d.actions()) == 1, f"one meter in hardware: {d.actions()}")
    f = run("tc", "-s", "filter", "show", "dev", d.ports[0], "ingress").stdout
    expect(len(re.findall(r"in_hw in_hw_count 1\b", f)) == 2, f"tc: {f}")
    show("ovs-ofctl", "-O", "OpenFlow13", "dump-meters", "br0")
    show("ovs-ofctl", "-O", "OpenFlow13", "dump-flows", "br0")
    show("tc", "actions", "list", "action", "police")
    show("cat", f"{d.dbg}/offloaded")


@test
def mod_meter_changes_the_hardware_meter_in_place(o, d):
    idx = setup_two_flows(d)
    ids = sorted(l.split()[1] for l in d.filters())
    ofctl("mod-meter", "br0", "meter=1,kbps,burst,bands=type=drop,rate=2000,burst_size=200")
    hw = hw_meter(d, idx)
    expect(hw and " rate_bytes_ps 250000 " in hw and " users 2 " in hw and "stale" not in hw,
           f"after mod-meter want meter {idx} at 2000 kbit/s with its 2 users: {d.table()}")
    expect(sorted(l.split()[1] for l in d.filters()) == ids, f"filters changed: {d.filters()}")
    expect(len(d.actions()) == 1, f"{d.actions()}")


@test
def meter_stats_come_from_hardware_once(o, d):
    idx = setup_two_flows(d)
    before = meter_stats()[1]
    d.set_stats(f"action police {idx} 10 1000 3")
    first, second = meter_stats()[1], meter_stats()[1]
    want = (before[0] + 10, before[1] + 1000, before[2] + 3)
    print(f"# $ echo 'action police {idx} 10 1000 3' > {d.dbg}/hw_stats")
    show("ovs-ofctl", "-O", "OpenFlow13", "meter-stats", "br0")
    expect(first == want and second == want,
           f"meter-stats {before} -> {first}, {second}; want {want} both times")


@test
def flow_stats_come_from_hardware_once(o, d):
    setup_two_flows(d)
    tcp = [l for l in d.filters() if " ip_proto 6 " in l][0]
    fid = tcp.split()[1]

    def tcp_packets():
        return [p for t, p in dp_flows() if "proto=6" in t and "in_port(" in t][0]
    before = tcp_packets()
    d.set_stats(f"filter {fid} 7 700 0")
    first, second = tcp_packets(), tcp_packets()
    expect(first == before + 7 and second == before + 7,
           f"flow packets {before} -> {first}, {second}; want {before + 7} both times")


@test
def deleting_flows_then_meters_empties_hardware(o, d):
    idx = setup_two_flows(d)
    ofctl("del-flows", "br0")
    ofctl("add-flow", "br0", "priority=0,actions=drop")
    # OVS revalidates its megaflows: they now drop, without the meter.
    wait(lambda: not metered(d), lambda: f"flows to stop using the meter: {d.table()}")
    m = hw_meter(d, idx)
    expect(m and " users 0 " in m, f"meter without users: {d.table()}")
    settle_binds(d, "before del-meter")
    ofctl("del-meter", "br0", "meter=1")
    expect(not d.actions(), f"table: {d.table()}")
    expect(idx not in tc_police(), "tc still holds the meter's police action")
    run("ovs-appctl", "dpctl/del-flows")
    expect(not d.table(), f"after dpctl/del-flows: {d.table()}")


@test
def del_meter_in_use_leaves_tc_and_hardware_in_step(o, d):
    # OpenFlow deletes the rules that use the meter and OVS revalidates
    # their megaflows (they drop now). But OVS 3.1 deletes the meter's
    # police action first, while filters still hold it: tc refuses
    # (tcf_idr_delete_index(): -EPERM for a bound action) and OVS logs
    # "Failed to delete police action" and forgets it. What is left must
    # be the same in tc and in hardware, unused, and go with a tc flush.
    idx = setup_two_flows(d)
    since = log_size()
    ofctl("del-meter", "br0", "meter=1")
    wait(lambda: not metered(d), lambda: f"no flow using a meter: {d.table()}")
    hw = {int(l.split()[3]) for l in d.actions()}
    tcv = {i for i, t in tc_police().items() if field(t, "in_hw_count") == 1}
    expect(hw == tcv, f"hardware {sorted(hw)} vs tc {sorted(tcv)}")
    expect(all(" users 0 " in l for l in d.actions()), f"{d.actions()}")
    if idx in tcv:
        ovs_refused_bound(idx, "del-meter", since)
        print(f"# OVS left police {idx:#x} behind (tc refused to delete it while bound)")
    settle_binds(d, "before tc actions flush")
    run("tc", "actions", "flush", "action", "police")
    expect(not d.actions(), f"after tc actions flush: {d.table()}")


@test
def restart_with_cleanup_empties_hardware(o, d):
    idx = setup_two_flows(d)
    since = log_size()
    try:
        o.stop(cleanup=True)
        police_left_in_step(d, idx, "exit --cleanup", since)
    finally:
        o.restore(d)
    setup_two_flows(d)


@test
def plain_restart_keeps_tc_and_hardware_in_step(o, d):
    # Without --cleanup OVS leaves the datapath as it is; at start it
    # deletes the police actions in its range before it flushes the
    # ports' filters, so a meter's action still bound to a filter stays
    # (netdev_linux "Failed to delete police action"). Hardware must
    # hold exactly what tc holds, and that must go with a tc flush.
    setup_two_flows(d)
    o.stop()
    o.start()
    o.rules(d)
    wait(lambda: not d.filters(), lambda: f"OVS to flush the ports' filters: {d.table()}")
    hw = {int(l.split()[3]) for l in d.actions()}
    tcv = {i for i, t in tc_police().items() if field(t, "in_hw_count") == 1}
    expect(hw == tcv, f"hardware {sorted(hw)} vs tc {sorted(tcv)}")
    settle_binds(d, "before tc actions flush")
    run("tc", "actions", "flush", "action", "police")
    expect(not d.table(), f"after tc actions flush: {d.table()}")


@test
def del_br_empties_hardware(o, d):
    idx = setup_two_flows(d)
    since = log_size()
    try:
        o.del_br()
        wait(lambda: not d.filters(), lambda: f"flows to leave hardware: {d.table()}")
        police_left_in_step(d, idx, "del-br", since)
        # Nothing comes back: a restart with no bridge has no port to
        # offload to, and nothing left to clean up.
        o.stop(cleanup=True)
        o.start()
        expect(not d.table(), f"after a restart: {d.table()}")
        expect(not tc_police(), f"tc: {tc_police()}")
    finally:
        o.restore(d)


def leftover_counts():
    """netdevsim's two leftover counts (tc_leftovers and, from patch 0026,
    tc_leftovers_netns_gone): no namespace goes away here, so neither may
    rise."""
    counts = []
    for name in ("tc_leftovers",) + (() if lacks("0026") else ("tc_leftovers_netns_gone",)):
        with open(f"{DBG}/{name}") as f:
            counts.append(int(f.read()))
    return counts


@test
def device_removed_while_ovs_uses_it(o, d):
    setup_two_flows(d)
    left = leftover_counts()
    d.delete()
    try:
        # The ports go from the bridge; the meters' police actions (OVS
        # sets no skip_sw) stay in software, in no hardware.
        wait(lambda: not [i for i, t in tc_police().items() if field(t, "in_hw_count")],
             f"no police counted in hardware: {tc_police()}")
        run("ovs-vsctl", "show")
        now = leftover_counts()
        expect(now == left, f"the device left entries behind: leftover counts {left} -> {now}")
    finally:
        o.del_br()
        ofctl("del-meters", "br0", ok=False)
        d.__init__(d.n)
        o.bridge(d)


@test
def churn_keeps_ovs_tc_and_hardware_in_step(o, d):
    """add/modify/delete meters and the flows that use them; a second
    device comes and goes every CHURN/5 cycles. After each cycle: each
    device's hardware holds one police entry per OVS meter, at that
    meter's index and at the rate ovs-ofctl dump-meters shows for it; tc
    holds the same indices, each in hardware on every device; and the
    police indices the hardware filters use are those of the meters of
    OVS's flows, as many as there are flows. Fails unless at least one
    cycle runs (OVS_CHURN_CYCLES)."""
    expect(CHURN >= 1, f"OVS_CHURN_CYCLES={CHURN}: the churn must run at least one cycle")
    seed = int(os.environ.get("OVS_CHURN_SEED", "17"))
    rnd = random.Random(seed)
    meters = {}  # OpenFlow meter id -> kbps
    police = {}  # OpenFlow meter id -> its tc police index
    flows = set()  # (meter, udp dst port)
    d2 = None
    cycles = pairs = 0
    start = time.monotonic()
    for i in range(CHURN):
        try:
            op = rnd.random()
            m = rnd.randint(1, 4)
            if op < 0.35 or not meters:
                rate = rnd.choice((1000, 2000, 5000, 8000))
                cmd = "mod-meter" if m in meters else "add-meter"
                before = set(tc_police())
                ofctl(cmd, "br0", f"meter={m},kbps,burst,bands=type=drop,rate={rate},burst_size=100")
                if cmd == "add-meter":
                    new = wait(lambda: set(tc_police()) - before, f"meter {m}'s police action")
                    expect(len(new) == 1, f"add-meter {m} made police {sorted(new)}")
                    police[m] = new.pop()
                meters[m] = rate
            elif op < 0.7:
                m = rnd.choice(sorted(meters))
                port = 2000 + len(flows) % 50 * 10 + m
                ofctl("add-flow", "br0", f"priority=10,in_port={d.ports[0]},udp,tp_dst={port},"
                      f"actions=meter:{m},output:{d.ports[1]}")
                inject(d.ports[0], "udp", 1000, port)
                flows.add((m, port))
            elif op < 0.85 and flows:
                m, port = rnd.choice(sorted(flows))
                ofctl("del-flows", "br0", f"in_port={d.ports[0]},udp,tp_dst={port}")
                flows.discard((m, port))
            else:
                # A meter goes after its flows, as a controller removes
                # them: OpenFlow rules first; once OVS has revalidated
                # their megaflows (they drop now, without the meter), the
                # meter. (Deleting it while megaflows still use it is
                # del_meter_in_use_leaves_tc_and_hardware_in_step.)
                m = rnd.choice(sorted(meters))
                for fm, port in sorted(flows):
                    if fm == m:
                        ofctl("del-flows", "br0", f"in_port={d.ports[0]},udp,tp_dst={port}")
                flows = {f for f in flows if f[0] != m}
                wait(lambda: len(metered(d)) <= len(flows),
                     lambda: f"the meter's flows to stop using it: {d.table()}", timeout=60)
                # Then no hardware filter uses the meter's police action and
                # tc's filters let go of it (binds_settled()): another
                # rule's megaflow going can meet the count above first.
                idx = police.pop(m)
                wait(lambda: not any(f"police:{idx}:shared" in l for l in d.filters())
                     and unbound(idx),
                     lambda: f"meter {m}'s police {idx} unused before del-meter: tc "
                     f"{tc_police().get(idx)}, hardware {d.table()}", timeout=60)
                ofctl("del-meter", "br0", f"meter={m}")
                del meters[m]
            if i % DEV_PERIOD == DEV_PERIOD // 2:
                if d2:
                    d2.delete()
                    d2 = None
                else:
                    d2 = Dev(7)
            last = [time.monotonic()]

            def in_step():
                if not churn_in_step(d, d2, meters, police, flows):
                    return True
                if time.monotonic() - last[0] > 2:
                    refresh(d, flows)
                    last[0] = time.monotonic()
                return False
            wait(in_step, "hardware, tc and OVS to agree", timeout=60)
            cycles += 1
            pairs += len(flows)
        except AssertionError as e:
            raise AssertionError(f"cycle {i} (seed {seed}): {e}; last: "
                                 f"{churn_in_step(d, d2, meters, police, flows)}") from None
    if d2:
        d2.delete()
    print(f"# {cycles} cycles in {time.monotonic() - start:.0f} s (OVS_CHURN_SEED={seed}); "
          f"{pairs} hardware filters matched to their flows' meters")
    expect(cycles == CHURN and cycles >= 1, f"{cycles} of {CHURN} churn cycles ran")


def refresh(d, flows):
    """A packet for each flow, as traffic that keeps flowing: a change of
    the OpenFlow rules can make OVS's revalidator delete the megaflows of
    other rules (their masks change), and only the next packet installs
    them again. Sent while the tables disagree, every 2 s."""
    for _, port in sorted(flows):
        inject(d.ports[0], "udp", 1000, port)


def police_rates(dev):
    """{index: rate_bytes_ps} of dev's hardware police entries, or a
    string saying what is wrong (an index held twice, a stale entry)."""
    acts = dev.actions()
    rates = {int(l.split()[3]): int(re.search(r"rate_bytes_ps (\d+)", l).group(1)) for l in acts}
    if len(rates) != len(acts) or any(" stale" in l for l in acts):
        return f"netdevsim{dev.n}: {acts}"
    return rates


def churn_in_step(d, d2, meters, police, flows):
    """What still differs ("" once nothing does) between hardware, tc and
    what the test asked OVS for (meters: {meter: kbps}, police: {meter:
    its police index}, flows: {(meter, udp dst port)})."""
    want = {police[m]: kbps * 1000 // 8 for m, kbps in meters.items()}
    for dev in [d] + ([d2] if d2 else []):
        hw = police_rates(dev)
        if hw != want:
            return f"netdevsim{dev.n} police rates by index {hw}, OVS's meters' {want}"
    tcv = tc_police()
    n_hw = len(meters) and (2 if d2 else 1)
    if set(tcv) != set(want) or any(field(t, "in_hw_count") != n_hw for t in tcv.values()):
        return (f"tc police {sorted(tcv)} in_hw_count "
                f"{[field(t, 'in_hw_count') for t in tcv.values()]}, want {sorted(want)} in {n_hw}")
    # Each OVS flow with a meter is one hardware filter using its meter's
    # index (megaflows of deleted rules stay, dropping, without one).
    used = sorted(int(re.search(r"police:(\d+):shared", l).group(1)) for l in metered(d))
    if used != sorted(police[m] for m, _ in flows):
        return (f"hardware filters use police {used}, OVS's flows' meters "
                f"{sorted(police[m] for m, _ in flows)}: {d.filters()}")
    return ""


def main():
    for path in (BUS, DBG, "/usr/sbin/ovs-vswitchd"):
        if not os.path.exists(path):
            print(f"1..0 # SKIP {path} missing")
            return 0
    # OVS_ONLY=NAME,... runs only those tests (by hand; make check runs all)
    only = os.environ.get("OVS_ONLY")
    if only:
        TESTS[:] = [t for t in TESTS if t[0] in only.split(",")]
    print(f"1..{len(TESTS)}")
    sys.stdout.flush()
    o = Ovs()
    o.start()
    d = Dev(1)
    o.bridge(d)
    for n, (name, fn) in enumerate(TESTS, start=1):
        mark = kmsg.last_seq()  # its records: those numbered after it

        def case(fn=fn, mark=mark):
            err = None
            try:
                fn(o, d)
            except Exception as e:  # noqa: BLE001 - reported after the cleanup
                err = e
            try:
                clear(d)
            except AssertionError as e:
                err = err or AssertionError(f"cleanup after the test: {e}")
            if err:
                raise err
            problems = kmsg.reports_since(mark)
            expect(not problems, "\n".join(problems))
        run_case(n, name, case)
    o.del_br()
    o.stop(cleanup=True)
    run("ovs-appctl", "-t", "ovsdb-server", "exit")
    d.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
