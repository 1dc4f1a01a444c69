#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tests/tc-lifetime: the lifetime of netdevsim's offloaded actions and filters when
tc replaces actions, fills the table, shares blocks between ports and runs
in several network namespaces (issue 13's five bugs). Prints TAP.

The hardware's truth is netdevsim's debugfs table; every test also fails
on a kernel report (WARNING, KASAN, BUG) that appears in the kernel log
while it runs, since a use after free or a warning is the symptom, not a
wrong exit status.
"""
import os
import re
import subprocess
import sys
import time

# The netdevsim helpers of tests/tc.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tc"))
from tc_offload_test import (BUS, DBG, POLICE, POLICE_HW, Nsim, TcMonitor,  # noqa: E402
                             action, emptied, expect, filters, flush, released, run, tc)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kmsg  # noqa: E402
from cases import Skip, lacks, run_case  # noqa: E402

LEFTOVERS = f"{DBG}/tc_leftovers"
NETNS_GONE = f"{DBG}/tc_leftovers_netns_gone"
TESTS = []


def test(fn):
    TESTS.append((fn.__name__, fn))
    return fn


def police(rate, index, *extra, ce="drop/pipe", more=()):
    """A police action; more: parameters before conform-exceed CE."""
    return ["action", "police", "rate", rate, "burst", "10000k", *more,
            "conform-exceed", ce, "index", str(index), *extra]


def fails(*args, why):
    """A tc command that must fail, saying why."""
    p = tc(*args, ok=False)
    expect(why in p.stderr, f"tc {' '.join(args)}: want {why!r}, got {p.stderr.strip()!r}")


def flower(proto, index, *where, flags=("skip_sw",)):
    """A flower filter using police INDEX (skip_sw unless flags say
    otherwise: a filter's flags must be its actions'); where: dev X parent
    ffff: or block N."""
    tc("filter", "add", *where, "protocol", "ip", "flower",
       *flags, "ip_proto", proto, "action", "police", "index", str(index))


def leftover_counts():
    """tc_leftovers and, from patch 0026 on, tc_leftovers_netns_gone."""
    paths = (LEFTOVERS,) if lacks("0026") else (LEFTOVERS, NETNS_GONE)
    return [leftovers(p) for p in paths]


def leftovers(path=LEFTOVERS):
    with open(path) as f:
        return int(f.read())


def lose_next_destroy(d):
    """Have netdevsim answer the next DESTROY of an action it holds but
    keep the entry (debugfs lose_next_destroy), as when the DESTROY of a
    namespace dismantled during a device's removal goes nowhere."""
    with open(f"{d.dbg}/lose_next_destroy", "w") as f:
        f.write("1")


def destroy_lost(d, timeout=60):
    """Whether the DESTROY that lose_next_destroy waits for has come."""
    deadline = time.monotonic() + timeout
    while True:
        with open(f"{d.dbg}/lose_next_destroy") as f:
            if f.read().strip() == "N":
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def leftovers_of_a_dismantled_namespace_are_counted_apart():
    """An action the device was left holding (its DESTROY lost, as the tc
    core's namespace teardown race loses it) counts in
    tc_leftovers_netns_gone when its namespace has been dismantled, in
    tc_leftovers when its namespace lives on. Last: it leaves one of each
    on purpose."""
    for patch in ("0025", "0026"):
        if lacks(patch):
            raise Skip(lacks(patch))
    mark = kmsg.last_seq()
    before = leftovers(), leftovers(NETNS_GONE)
    d = Nsim(2)
    ns = "nsim-dismantled"
    try:
        run("ip", "netns", "add", ns)
        run("ip", "netns", "exec", ns, "tc", "actions", "add", *police("100mbit", 9))
        expect(len(d.actions()) == 1, f"the namespace's meter not offloaded: {d.table()}")
        lose_next_destroy(d)
        run("ip", "netns", "del", ns)
        expect(destroy_lost(d), "no DESTROY came from the dismantled namespace in 60 s")
        tc("actions", "add", "action", "gact", "drop", "index", "9")
        expect(action("gact", 9)["in_hw_count"] == 1, f"gact drop not offloaded: {d.table()}")
        lose_next_destroy(d)
        tc("actions", "del", "action", "gact", "index", "9")
        expect(destroy_lost(d), "tc actions del sent no DESTROY")
        hw = d.actions()
        expect(len(hw) == 2 and any(l.startswith("action police index 9 ") for l in hw)
               and any(l.startswith("action gact index 9 drop") for l in hw),
               f"want both entries kept, as a lost DESTROY leaves them: {hw}")
    finally:
        run("ip", "netns", "del", ns, ok=None)
        d.delete()
    after = leftovers(), leftovers(NETNS_GONE)
    expect(after == (before[0] + 1, before[1] + 1),
           f"(tc_leftovers, tc_leftovers_netns_gone) went from {before} to {after}, "
           "want one more of each")
    problems = kmsg.reports_since(mark)
    expect(not problems, "\n".join(problems))


@test
def replacing_a_shared_meter_updates_it_in_place(d):
    # OVS's "modify meter": the flows keep using the same hardware meter.
    tc("actions", "add", *police("100mbit", 1, "skip_sw"))
    for proto in ("tcp", "udp"):
        flower(proto, 1, "dev", d.port, "parent", "ffff:")
    tc("actions", "replace", *police("200mbit", 1, "skip_sw"))
    hw = d.actions()
    expect(len(hw) == 1 and "index 1 rate_bytes_ps 25000000 " in hw[0] and "users 2" in hw[0]
           and "stale" not in hw[0], f"after replace, want one meter at 200mbit with 2 users: {hw}")
    expect(all("police:1:shared" in f for f in d.filters()) and len(d.filters()) == 2,
           f"filters: {d.filters()}")
    expect(action("police", 1)["in_hw_count"] == 1, "in_hw_count after replace")
    tc("filter", "del", "dev", d.port, "ingress")
    hw = d.actions()
    expect(len(hw) == 1 and "users 0" in hw[0], f"users after the filters went: {hw}")
    released("police", 1)
    tc("actions", "del", "action", "police", "index", "1")
    expect(not d.table(), f"table not empty after deleting the meter: {d.table()}")


@test
def refused_replace_then_accepted_one_updates_in_place(d):
    # A replace the hardware refuses (200gbit is above its meters) leaves
    # the meter to the filters that use it, counted in no hardware by
    # tc; the next replace it accepts must bring that entry back in
    # place, not put a second meter beside it.
    tc("actions", "add", *police("100mbit", 4))
    flower("tcp", 4, "dev", d.port, "parent", "ffff:", flags=())
    expect(len(d.filters()) == 1 and "users 1" in d.actions()[0], f"{d.table()}")
    tc("actions", "replace", *police("200gbit", 4))
    a = action("police", 4)
    hw = d.actions()
    expect(not a["in_hw_count"] and len(hw) == 1 and " stale" in hw[0] and "users 1" in hw[0],
           f"after the refused replace: in_hw_count {a['in_hw_count']}, hardware {hw}")
    tc("actions", "replace", *police("50mbit", 4))
    hw = d.actions()
    expect(action("police", 4)["in_hw_count"] == 1 and len(hw) == 1
           and "rate_bytes_ps 6250000 " in hw[0] and "users 1" in hw[0] and "stale" not in hw[0],
           f"after the accepted replace, want one meter at 50mbit with its filter: {hw}")
    expect("police:4:shared" in d.filters()[0], f"filter: {d.filters()}")


@test
def replace_that_cannot_be_offloaded_leaves_hardware(d):
    # gact pipe has no flow_action: the tc core cannot describe it, so the
    # drop that hardware held must go, and tc must count it nowhere.
    tc("actions", "add", "action", "gact", "drop", "index", "5")
    expect(action("gact", 5)["in_hw_count"] == 1 and len(d.actions()) == 1,
           f"gact drop not offloaded: {d.table()}")
    tc("actions", "replace", "action", "gact", "pipe", "index", "5")
    a = action("gact", 5)
    expect(not a["in_hw_count"] and not a["in_hw"],
           f"tc still counts the pipe in hardware:\n{a['text']}")
    expect(not d.actions(), f"hardware still holds the old version: {d.table()}")
    tc("actions", "replace", "action", "gact", "drop", "index", "5")
    expect(action("gact", 5)["in_hw_count"] == 1 and len(d.actions()) == 1
           and "gact index 5 drop" in d.actions()[0], f"drop again: {d.table()}")
    tc("actions", "del", "action", "gact", "index", "5")
    expect(not d.table(), f"left behind: {d.table()}")


@test
def refused_replace_takes_the_kept_version_out(d):
    # mlx5 and nfp keep an action's previous version when they refuse its
    # replacement (netdevsim: keep_refused). tc then counts it in no
    # hardware, so unless the core takes it out, "tc actions del" sends
    # no DESTROY and the old meter stays in the device.
    d.keep_refused()
    tc("actions", "add", *police("100mbit", 1))
    expect(action("police", 1)["in_hw_count"] == 1 and len(d.actions()) == 1,
           f"police 1 not offloaded: {d.table()}")
    tc("actions", "replace", *police("100mbit", 1, more=("overhead", "10")))
    a = action("police", 1)
    expect(not a["in_hw_count"] and "overhead 10b" in a["text"],
           f"tc after the refused replace:\n{a['text']}")
    expect(not d.actions(), f"the device kept the old meter while tc counts none: {d.table()}")
    tc("actions", "del", "action", "police", "index", "1")
    expect(not d.table(), f"left in the device after the delete: {d.table()}")


@test
def refused_replace_keeps_the_meter_filters_use(d):
    # FLOW_ACT_DESTROY of an action offloaded filters still use: the
    # driver keeps their meter as it was offloaded (stale: in no
    # hardware for tc) until the last of them goes.
    d.keep_refused()
    tc("actions", "add", *police("100mbit", 6))
    flower("tcp", 6, "dev", d.port, "parent", "ffff:", flags=())
    tc("actions", "replace", *police("100mbit", 6, more=("overhead", "10")))
    hw = d.actions()
    expect(not action("police", 6)["in_hw_count"] and len(hw) == 1 and " stale" in hw[0]
           and "users 1" in hw[0] and f"index 6 {POLICE_HW} " in hw[0],
           f"want the filter's meter kept at 100mbit, stale: {d.table()}")
    expect(len(d.filters()) == 1 and "police:6:shared" in d.filters()[0],
           f"the filter lost its meter: {d.table()}")
    tc("filter", "del", "dev", d.port, "ingress")
    released("police", 6)
    expect(not d.table(), f"the stale meter outlived its last filter: {d.table()}")


@test
def replace_filters_cannot_follow_is_refused(d):
    # An offloaded meter that filters use, replaced by a version tc
    # cannot describe for offload (conform reclassify): refused before
    # anything changes, in tc and in the device.
    tc("actions", "add", *police("100mbit", 8))
    flower("udp", 8, "dev", d.port, "parent", "ffff:", flags=())
    fails("actions", "replace", *police("200mbit", 8, ce="drop/reclassify"),
          why="filters use cannot be offloaded; action unchanged")
    a = action("police", 8)
    expect(a["in_hw_count"] == 1 and "rate 100Mbit" in a["text"] and "pipe" in a["text"]
           and "reclassify" not in a["text"], f"tc changed the action:\n{a['text']}")
    hw = d.actions()
    expect(len(hw) == 1 and f"index 8 {POLICE_HW} " in hw[0] and "users 1" in hw[0]
           and "stale" not in hw[0], f"the device changed: {d.table()}")


@test
def failed_skip_sw_replace_leaves_the_action_as_it_was(d):
    # skip_sw runs only in hardware: a replacement tc cannot describe for
    # offload is refused before it changes anything (gact pipe, police
    # conform reclassify).
    tc("actions", "add", "action", "gact", "drop", "index", "5", "skip_sw")
    fails("actions", "replace", "action", "gact", "pipe", "index", "5", "skip_sw",
          why="skip_sw action cannot be offloaded; action unchanged")
    a = action("gact", 5)
    expect(a["in_hw_count"] == 1 and a["skip_sw"] and "action drop" in a["text"],
           f"tc changed the gact:\n{a['text']}")
    expect(d.actions() == [l for l in d.actions() if "gact index 5 drop" in l]
           and len(d.actions()) == 1, f"the device changed: {d.table()}")
    tc("actions", "add", *police("100mbit", 7, "skip_sw"))
    fails("actions", "replace", *police("200mbit", 7, "skip_sw", ce="drop/reclassify"),
          why="skip_sw action cannot be offloaded; action unchanged")
    a = action("police", 7)
    expect(a["in_hw_count"] == 1 and "rate 100Mbit" in a["text"]
           and "reclassify" not in a["text"], f"tc changed the police:\n{a['text']}")
    hw = [l for l in d.actions() if l.startswith("action police")]
    expect(len(hw) == 1 and f"index 7 {POLICE_HW} " in hw[0], f"the device changed: {d.table()}")


@test
def skip_sw_replace_no_driver_takes_is_deleted_and_notified(d):
    # A skip_sw replacement that can be described but that the driver
    # refuses has replaced the old version in place and runs nowhere: tc
    # deletes it and says so, as when its last hardware goes.
    tc("actions", "add", *police("100mbit", 7, "skip_sw"))
    tc("actions", "add", "action", "gact", "drop", "index", "11", "skip_sw")
    mon = TcMonitor()
    try:
        fails("actions", "replace", *police("100mbit", 7, "skip_sw", more=("overhead", "10")),
              why="in no hardware: deleted")
        seen, text = mon.deleted("police 0x7")
        expect(action("police", 7) is None, "police 7 left, in no hardware")
        expect(seen, f"tc monitor did not see police 7 deleted:\n{text}")
        d.fail_next()
        fails("actions", "replace", "action", "gact", "pass", "index", "11", "skip_sw",
              why="in no hardware: deleted")
        seen, text = mon.deleted("index 11")
        expect(action("gact", 11) is None, "gact 11 left, in no hardware")
        expect(seen, f"tc monitor did not see gact 11 deleted:\n{text}")
    finally:
        mon.close()
    expect(not d.actions(), f"left in the device: {d.table()}")


@test
def device_removal_with_a_shared_meter_in_use(d):
    # The device goes while it holds a meter and the filters using it.
    two = Nsim2(5)
    try:
        tc("actions", "add", *police("100mbit", 9, "skip_sw"))
        tc("qdisc", "add", "dev", two.port, "ingress")
        for proto in ("tcp", "udp"):
            flower(proto, 9, "dev", two.port, "parent", "ffff:")
        meter = [l for l in two.table() if l.startswith("action police index 9 ")]
        expect(len(meter) == 1 and "users 2" in meter[0], f"meter users: {two.table()}")
        before = leftovers()
    finally:
        two.delete()
    a = action("police", 9)
    expect(a["in_hw_count"] == 1, f"want only the other device's copy counted:\n{a['text']}")
    hw = d.actions()
    expect(len(hw) == 1 and "index 9 " in hw[0] and "users 0" in hw[0],
           f"the other device's meter: {d.table()}")
    expect(leftovers() == before, f"tc_leftovers went from {before} to {leftovers()}")


@test
def replace_in_a_full_table_keeps_the_entry(d):
    full = 512  # NSIM_TC_MAX_ACTIONS
    batch = "\n".join(f"actions add action gact drop index {i}" for i in range(1, full + 1))
    p = subprocess.run(["tc", "-batch", "-"], input=batch + "\n", capture_output=True, text=True)
    expect(p.returncode == 0, f"adding {full} actions: {p.stderr[-300:]}")
    expect(len(d.actions()) == full, f"{len(d.actions())} entries, want {full}")
    tc("actions", "add", "action", "gact", "drop", "index", str(full + 1))
    expect(not action("gact", full + 1)["in_hw_count"] and len(d.actions()) == full,
           "the table took one more than it holds")
    tc("actions", "replace", "action", "gact", "pass", "index", "7")
    a = action("gact", 7)
    hw = [l for l in d.actions() if l.startswith("action gact index 7 ")]
    expect(a["in_hw_count"] == 1 and len(hw) == 1 and " pass " in hw[0],
           f"replacing entry 7 of a full table: in_hw_count {a['in_hw_count']}, hardware {hw}")
    expect(len(d.actions()) == full, f"{len(d.actions())} entries after the replace")


@test
def shared_block_offloads_the_filter_on_each_port(d):
    two = Nsim2(3)
    try:
        tc("actions", "add", *police("100mbit", 2, "skip_sw"))
        for p in two.ports:
            tc("qdisc", "add", "dev", p, "ingress_block", "22", "ingress")
        flower("tcp", 2, "block", "22")
        hw = two.table()
        fl = [l for l in hw if l.startswith("filter ")]
        expect(sorted(re.search(r"port (\d+)", l).group(1) for l in fl) == ["0", "1"],
               f"want the filter on port 0 and port 1: {hw}")
        meter = [l for l in hw if l.startswith("action police index 2 ")]
        expect(len(meter) == 1 and "users 2" in meter[0], f"meter users: {hw}")
        f = tc("-s", "filter", "show", "block", "22").stdout
        expect(re.search(r"in_hw_count 2\b", f), f"tc should count 2 hardware copies:\n{f}")
        tc("filter", "del", "block", "22")
        hw = two.table()
        expect(not [l for l in hw if l.startswith("filter ")]
               and "users 0" in [l for l in hw if "index 2 " in l][0],
               f"after deleting the filter: {hw}")
    finally:
        for p in two.ports:
            tc("qdisc", "del", "dev", p, "ingress_block", "22", "ingress", ok=None)
        flush()
        two.delete()


@test
def namespaces_keep_their_own_meters(d):
    ns = "nsim-other"
    run("ip", "netns", "add", ns)
    try:
        # Namespace "other" offloads police index 3 on its own; the port's
        # namespace makes its own police 3 inside a filter.
        run("ip", "netns", "exec", ns, "tc", "actions", "add", *police("100mbit", 3))
        expect(len(d.actions()) == 1, f"the other namespace's meter: {d.table()}")
        tc("filter", "add", "dev", d.port, "protocol", "ip", "parent", "ffff:", "flower",
           "skip_sw", "ip_proto", "tcp", "action", *police("300mbit", 3)[1:])
        fl = d.filters()
        expect(len(fl) == 1 and "police:3:own" in fl[0],
               f"the filter must use its own meter, not the other namespace's: {d.table()}")
        expect("users 0" in d.actions()[0], f"other namespace's meter users: {d.table()}")
        run("ip", "netns", "exec", ns, "tc", "actions", "del", "action", "police", "index", "3")
        expect(not d.actions() and len(d.filters()) == 1,
               f"deleting the other namespace's meter: {d.table()}")
    finally:
        run("ip", "netns", "del", ns, ok=None)


@test
def redirect_to_a_removed_port_goes_with_it(d):
    """A filter redirecting to another port of the device: when that port
    is removed, tc's mirred loses its device and software drops; the
    hardware entry must not keep forwarding there, nor to a new port that
    reuses the index. A VF representor in switchdev mode is a port of the
    device too."""
    two = Nsim2(4)
    dev = f"{BUS}/devices/netdevsim4"
    try:
        src, dst = two.ports
        tc("qdisc", "add", "dev", src, "ingress")
        tc("filter", "add", "dev", src, "ingress", "protocol", "ip", "flower", "skip_sw",
           "ip_proto", "tcp", "action", "mirred", "egress", "redirect", "dev", dst)
        fl = [l for l in two.table() if l.startswith("filter ")]
        expect(len(fl) == 1 and " redirect:1 " in fl[0] + " ", f"redirect to port 1: {two.table()}")
        with open(f"{dev}/del_port", "w") as f:
            f.write("1")
        fl = [l for l in two.table() if l.startswith("filter ")]
        expect(len(fl) == 1 and " redirect:gone" in fl[0], f"after removing port 1: {two.table()}")
        with open(f"{dev}/new_port", "w") as f:
            f.write("1")
        fl = [l for l in two.table() if l.startswith("filter ")]
        expect(len(fl) == 1 and " redirect:gone" in fl[0],
               f"a new port 1 must not receive the old filter's traffic: {two.table()}")
        # switchdev: VF representors (port index 128 + vf) are ports too.
        with open(f"{dev}/sriov_numvfs", "w") as f:
            f.write("1")
        run("devlink", "dev", "eswitch", "set", "netdevsim/netdevsim4", "mode", "switchdev")
        netdir = f"{dev}/net"
        rep = [p for p in os.listdir(netdir)
               if open(f"{netdir}/{p}/phys_port_name").read().strip().startswith("pf0vf")]
        expect(len(rep) == 1, f"one VF representor: {os.listdir(netdir)}")
        run("ip", "link", "set", rep[0], "up")
        tc("filter", "add", "dev", src, "ingress", "protocol", "ip", "flower", "skip_sw",
           "ip_proto", "udp", "action", "mirred", "egress", "redirect", "dev", rep[0])
        fl = [l for l in two.table() if l.startswith("filter ") and "ip_proto 17" in l]
        expect(len(fl) == 1 and " redirect:128" in fl[0], f"redirect to the VF: {two.table()}")
    finally:
        tc("qdisc", "del", "dev", two.ports[0], "ingress", ok=None)
        two.delete()


class Nsim2(Nsim):
    """A netdevsim device with two ports, hw-tc-offload on, no qdisc."""

    def __init__(self, dev_id):
        self.id = dev_id
        with open(f"{BUS}/new_device", "w") as f:
            f.write(f"{dev_id} 2")
        netdir = f"{BUS}/devices/netdevsim{dev_id}/net"
        for _ in range(100):
            if os.path.isdir(netdir) and len(os.listdir(netdir)) == 2:
                break
            time.sleep(0.05)
        self.ports = sorted(os.listdir(netdir))
        self.port = self.ports[0]
        self.dbg = f"{DBG}/netdevsim{dev_id}/tc"
        for p in self.ports:
            run("ip", "link", "set", p, "up")
            run("ethtool", "-K", p, "hw-tc-offload", "on")


def main():
    for path in (BUS, DBG):
        if not os.path.exists(path):
            print("1..0 # SKIP no netdevsim (CONFIG_NETDEVSIM) or debugfs")
            return 0
    print(f"1..{len(TESTS) + 2}")
    start_left = leftover_counts() if os.path.exists(LEFTOVERS) else None
    for n, (name, fn) in enumerate(TESTS, start=1):
        # Each test on a device of its own, removed before its kernel log
        # is read: what one leaves behind shows in its own result. Its
        # records are those numbered after the mark (tests/lib/kmsg.py).
        mark = kmsg.last_seq()
        d = Nsim(2)

        def case(fn=fn, d=d, mark=mark):
            try:
                fn(d)
            finally:
                flush(d)
                try:
                    emptied(d)
                finally:
                    d.delete()
            problems = kmsg.reports_since(mark)
            expect(not problems, "\n".join(problems))
        run_case(n, name, case)

    def nothing_left():
        # No case dismantles a namespace while a device goes: neither the
        # leftovers nor those of dismantled namespaces may rise.
        expect(start_left is not None, f"no {LEFTOVERS}")
        now = leftover_counts()
        expect(now == start_left,
               f"(tc_leftovers, tc_leftovers_netns_gone) went from {start_left} to {now}")
    run_case(len(TESTS) + 1, "device_removal_leaves_nothing_behind", nothing_left)
    run_case(len(TESTS) + 2, "leftovers_of_a_dismantled_namespace_are_counted_apart",
             leftovers_of_a_dismantled_namespace_are_counted_apart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
