#!/usr/bin/env python3
"""I2C targets on cross-wired software buses, and MCTP over I2C, in the guest.

i2c-crosswire gives pairs of adapters wired to one another: what one
masters reaches the targets registered on the other. On top of it: the
tree's i2c-slave-eeprom and i2c-slave-testunit backends driven with
Debian's i2c-tools, then two mctp-i2c interfaces, one per side, each in
its own MCTP network, exchanging messages with tools/mctp (mctp-conf,
mctp-echo). Output: TAP.
"""
import glob
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from i2c_guest import (BIN, buses, delete_device, diag, insmod, new_device, pec,  # noqa: E402
                       plan, rmmod, run, tap, trace_events)


def stats(dev):
    d = f"/sys/class/net/{dev}/statistics"
    return {k: int(open(f"{d}/{k}").read()) for k in os.listdir(d)}


def mctp_dump(rtm_type, hdr_len):
    """How many objects an rtnetlink dump of AF_MCTP gives: addresses
    (RTM_GETADDR), routes (RTM_GETROUTE) or neighbours (RTM_GETNEIGH)."""
    af_mctp, nlm_f_dump, nlmsg_done, nlmsg_error = 45, 0x300, 3, 2
    req = struct.pack("=IHHII", 16 + hdr_len, rtm_type, 1 | nlm_f_dump, 1, 0)
    req += bytes([af_mctp]) + bytes(hdr_len - 1)
    n = 0
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sk:
        sk.send(req)
        while True:
            buf = sk.recv(65536)
            off = 0
            while off + 16 <= len(buf):
                length, kind = struct.unpack_from("=IH", buf, off)
                if kind == nlmsg_done:
                    return n
                if kind == nlmsg_error:
                    return -1
                n += 1
                off += (length + 3) & ~3


RTM_GETADDR, RTM_GETROUTE, RTM_GETNEIGH = 22, 26, 30


def leftovers(adapters):
    """What is still registered that the tests created: mctpi2c netdevs,
    I2C clients and targets on the given adapters, clients bound to
    mctp-i2c, MCTP addresses, routes and neighbours."""
    left = [os.path.basename(d) for d in glob.glob("/sys/class/net/mctpi2c*")]
    for n in adapters:
        left += [f"i2c client {os.path.basename(d)}" for d in glob.glob(f"/sys/bus/i2c/devices/{n}-*")]
    left += [f"mctp-i2c-interface bound to {os.path.basename(d)}"
             for d in glob.glob("/sys/bus/i2c/drivers/mctp-i2c-interface/*-*")]
    for what, kind, hdr in (("address", RTM_GETADDR, 8), ("route", RTM_GETROUTE, 12),
                            ("neighbour", RTM_GETNEIGH, 12)):
        count = mctp_dump(kind, hdr)
        if count:
            left.append(f"{count} MCTP {what}(s)" if count > 0 else f"MCTP {what} dump failed")
    return left


def unload_crosswire(what):
    """rmmod i2c-crosswire once the tests removed what they added: nothing
    of theirs may be left before, and afterwards the module, its adapters
    and their i2c-dev nodes are gone too."""
    adapters = {name: n for name, n in buses().items() if name.startswith("i2c-crosswire ")}
    before = leftovers(adapters.values())
    ok = rmmod("i2c_crosswire")
    after = leftovers(adapters.values())
    after += [f"adapter {name}" for name in buses() if name.startswith("i2c-crosswire ")]
    after += [f"/sys/class/i2c-dev/i2c-{n}" for n in adapters.values()
              if os.path.exists(f"/sys/class/i2c-dev/i2c-{n}")]
    if any(line.split()[0] == "i2c_crosswire" for line in open("/proc/modules")):
        after.append("i2c_crosswire in /proc/modules")
    if os.path.exists("/sys/module/i2c_crosswire"):
        after.append("/sys/module/i2c_crosswire")
    if before or after:
        diag(f"left before rmmod: {before}\nleft after rmmod: {after}")
    tap(ok and not before and not after and len(adapters) > 0,
        f"{what}: after the tests remove their devices nothing is left on the "
        f"{len(adapters)} adapters (netdevs, clients, targets, MCTP addresses/routes/"
        f"neighbours); i2c-crosswire unloads and its adapters, i2c-dev nodes and module "
        f"are gone ({'; '.join(before + after) or 'nothing left'})")


def test_targets(a, b):
    """The tree's target backends on the wire, with i2c-tools."""
    new_device(b, "slave-24c02", 0x1050)
    eeprom = f"/sys/bus/i2c/devices/{b}-1050/slave-eeprom"
    tap(os.path.exists(eeprom), "slave-24c02 registers as a target on the crosswire adapter")
    pattern = bytes((i * 7 + 3) & 0xff for i in range(256))
    with open(eeprom, "wb") as f:
        f.write(pattern)
    p = run("i2cget", "-y", a, 0x50, 0x42)
    tap(p.returncode == 0 and int(p.stdout, 0) == pattern[0x42],
        f"i2cget from the other side reads the eeprom byte ({p.stdout.strip()}, "
        f"expected {pattern[0x42]:#04x})")
    p = run("i2cset", "-y", a, 0x50, 0x10, 0xa5)
    got = open(eeprom, "rb").read()[0x10]
    tap(p.returncode == 0 and got == 0xa5, f"i2cset writes the eeprom byte (now {got:#04x})")
    p = run("i2ctransfer", "-y", a, "w1@0x50", "0x80", "r32")
    want = " ".join(f"0x{x:02x}" for x in pattern[0x80:0xa0])
    tap(p.returncode == 0 and p.stdout.strip() == want,
        "i2ctransfer: a write then a 32-byte read with a repeated start")
    p = run("i2cdump", "-y", "-r", "0x00-0x3f", a, 0x50, "b")
    rows = re.findall(r"^([0-9a-f]0):((?: [0-9a-f]{2}|   )+)", p.stdout, re.M)
    dumped = bytes(int(x, 16) for _, r in rows for x in r.split())
    expected = bytearray(pattern[:0x40])
    expected[0x10] = 0xa5
    tap(p.returncode == 0 and dumped == bytes(expected), "i2cdump of 64 bytes matches the eeprom")
    p = run("i2cget", "-y", a, 0x51)
    tap(p.returncode != 0, f"no target at 0x51: the transfer is NACKed ({p.stderr.strip()})")
    # -f: the target registered on b at 0x50 makes i2c-dev call the address
    # busy on b; forcing is how a master on b would still address 0x50.
    p = run("i2cget", "-f", "-y", b, 0x50, 0x00)
    tap(p.returncode != 0 and "Read failed" in p.stderr,
        f"a target answers only transfers mastered on the other adapter ({p.stderr.strip()})")

    # i2c-slave-testunit: an SMBus block process call needs I2C_M_RECV_LEN.
    new_device(b, "slave-testunit", 0x1030)
    p = run("i2ctransfer", "-y", a, "w3@0x30", "0x03", "0x01", "0x10", "r?")
    want = " ".join(f"0x{x:02x}" for x in [0x10] + list(range(0x0f, -1, -1)))
    tap(p.returncode == 0 and p.stdout.strip() == want,
        f"testunit block process call: 16 bytes behind a length byte (I2C_M_RECV_LEN) "
        f"({p.stdout.strip()[:30]}...)")
    # READ_BYTES: the testunit masters a 16-byte read on its own adapter
    # from the eeprom on ours (multi-master); the eeprom's pointer moves.
    new_device(a, "slave-24c02", 0x1050)
    eeprom_a = f"/sys/bus/i2c/devices/{a}-1050/slave-eeprom"
    with open(eeprom_a, "wb") as f:
        f.write(bytes(range(256)))
    s = run("i2cset", "-f", "-y", b, 0x50, 0x20, check=True)  # pointer := 0x20
    p = run("i2cset", "-y", a, 0x30, 0x01, 0x50, 0x10, 0x00, "i", check=True)
    # The testunit masters that read later, from a work item
    # (i2c_slave_testunit_slave_cb() -> queue_delayed_work()), and refuses
    # writes until it is done (TU_FLAG_IN_PROCESS: i2c-crosswire nacks the
    # data). A one-byte write, which queues nothing, tells when.
    deadline = time.monotonic() + 10
    while (run("i2ctransfer", "-y", a, "w1@0x30", "0x00").returncode
           and time.monotonic() < deadline):
        time.sleep(0.05)
    q = run("i2cget", "-f", "-y", b, 0x50, check=True)  # current-address read
    tap(s.returncode == 0 and p.returncode == 0 and q.returncode == 0 and
        int(q.stdout, 0) == 0x30,
        f"testunit READ_BYTES read 16 bytes from the other side's eeprom "
        f"(its pointer moved 0x20 -> {q.stdout.strip()}, expected 0x30)")
    delete_device(a, 0x1050)
    delete_device(b, 0x1030)
    delete_device(b, 0x1050)


def mctp_conf(*args):
    return run(os.path.join(BIN, "mctp-conf"), *args, check=True)


def setup_mctp(a, b, mtu):
    """mctpi2c<a> (lladdr 0x10, EID 8, net 1) <-> mctpi2c<b> (0x20, EID 9, net 2)."""
    new_device(a, "mctp-i2c-interface", 0x1010)
    new_device(b, "mctp-i2c-interface", 0x1020)
    da, db = f"mctpi2c{a}", f"mctpi2c{b}"
    ok = os.path.exists(f"/sys/class/net/{da}") and os.path.exists(f"/sys/class/net/{db}")
    for dev, net, eid, peer_eid, peer_ll in ((da, 1, 8, 9, "20"), (db, 2, 9, 8, "10")):
        for args in (("link", "set", dev, "net", net, "mtu", mtu, "up"),
                     ("addr", "add", eid, "dev", dev),
                     ("route", "add", peer_eid, "via", dev),
                     ("neigh", "add", peer_eid, "dev", dev, "lladdr", peer_ll)):
            ok &= mctp_conf(*args).returncode == 0
    return ok, da, db


def teardown_mctp(a, b):
    delete_device(a, 0x1010)
    delete_device(b, 0x1020)


def echo_server(net, count=None):
    """mctp-echo serve, once it is bound: it says so on stdout after bind();
    a request sent before that would find no listener and be dropped (on a
    loaded host the exec alone can take longer than any fixed sleep)."""
    srv = subprocess.Popen([os.path.join(BIN, "mctp-echo"), "serve", "--net", str(net)] +
                           (["--count", str(count)] if count else []),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([srv.stdout], [], [], 60)
    line = srv.stdout.readline() if ready else ""
    srv.ready = line.startswith("mctp-echo: serving")
    if not srv.ready:
        diag(f"echo server on net {net} not ready: {line!r}")
    return srv


def stop(srv, timeout=10):
    """Wait for an echo server that should have served its count, else kill it."""
    try:
        srv.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.wait()


def ping(net, eid, sizes, count, timeout=60000):
    return run(os.path.join(BIN, "mctp-echo"), "ping", "--net", net, "--eid", eid,
               "--sizes", ",".join(map(str, sizes)), "--count", count,
               "--timeout", timeout, timeout=600)


# net/mctp/route.c: a request's tag key, and the key that reassembles an
# incoming message, expire mctp_key_lifetime (6 s) after they are made.
KEY_LIFETIME_S = 6
ATTEMPTS = 3
RETRIES = [4]  # what the whole area may spend on attempts tried again
EVENTS = ("mctp/mctp_key_release", "net/netif_receive_skb")


def trace(start):
    """Record key releases and received packets (start), or stop and
    return [(seconds, event, text)] recorded since."""
    text = trace_events(EVENTS, start)
    return [(float(m.group(1)), m.group(2), m.group(3))
            for m in re.finditer(r" (\d+\.\d+): (\w+): (.*)$", text, re.M)]


def settle(devs, quiet=1.0, timeout=60):
    """Wait until the interfaces' counters stop moving: a response whose
    requester gave up can still be on the wire."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        now = [stats(d) for d in devs]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.1)


def wire_losses(devs, before):
    """What the two interfaces lost between them since BEFORE (their
    stats): frames one sent that the other did not queue, errors, drops."""
    (a, b), now = devs, {d: stats(d) for d in devs}
    d = {dev: {k: now[dev][k] - before[dev][k] for k in now[dev]} for dev in devs}
    lost = [f"{x} sent {d[x]['tx_packets']}, {y} received {d[y]['rx_packets']}"
            for x, y in ((a, b), (b, a)) if d[x]["tx_packets"] != d[y]["rx_packets"]]
    lost += [f"{dev} {k} +{n}" for dev in devs for k, n in sorted(d[dev].items())
             if n and (k.endswith("_errors") or k.endswith("_dropped"))]
    return lost


def outlived(p, srv, events, devs, mtu):
    """Why a failed echo does not prove that a key outlived its lifetime
    in mid-transfer, or "" when it does. Needed: mctp-echo got no response
    to a message of at least 250 fragments, the server was bound and
    failed at nothing (it served its count, or was waiting when killed),
    a key was released for "timeout" and none "invalidated" (a fragment
    missing or out of order, patch 0017), and the interfaces were still
    passing packets up within 0.5 s of the first timeout: a loss that
    stalls the exchange (a first or last fragment lost, a message
    dropped at a socket) leaves the wire idle until the key expires.
    Every frame one interface sent was received by the other, with no
    error or drop counted (wire_losses)."""
    m = re.search(r"no response from eid \d+ to request \d+ of (\d+) bytes", p.stderr)
    if p.returncode != 1 or not m:
        return "mctp-echo failed otherwise"
    frags = -(-(int(m.group(1)) + 1) // (mtu - 4))
    if frags < 250:
        return f"a {frags}-fragment message cannot take {KEY_LIFETIME_S} s"
    if not srv.ready or srv.returncode not in (0, -signal.SIGKILL) or srv.stderr.read().strip():
        return "the echo server failed"
    reasons = [t.split()[-1] for _, e, t in events if e == "mctp_key_release"]
    if "invalidated" in reasons or "timeout" not in reasons:
        return f"key releases: {', '.join(reasons) or 'none'}"
    first = min(ts for ts, e, t in events if e == "mctp_key_release" and t.endswith("timeout"))
    rx = [ts for ts, e, t in events if e == "netif_receive_skb" and
          t.split()[0] in (f"dev={d}" for d in devs)]
    if not any(ts >= first - 0.5 for ts in rx):
        last = f"{first - max(rx):.1f} s" if rx else "ever"
        return f"no packet passed up in the {last} before the first key timeout"
    return ""


def echo(net, eid, srv_net, sizes, count, devs, mtu):
    """mctp-echo ping from NET to EID, served on SRV_NET. A round trip has
    the kernel's key lifetime to complete: the request's tag key, and the
    server's reassembly key, expire 6 s after they are made, and a
    response or fragment that comes later is dropped. 1,025 fragments
    each way (64 KiB at MTU 68) can take longer than that on a loaded TCG
    host. An attempt lost only that way (outlived(), wire_losses()) is
    tried again, up to ATTEMPTS times and RETRIES in the whole area; any
    other failure fails at once. Returns (ok, attempts, output)."""
    out = ""
    for attempt in range(1, ATTEMPTS + 1):
        trace(True)
        before = {d: stats(d) for d in devs}
        srv = echo_server(srv_net, len(sizes) * count)
        try:
            # Longer than the key lifetime: a response later than that is dropped.
            p = ping(net, eid, sizes, count, timeout=4 * KEY_LIFETIME_S * 1000)
            if p.returncode == 0:
                stop(srv)
        finally:
            if srv.returncode is None:
                srv.kill()
                srv.wait()
            events = trace(False)
        out += f"attempt {attempt}: {p.stdout}{p.stderr}"
        if p.returncode == 0 and srv.returncode == 0:
            return True, attempt, out
        settle(devs)
        why = outlived(p, srv, events, devs, mtu)
        lost = wire_losses(devs, before)
        if why or lost:
            out += f"server exit {srv.returncode}; not tried again: {why or '; '.join(lost)}\n"
            break
        out += (f"server exit {srv.returncode}; a key outlived its {KEY_LIFETIME_S} s "
                "in mid-transfer, nothing lost on the wire\n")
        if attempt < ATTEMPTS:
            if not RETRIES[0]:
                out += "not tried again: the area's retries are spent\n"
                break
            RETRIES[0] -= 1
    return False, attempt, out


def test_mctp(a, b, mtu, sizes, count, path="raw I2C"):
    ok, da, db = setup_mctp(a, b, mtu)
    tap(ok, f"{path}, mtu {mtu}: two mctpi2c interfaces configured with mctp-conf "
        "(own networks)")
    if not ok:
        teardown_mctp(a, b)
        return
    before = stats(da)
    retried = 0
    for (net, eid, srv_net, label) in ((1, 9, 2, f"{da} -> {db}"), (2, 8, 1, f"{db} -> {da}")):
        ok, attempts, out = echo(net, eid, srv_net, sizes, count, (da, db), mtu)
        retried += attempts - 1
        again = (f" (attempt {attempts}: the earlier ones outlived the kernel's "
                 f"{KEY_LIFETIME_S}-s key lifetime)" if ok and attempts > 1 else "")
        tap(ok, f"{path}, mtu {mtu}: {label}: {count} messages of each of {len(sizes)} sizes "
            f"({min(sizes)}..{max(sizes)} bytes) echoed intact{again}")
        diag(out)
    # Fragmentation: MCTP carries mtu - 4 payload bytes (+1 type byte in
    # the first) per packet; the requests from da are what da transmitted.
    # An attempt that was tried again sent at most one direction's worth.
    after = stats(da)
    per = mtu - 4
    one = sum(count * -(-(s + 1) // per) for s in sizes)
    want = 2 * one  # da's requests and da's responses
    got = after["tx_packets"] - before["tx_packets"]
    tap(want <= got <= want + retried * one and after["tx_errors"] == before["tx_errors"],
        f"{path}, mtu {mtu}: {da} sent {got} packets for both directions' messages "
        f"(expected {want}: ceil((size + 1) / {per}) each"
        + (f", up to {retried * one} more for {retried} attempt(s) tried again" if retried else "")
        + "), no transmit errors")
    teardown_mctp(a, b)


def test_concurrent(a, b, path="raw I2C"):
    """Requests in both directions at once: each side holds the bus lock for
    its flow while the other answers, and tags pair requests to responses."""
    ok, da, db = setup_mctp(a, b, 254)
    procs = []
    for srv_net in (2, 1):
        procs.append(echo_server(srv_net))
    pings = [subprocess.Popen([os.path.join(BIN, "mctp-echo"), "ping", "--net", str(n),
                               "--eid", str(e), "--sizes", "100,600", "--count", "100",
                               "--timeout", "10000"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for n, e in ((1, 9), (2, 8))]
    rcs = [p.wait(timeout=600) for p in pings]
    diag(f"{da}: {stats(da)}")
    for p in pings:
        if p.returncode:
            diag(p.stderr.read())
    for s in procs:
        s.kill()
        s.wait()
    tap(ok and rcs == [0] * 2, f"{path}: a client in each direction at once, 200 requests each: every "
        f"response intact and to its requester (exit codes {rcs})")
    teardown_mctp(a, b)


def test_malformed(a, b, path="raw I2C"):
    """Frames with a bad command code, byte count or PEC, or cut short,
    written onto the wire: dropped and counted, the receiver stays up. On an
    SMBus-only adapter they go out as I2C block writes (command, then the
    bytes as they are)."""
    ok, da, db = setup_mctp(a, b, 68)
    # A valid MCTP-over-I2C frame to lladdr 0x20 from 0x10: command 0x0f,
    # byte count, source address, MCTP header (ver 1, dest 9, src 8,
    # SOM|EOM|TO, tag 0), type 0x7f, payload.
    body = [0x10 << 1 | 1, 0x01, 9, 8, 0xc8, 0x7f, 1, 2, 3]
    frame = [0x0f, len(body)] + body

    def inject(data, with_pec=True):
        full = data + ([pec([0x20 << 1] + data)] if with_pec else [])
        if path != "raw I2C":
            return run(os.path.join(BIN, "smbus3-block"), a, "0x20", "i2c-write",
                       *full, check=True).returncode == 0
        args = [f"w{len(full)}@0x20"] + [f"{x:#04x}" for x in full]
        return run("i2ctransfer", "-y", a, *args).returncode == 0

    cases = (("wrong command code 0x0e", [0x0e] + frame[1:], True, "rx_dropped"),
             ("byte count too large", [0x0f, len(body) + 5] + body, True, "rx_length_errors"),
             ("byte count too small", [0x0f, len(body) - 2] + body, True, "rx_length_errors"),
             ("bad PEC", frame + [pec([0x40] + frame) ^ 0x5a], False, "rx_crc_errors"),
             ("truncated to 3 bytes", frame[:3], False, "rx_length_errors"))
    for name, data, with_pec, counter in cases:
        before = stats(db)
        sent = inject(data, with_pec)
        time.sleep(0.05)
        after = stats(db)
        tap(sent and after[counter] == before[counter] + 1 and
            after["rx_packets"] == before["rx_packets"],
            f"{path}: malformed frame ({name}): dropped, {db} {counter} +1 "
            f"({before[counter]} -> {after[counter]})")
    # Still answering: a well-formed request written onto the wire by hand,
    # from EID 10 at lladdr 0x52, where a slave-24c02 on the first adapter
    # captures the response as the wire carries it; then a ping round trip.
    sniff = 0x52
    new_device(a, "slave-24c02", 0x1000 | sniff)
    capture = f"/sys/bus/i2c/devices/{a}-{0x1000 | sniff:04x}/slave-eeprom"
    with open(capture, "wb") as f:
        f.write(bytes(256))
    ok &= mctp_conf("route", "add", 10, "via", db).returncode == 0
    ok &= mctp_conf("neigh", "add", 10, "dev", db, "lladdr", f"{sniff:x}").returncode == 0
    payload = list(os.urandom(12))
    req = [sniff << 1 | 1, 0x01, 9, 10, 0xc8, 0x7f] + payload  # SOM|EOM|TO, tag 0
    srv = echo_server(2, 3)
    before_rx, before_tx = stats(db)["rx_packets"], stats(db)["tx_packets"]
    sent = inject([0x0f, len(req)] + req)
    deadline = time.monotonic() + 30  # the answer takes ms; a loaded host, seconds
    while stats(db)["tx_packets"] == before_tx and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)
    wire = open(capture, "rb").read()
    # The eeprom stores what follows its pointer byte, the command code
    # 0x0f: byte count, source address, MCTP header, type, payload, PEC.
    resp = [0x20 << 1 | 1, 0x01, 10, 9, 0xc0, 0x7f] + payload  # SOM|EOM, TO clear, tag 0
    want = [len(resp)] + resp + [pec([sniff << 1, 0x0f, len(resp)] + resp)]
    got = list(wire[0x0f:0x0f + len(want)])
    answered = sent and stats(db)["rx_packets"] == before_rx + 1 and got == want
    if not answered:
        diag(f"response on the wire: {bytes(got).hex(' ')}\nexpected:            "
             f"{bytes(want).hex(' ')}")
    tap(ok and answered, f"{path}: after malformed frames a hand-written request is received "
        f"(+1 rx_packets) and answered on the wire: the same {len(payload)}-byte payload back "
        f"to EID 10 at lladdr {sniff:#x}, response tag, correct PEC")
    p = ping(1, 9, [1, 200], 1)
    stop(srv)
    lines = p.stdout.splitlines()
    echoed = (p.returncode == 0 and srv.returncode == 0 and
              all(any(x.startswith(f"size={n} count=1 ") for x in lines) for n in (1, 200)))
    if not echoed:
        diag(f"ping (exit {p.returncode}): {p.stdout}{p.stderr}server (exit {srv.returncode}): "
             f"{srv.stderr.read()}")
    tap(echoed, f"{path}: after malformed frames, echo round trips of 1 and 200 bytes "
        "come back byte for byte, and the server served all 3 requests")
    delete_device(a, 0x1000 | sniff)
    teardown_mctp(a, b)


def test_mtu_limits(a, b):
    ok, da, db = setup_mctp(a, b, 68)
    # net/core/dev.c dev_validate_mtu() against mctp-i2c's min_mtu (68) and
    # max_mtu (254), with its extack message; the MTU stays as it was.
    for mtu, msg, why in ((67, "mtu less than device minimum", "below DSP0237's 68-byte baseline"),
                          (255, "mtu greater than device maximum",
                           "beyond a 255-byte SMBus block")):
        p = mctp_conf("link", "set", da, "mtu", mtu)
        kept = int(open(f"/sys/class/net/{da}/mtu").read())
        tap(ok and p.returncode != 0 and msg in p.stderr and kept == 68,
            f"mtu {mtu} ({why}) is refused with the kernel's message '{msg}', the MTU stays 68 "
            f"({p.stderr.strip()}; mtu {kept})")
    teardown_mctp(a, b)


def test_bad_config():
    p = run(os.path.join(BIN, "mctp-conf"), "addr", "add", "300", "dev", "lo")
    tap(p.returncode != 0 and "EID" in p.stderr, f"mctp-conf: EID 300 refused ({p.stderr.strip()})")
    p = run(os.path.join(BIN, "mctp-conf"), "route", "add", "9", "via", "nosuchdev")
    tap(p.returncode != 0 and "nosuchdev" in p.stderr,
        f"mctp-conf: unknown device refused ({p.stderr.strip()})")
    p = run(os.path.join(BIN, "mctp-echo"), "ping", "--eid", "9", "--sizes", "0")
    tap(p.returncode == 2, f"mctp-echo: size 0 refused ({p.stderr.strip()})")


def test_smbus_refused():
    """mctp-i2c on an adapter with 32-byte SMBus blocks only (i2c-stub)."""
    insmod("i2c-stub", "chip_addr=0x08")
    stub = buses().get("SMBus stub driver")
    run("dmesg", "-C")
    new_device(stub, "mctp-i2c-interface", 0x1010)
    log = run("dmesg").stdout
    msg = next((x for x in log.splitlines() if "MCTP needs" in x), "")
    tap(not os.path.exists(f"/sys/class/net/mctpi2c{stub}") and "neither raw I2C nor SMBus 3.0" in msg,
        f"mctp-i2c refuses an adapter with only 32-byte SMBus blocks, saying why "
        f"({msg.split('] ', 1)[-1].strip()[:140]})")
    delete_device(stub, 0x1010)
    rmmod("i2c_stub")


def main():
    if not insmod("i2c-crosswire", "pairs=1", "smbus_pairs=1"):
        print("Bail out! i2c-crosswire does not load", flush=True)
        return 1
    bs = buses()
    a, b = bs.get("i2c-crosswire 0a"), bs.get("i2c-crosswire 0b")
    sa, sb = bs.get("i2c-crosswire 1a smbus"), bs.get("i2c-crosswire 1b smbus")
    if not tap(None not in (a, b, sa, sb),
               f"i2c-crosswire: a raw pair ({a}, {b}) and an SMBus-only pair ({sa}, {sb})"):
        return 1
    funcs = run("i2cdetect", "-F", a).stdout
    tap(re.search(r"^I2C\s+yes", funcs, re.M) is not None and
        re.search(r"^SMBus Block Read\s+yes", funcs, re.M) is not None,
        "the adapters do raw I2C and SMBus (with block reads via I2C_M_RECV_LEN)")
    test_targets(a, b)
    test_bad_config()
    test_mtu_limits(a, b)
    # 1 byte to 64 KiB (the largest message MCTP reassembles): 1,025
    # fragments each way at MTU 68.
    sizes, big = [1, 63, 64, 65, 250, 1000, 4096], [16384, 65535]
    test_mctp(a, b, 68, sizes, 3)
    test_mctp(a, b, 254, sizes, 3)
    test_mctp(a, b, 68, big, 1)
    test_mctp(a, b, 254, big, 1)
    test_concurrent(a, b)
    test_malformed(a, b)

    # The same over SMBus 3.0 block writes: the SMBus-only adapters have no
    # raw I2C, so mctp-i2c transmits with I2C_SMBUS3_BLOCK_DATA and PEC.
    funcs = run("i2cdetect", "-F", sa).stdout
    tap(re.search(r"^I2C\s+no", funcs, re.M) is not None and
        re.search(r"^SMBus Block Write\s+yes", funcs, re.M) is not None,
        "the SMBus-only adapters do SMBus block writes but no raw I2C")
    smbus = "SMBus 3.0 blocks"
    test_mctp(sa, sb, 68, sizes, 3, smbus)
    test_mctp(sa, sb, 254, sizes, 3, smbus)
    test_mctp(sa, sb, 68, big, 1, smbus)
    test_mctp(sa, sb, 254, big, 1, smbus)
    test_concurrent(sa, sb, smbus)
    test_malformed(sa, sb, smbus)
    unload_crosswire("raw and SMBus-only pairs")
    test_smbus_refused()

    # A simulated bus clock: transfers take their bit time.
    insmod("i2c-crosswire", "bus_hz=100000")
    bs = buses()
    a, b = bs["i2c-crosswire 0a"], bs["i2c-crosswire 0b"]
    new_device(b, "slave-24c02", 0x1050)
    bits = 2 + 10 + 9 + 10 + 256 * 9  # start/stop, address+w, pointer, address+r, data
    best = 1e9
    for _ in range(3):
        t = time.monotonic()
        p = run("i2ctransfer", "-y", a, "w1@0x50", "0x00", "r256")
        best = min(best, time.monotonic() - t)
    tap(p.returncode == 0 and best >= bits / 100000,
        f"bus_hz=100000: a 256-byte eeprom read takes at least its {bits} bit times "
        f"({best * 1000:.1f} ms >= {bits / 100:.1f} ms)")
    delete_device(b, 0x1050)
    unload_crosswire("bus_hz=100000 pair")

    return plan()


if __name__ == "__main__":
    sys.exit(main())
