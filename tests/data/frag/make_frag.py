#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes frag.pcap: DNS responses carried in IPv4 and IPv6 fragments, in
order, reversed, shuffled, with a duplicate, with overlaps, with one fragment
missing, with IPv4 options and with an IPv6 hop-by-hop header, for the
fragment reassembly of include/gnio/device/pkt/frag.hpp.

    /usr/bin/python3 tests/data/frag/make_frag.py tests/data/frag/frag.pcap

Fragments are cut from the bytes of the whole datagram (scapy builds it and
its UDP checksum), so each reassembles to exactly those bytes. One frame per
second. The comment before each group says what tshark 4.0 makes of it
(frag.tshark.tsv, next to the capture, records its output). Needs python3-scapy.
"""
import struct
import sys

from scapy.all import DNS, DNSQR, DNSRR, IP, IPv6, IPOption_RR, IPv6ExtHdrHopByHop, UDP, Ether, wrpcap

MAC = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def dns_response(qid, name, answers):
    an = None
    for i in range(answers):
        rr = DNSRR(rrname=name, type="A", ttl=300, rdata="192.0.2.%d" % (i + 1))
        an = rr if an is None else an / rr
    return DNS(id=qid, qr=1, aa=1, rd=1, ra=1, qd=DNSQR(qname=name, qtype="A"), an=an)


def csum(b):
    if len(b) % 2:
        b += b"\x00"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def v4_datagram(qid, answers, options=None, src="192.0.2.53", dst="198.51.100.7"):
    ip = IP(src=src, dst=dst, id=qid, ttl=64)
    if options:
        ip.options = options
    return bytes(ip / UDP(sport=53, dport=40000 + qid % 1000) / dns_response(qid, "frag%d.example" % qid, answers))


def v4_frag(d, off, n, more, data=None):
    """IPv4 fragment of datagram d: payload bytes [off, off+n) (or `data`)."""
    hl = (d[0] & 15) * 4
    body = d[hl + off:hl + off + n] if data is None else data
    h = bytearray(d[:hl])
    struct.pack_into("!H", h, 2, hl + len(body))
    struct.pack_into("!H", h, 6, (0x2000 if more else 0) | (off // 8))
    struct.pack_into("!H", h, 10, 0)
    struct.pack_into("!H", h, 10, csum(bytes(h)))
    return bytes(h) + body


def v6_datagram(qid, answers, hbh=False):
    ip = IPv6(src="2001:db8::53", dst="2001:db8::7", hlim=64)
    l4 = UDP(sport=53, dport=40000 + qid % 1000) / dns_response(qid, "frag%d.example" % qid, answers)
    return bytes(ip / IPv6ExtHdrHopByHop() / l4) if hbh else bytes(ip / l4)


def v6_frag(d, fid, off, n, more, data=None):
    """IPv6 fragment of datagram d (fixed header, optional hop-by-hop, UDP)."""
    unfrag_len = 40 + (8 * (d[41] + 1) if d[6] == 0 else 0)
    unfrag = bytearray(d[:unfrag_len])
    nh_pos = 40 if d[6] == 0 else 6
    nh = unfrag[nh_pos]
    unfrag[nh_pos] = 44
    body = d[unfrag_len + off:unfrag_len + off + n] if data is None else data
    fh = struct.pack("!BBHI", nh, 0, off | (1 if more else 0), fid)
    struct.pack_into("!H", unfrag, 4, unfrag_len - 40 + 8 + len(body))
    return bytes(unfrag) + fh + body


def cuts(total, size):
    """(offset, length, more) for fragments of `size` bytes (a multiple of 8)."""
    out, off = [], 0
    while off < total:
        n = min(size, total - off)
        out.append((off, n, off + n < total))
        off += n
    return out


def main(path):
    frames = []
    # 1. IPv4, three fragments in order: reassembled at the third.
    d = v4_datagram(101, 12)
    frames += [v4_frag(d, o, n, m) for o, n, m in cuts(len(d) - 20, 96)]
    # 2. IPv4, reversed: reassembled at the first fragment, which arrives last.
    d = v4_datagram(102, 12)
    frames += [v4_frag(d, o, n, m) for o, n, m in reversed(cuts(len(d) - 20, 96))]
    # 3. IPv4, shuffled: the middle one, the last, the first, then the rest.
    d = v4_datagram(103, 16)
    c = cuts(len(d) - 20, 64)
    order = [2, len(c) - 1, 0] + [i for i in range(1, len(c) - 1) if i != 2]
    frames += [v4_frag(d, *c[i]) for i in order]
    # 4. IPv4 with a duplicate of its first fragment: reassembled at the last.
    d = v4_datagram(104, 12)
    c = cuts(len(d) - 20, 96)
    frames += [v4_frag(d, *c[0]), v4_frag(d, *c[0])] + [v4_frag(d, *x) for x in c[1:]]
    # 5. IPv4, one fragment missing: never reassembled.
    d = v4_datagram(105, 12)
    c = cuts(len(d) - 20, 96)
    frames += [v4_frag(d, *x) for x in c[:1] + c[2:]]
    # 6. IPv4 with a record-route option (kept in the reassembled header).
    d = v4_datagram(106, 12, options=[IPOption_RR(routers=["0.0.0.0"] * 2)])
    frames += [v4_frag(d, o, n, m) for o, n, m in cuts(len(d) - (d[0] & 15) * 4, 128)]
    # 7. IPv4, overlap with the same bytes: the second fragment starts inside
    #    the first ([0,96) then [64,160) then the rest).
    d = v4_datagram(107, 12)
    total = len(d) - 20
    frames += [v4_frag(d, 0, 96, True), v4_frag(d, 64, 96, True), v4_frag(d, 160, total - 160, False)]
    # 8. IPv4, overlap with different bytes: [64,96) arrives first with
    #    garbage, then [0,96) with the real bytes, then the rest.
    d = v4_datagram(108, 12)
    total = len(d) - 20
    frames += [v4_frag(d, 64, 32, True, data=b"\xee" * 32), v4_frag(d, 0, 96, True),
               v4_frag(d, 96, total - 96, False)]
    # 9. IPv6, in order.
    d = v6_datagram(201, 12)
    frames += [v6_frag(d, 0x1000201, o, n, m) for o, n, m in cuts(len(d) - 40, 96)]
    # 10. IPv6 with a hop-by-hop header before the fragment header, reversed.
    d = v6_datagram(202, 12, hbh=True)
    frames += [v6_frag(d, 0x1000202, o, n, m) for o, n, m in reversed(cuts(len(d) - 48, 96))]
    # 11. IPv6, overlap with different bytes (RFC 5722: drop the datagram).
    d = v6_datagram(203, 12)
    total = len(d) - 40
    frames += [v6_frag(d, 0x1000203, 64, 32, True, data=b"\xee" * 32), v6_frag(d, 0x1000203, 0, 96, True),
               v6_frag(d, 0x1000203, 96, total - 96, False)]
    # 12. IPv6, an exact duplicate of the last fragment after a gap is filled.
    d = v6_datagram(204, 12)
    c = cuts(len(d) - 40, 96)
    frames += [v6_frag(d, 0x1000204, *c[-1]), v6_frag(d, 0x1000204, *c[-1])] + \
              [v6_frag(d, 0x1000204, *x) for x in c[:-1]]
    # 13. Two IPv4 datagrams interleaved, same addresses, different ids.
    a, b = v4_datagram(109, 12), v4_datagram(110, 12)
    ca, cb = cuts(len(a) - 20, 96), cuts(len(b) - 20, 96)
    for i in range(max(len(ca), len(cb))):
        if i < len(ca):
            frames.append(v4_frag(a, *ca[i]))
        if i < len(cb):
            frames.append(v4_frag(b, *cb[i]))
    pkts = []
    for i, f in enumerate(frames):
        t = 0x0800 if f[0] >> 4 == 4 else 0x86DD
        p = Ether(type=t, **MAC) / f
        p.time = 1700000000 + i
        pkts.append(p)
    wrpcap(path, pkts)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "frag.pcap")
