#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""inject.py DEV PROTO SPORT DPORT [COUNT [SRC]]: send COUNT (default 1) IPv4
TCP or UDP frames out of DEV with AF_PACKET. With DEV's egress looped
back to its ingress (tests/ovs: prio qdisc + matchall mirred ingress
redirect), they arrive on DEV as if received: the way traffic reaches
Open vSwitch on a netdevsim port, which has no receive path of its own."""
import socket
import struct
import sys

SRC_MAC = bytes.fromhex("020000000001")
DST_MAC = bytes.fromhex("020000000002")


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(proto, sport, dport, src="10.0.0.1"):
    src, dst = socket.inet_aton(src), socket.inet_aton("10.0.0.2")
    if proto == "tcp":
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 8192, 0, 0)
        num = 6
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8, 0)
        num = 17
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, num, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return DST_MAC + SRC_MAC + b"\x08\x00" + ip + l4


def main():
    dev, proto, sport, dport = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    src = sys.argv[6] if len(sys.argv) > 6 else "10.0.0.1"
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0x0800))
    for _ in range(count):
        s.send(frame(proto, sport, dport, src))
    return 0


if __name__ == "__main__":
    sys.exit(main())
