#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes dns_binary.pcap: DNS queries whose names hold bytes that are not
printable or not UTF-8 (as DNS tunnels send them), for the escaping of names
in gnio pp's text and JSON output.

    python3 tests/data/make_dns_binary.py tests/data/dns_binary.pcap

Every name is sent as its own query a different number of times, so the
counts tell the names apart. Names are built label by label on the wire (a
length byte, then the bytes), so a label may contain '.', NUL or anything.
Needs python3-scapy.
"""
import struct
import sys

from scapy.all import Ether, IP, UDP, Raw, wrpcap

# (labels, times sent)
NAMES = [
    ([b"www", b"example", b"com"], 1),
    ([b"a\x00b", b"example"], 2),             # NUL inside a label
    ([b"\x1b[31mred", b"test"], 3),           # ESC: a terminal colour sequence
    ([b"\xff\xfe", b"bin"], 4),               # bytes >= 0x80, not UTF-8
    ([b"\xc3\x28", b"\xe2\x82", b"utf"], 5),  # invalid UTF-8 sequences
    ([b"caf\xc3\xa9", b"utf8"], 6),           # valid UTF-8, still not ASCII
    ([b"a.b", b"dot"], 7),                    # a dot inside a label
    ([b"back\\slash", b"x"], 8),              # a backslash
    ([b"sp ace", b"q\"uote", b"del\x7f"], 9), # space, '"', DEL
    ([b"a" * 63, b"b" * 40], 10),             # long labels, 105 bytes on the wire
    ([b"t\nl\r", b"x" * 20], 11),             # newline and carriage return
]


def qname(labels):
    out = b""
    for l in labels:
        assert 0 < len(l) < 64
        out += bytes([len(l)]) + l
    return out + b"\x00"


def main(path):
    pkts = []
    qid = 1
    for labels, times in NAMES:
        for _ in range(times):
            msg = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname(labels) + struct.pack("!HH", 1, 1)
            pkts.append(
                Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                / IP(src="10.0.0.1", dst="10.0.0.53")
                / UDP(sport=40000 + qid, dport=53)
                / Raw(msg)
            )
            qid += 1
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i * 0.001
    wrpcap(path, pkts)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "dns_binary.pcap")
