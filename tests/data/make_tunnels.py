#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes small captures of tunnels, IP fragments and TCP streams into a
folder (tests/data/gen/), for gnio pp's decapsulation, reassembly and
per-message counting:

    /usr/bin/python3 tests/data/make_tunnels.py tests/data/gen

Every tunnel file carries the same inner traffic: a DNS query and its
response, an ICMP echo request and reply, a TCP connection with one HTTP GET
and its response, and a UDP flow of two datagrams. Outer and inner headers
are built byte by byte here (scapy builds the inner IP/TCP/UDP/ICMP/DNS
packets and their checksums), timestamps are fixed, and the pcap file is
written here too, so every run gives the same bytes. Only documentation
addresses (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) and
locally administered MAC addresses. Needs python3-scapy (Debian), run with
/usr/bin/python3.
"""
import os
import struct
import sys

from scapy.all import (DNS, DNSQR, DNSRR, ICMP, IP, IPv6, TCP, UDP, Raw,
                       ICMPv6EchoRequest, ICMPv6EchoReply)

MAC_A = bytes.fromhex("020000000001")
MAC_B = bytes.fromhex("020000000002")
MAC_C = bytes.fromhex("020000000003")
MAC_D = bytes.fromhex("020000000004")

ET_IP4, ET_IP6, ET_VLAN, ET_QINQ = 0x0800, 0x86DD, 0x8100, 0x88A8
ET_TEB, ET_MPLS, ET_PPPOE_D, ET_PPPOE_S = 0x6558, 0x8847, 0x8863, 0x8864

T0 = 1700000000  # 2023-11-14 22:13:20 UTC


# ---------------------------------------------------------------------------
# pcap writer
# ---------------------------------------------------------------------------

def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            usec = i * 1000
            f.write(struct.pack("<IIII", T0 + usec // 1000000, usec % 1000000,
                                len(fr), len(fr)))
            f.write(fr)


# ---------------------------------------------------------------------------
# Inner traffic: IPv4 or IPv6 packets (bytes)
# ---------------------------------------------------------------------------

def ip(src, dst, v6, payload, nh):
    if v6:
        return IPv6(src=src, dst=dst, nh=nh, hlim=64) / payload
    return IP(src=src, dst=dst, proto=nh, ttl=64, id=0x1234, flags="DF") / payload


def l3(src, dst, v6, l4):
    """An IP packet around a scapy L4 layer; returns bytes."""
    if v6:
        return bytes(IPv6(src=src, dst=dst, hlim=64) / l4)
    return bytes(IP(src=src, dst=dst, ttl=64, id=0x1234, flags="DF") / l4)


class Tcp:
    """One TCP connection; c() and s() return the packets each side sends."""

    def __init__(self, cli, srv, sport, dport, v6=False, cseq=1000, sseq=5000):
        self.cli, self.srv, self.sport, self.dport, self.v6 = cli, srv, sport, dport, v6
        self.cseq, self.sseq = cseq, sseq

    def _seg(self, from_client, data, flags, seq=None):
        if from_client:
            s, d, sp, dp, my, peer = self.cli, self.srv, self.sport, self.dport, self.cseq, self.sseq
        else:
            s, d, sp, dp, my, peer = self.srv, self.cli, self.dport, self.sport, self.sseq, self.cseq
        if seq is None:
            seq = my
        ack = peer if "A" in flags else 0
        pkt = l3(s, d, self.v6, TCP(sport=sp, dport=dp, seq=seq, ack=ack, flags=flags,
                                    window=65535) / Raw(data) if data else
                 TCP(sport=sp, dport=dp, seq=seq, ack=ack, flags=flags, window=65535))
        adv = len(data) + (1 if ("S" in flags or "F" in flags) else 0)
        if seq == my:
            if from_client:
                self.cseq += adv
            else:
                self.sseq += adv
        return pkt

    def c(self, data=b"", flags="PA", seq=None):
        return self._seg(True, data, flags, seq)

    def s(self, data=b"", flags="PA", seq=None):
        return self._seg(False, data, flags, seq)

    def handshake(self):
        return [self.c(flags="S"), self.s(flags="SA"), self.c(flags="A")]

    def close(self):
        return [self.c(flags="FA"), self.s(flags="FA"), self.c(flags="A")]


HTTP_GET = b"GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: gnio-test\r\n\r\n"
HTTP_OK = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n"
           b"hello world\n")


def dns_query(qid, name):
    return DNS(id=qid, rd=1, qd=DNSQR(qname=name, qtype="A"))


def dns_response(qid, name, addr):
    return DNS(id=qid, qr=1, aa=1, rd=1, ra=1, qd=DNSQR(qname=name, qtype="A"),
               an=DNSRR(rrname=name, type="A", ttl=300, rdata=addr))


def inner_set(v6, n=0):
    """DNS query/response, ICMP echo request/reply, TCP with an HTTP GET and
    its response, a UDP flow of two datagrams. n varies ports and ids."""
    if v6:
        a, b = "2001:db8:1::10", "2001:db8:2::20"
    else:
        a, b = "198.51.100.10", "203.0.113.20"
    name = "www%d.example.com" % n
    out = [
        l3(a, b, v6, UDP(sport=33000 + n, dport=53) / dns_query(0x100 + n, name)),
        l3(b, a, v6, UDP(sport=53, dport=33000 + n) /
           dns_response(0x100 + n, name, "2001:db8::80" if False else "192.0.2.80")),
    ]
    if v6:
        out += [l3(a, b, v6, ICMPv6EchoRequest(id=0x200 + n, seq=1, data=b"ping" * 8)),
                l3(b, a, v6, ICMPv6EchoReply(id=0x200 + n, seq=1, data=b"ping" * 8))]
    else:
        out += [l3(a, b, v6, ICMP(type=8, id=0x200 + n, seq=1) / Raw(b"ping" * 8)),
                l3(b, a, v6, ICMP(type=0, id=0x200 + n, seq=1) / Raw(b"ping" * 8))]
    t = Tcp(a, b, 40000 + n, 80, v6)
    out += t.handshake() + [t.c(HTTP_GET), t.s(HTTP_OK)]
    out += [l3(a, b, v6, UDP(sport=34000 + n, dport=5000) / Raw(b"udp flow %d #1" % n)),
            l3(b, a, v6, UDP(sport=5000, dport=34000 + n) / Raw(b"udp flow %d #2" % n))]
    return out


def is_v6(pkt):
    return pkt[0] >> 4 == 6


# ---------------------------------------------------------------------------
# Encapsulations: each takes an inner IP packet (bytes) and returns bytes
# ---------------------------------------------------------------------------

def eth(pkt, src=MAC_A, dst=MAC_B, tags=()):
    """Ethernet around an IP packet; tags: (tpid, vid) outermost first."""
    hdr = dst + src
    for tpid, vid in tags:
        hdr += struct.pack("!HH", tpid, vid)
    return hdr + struct.pack("!H", ET_IP6 if is_v6(pkt) else ET_IP4) + pkt


def eth_frames(pkts, **kw):
    return [eth(p, **kw) for p in pkts]


OUT4 = ("192.0.2.1", "192.0.2.2")
OUT6 = ("2001:db8:ffff::1", "2001:db8:ffff::2")


def outer_ip(payload, proto, v6=False, addrs=None):
    src, dst = addrs or (OUT6 if v6 else OUT4)
    return bytes(ip(src, dst, v6, Raw(payload), proto))


def ipip(pkt, outer_v6=False, addrs=None):
    return outer_ip(pkt, 41 if is_v6(pkt) else 4, outer_v6, addrs)


def gre_hdr(proto, key=None, seq=None):
    flags = (0x2000 if key is not None else 0) | (0x1000 if seq is not None else 0)
    h = struct.pack("!HH", flags, proto)
    if key is not None:
        h += struct.pack("!I", key)
    if seq is not None:
        h += struct.pack("!I", seq)
    return h


def gre(pkt, key=None, seq=None, outer_v6=False, addrs=None):
    proto = ET_IP6 if is_v6(pkt) else ET_IP4
    return outer_ip(gre_hdr(proto, key, seq) + pkt, 47, outer_v6, addrs)


def gre_eth(frame, key=None, addrs=None):
    return outer_ip(gre_hdr(ET_TEB, key) + frame, 47, False, addrs)


def erspan2(frame, seq, session=7, vlan=0):
    # ver=1, vlan; cos=0, en=3 (frame kept its tags), t=0, session; index
    h = struct.pack("!HHI", (1 << 12) | vlan, (3 << 11) | session, 0x00001)
    return outer_ip(gre_hdr(0x88BE, seq=seq) + h + frame, 47)


def erspan3(frame, seq, session=9, vlan=0, ts=0x01020304):
    # ver=2, vlan; cos=0, bso=0, t=0, session; timestamp; sgt; p/ft/hw/d/gra/o
    h = struct.pack("!HHIHH", (2 << 12) | vlan, session, ts, 0x0042, (1 << 1))
    return outer_ip(gre_hdr(0x22EB, seq=seq) + h + frame, 47)


def udp_outer(payload, dport, sport=49152, v6=False, addrs=None):
    src, dst = addrs or (OUT6 if v6 else OUT4)
    return l3(src, dst, v6, UDP(sport=sport, dport=dport) / Raw(payload))


def vxlan(frame, vni=100, addrs=None):
    return udp_outer(struct.pack("!II", 0x08000000, vni << 8) + frame, 4789, addrs=addrs)


def geneve(frame, vni=200, options=b"", addrs=None):
    assert len(options) % 4 == 0
    h = struct.pack("!BBHI", len(options) // 4, 0, ET_TEB, vni << 8) + options
    return udp_outer(h + frame, 6081, addrs=addrs)


def geneve_opt(cls, typ, data):
    assert len(data) % 4 == 0
    return struct.pack("!HBB", cls, typ, len(data) // 4) + data


def gtpu(pkt, teid=0x1000, ext=None, seq=None, addrs=None):
    """GTP-U G-PDU; ext: list of (type, body) extension headers, each body
    padded so that len(body) + 2 is a multiple of 4."""
    flags = 0x30
    opt = b""
    if ext or seq is not None:
        flags |= (0x04 if ext else 0) | (0x02 if seq is not None else 0)
        opt = struct.pack("!HBB", seq or 0, 0, ext[0][0] if ext else 0)
        for i, (typ, body) in enumerate(ext or []):
            nxt = ext[i + 1][0] if i + 1 < len(ext) else 0
            assert (len(body) + 2) % 4 == 0
            opt += struct.pack("!B", (len(body) + 2) // 4) + body + struct.pack("!B", nxt)
    body = opt + pkt
    return udp_outer(struct.pack("!BBHI", flags, 255, len(body), teid) + body, 2152,
                     sport=2152, addrs=addrs)


def mpls(pkt, labels, src=MAC_A, dst=MAC_B):
    h = b""
    for i, lab in enumerate(labels):
        bos = 1 if i == len(labels) - 1 else 0
        h += struct.pack("!I", (lab << 12) | (bos << 8) | 64)
    return dst + src + struct.pack("!H", ET_MPLS) + h + pkt


def pppoe_session(pkt, session=0x0011):
    ppp = struct.pack("!H", 0x0057 if is_v6(pkt) else 0x0021) + pkt
    return (MAC_B + MAC_A + struct.pack("!HBBHH", ET_PPPOE_S, 0x11, 0, session, len(ppp))
            + ppp)


def pppoe_discovery(code, session=0, tags=b""):
    return (b"\xff" * 6 if code == 0x09 else MAC_B) + MAC_A + struct.pack(
        "!HBBHH", ET_PPPOE_D, 0x11, code, session, len(tags)) + tags


def ptag(typ, val):
    return struct.pack("!HH", typ, len(val)) + val


# ---------------------------------------------------------------------------
# Fragmentation
# ---------------------------------------------------------------------------

def frag4(pkt, cuts, ident):
    """IPv4 fragments of pkt (an IPv4 packet with a 20-byte header); cuts are
    payload offsets (multiples of 8) or (start, end) pairs to allow overlap."""
    p = IP(pkt)
    payload = bytes(p.payload)
    spans = cuts_to_spans(cuts, len(payload))
    out = []
    for s, e in spans:
        more = e < len(payload)
        f = IP(src=p.src, dst=p.dst, proto=p.proto, ttl=64, id=ident,
               flags="MF" if more else 0, frag=s // 8) / Raw(payload[s:e])
        out.append(bytes(f))
    return out


def frag6(pkt, cuts, ident):
    from scapy.all import IPv6ExtHdrFragment
    p = IPv6(pkt)
    nh = p.nh
    payload = bytes(p.payload)
    spans = cuts_to_spans(cuts, len(payload))
    out = []
    for s, e in spans:
        more = 1 if e < len(payload) else 0
        f = (IPv6(src=p.src, dst=p.dst, hlim=64) /
             IPv6ExtHdrFragment(nh=nh, offset=s // 8, m=more, id=ident) / Raw(payload[s:e]))
        out.append(bytes(f))
    return out


def cuts_to_spans(cuts, total):
    if cuts and isinstance(cuts[0], tuple):
        return [(s, min(e, total)) for s, e in cuts]
    edges = [0] + list(cuts) + [total]
    return list(zip(edges[:-1], edges[1:]))


def big_dns_response(qid, name, n_txt):
    an = None
    for i in range(n_txt):
        rr = DNSRR(rrname=name, type="TXT", ttl=300,
                   rdata=("record %02d " % i) + "x" * 180)
        an = rr if an is None else an / rr
    return DNS(id=qid, qr=1, aa=1, rd=1, ra=1, qd=DNSQR(qname=name, qtype="TXT"), an=an)


def dns_pair(v6, qid, name, n_txt, sport):
    if v6:
        a, b = "2001:db8:1::10", "2001:db8:2::53"
    else:
        a, b = "198.51.100.10", "203.0.113.53"
    q = l3(a, b, v6, UDP(sport=sport, dport=53) / DNS(id=qid, rd=1,
                                                       qd=DNSQR(qname=name, qtype="TXT")))
    r = l3(b, a, v6, UDP(sport=53, dport=sport) / big_dns_response(qid, name, n_txt))
    return q, r


def fragment_cases(v6):
    frag = frag6 if v6 else frag4
    out = []
    # in order, 2 fragments
    q, r = dns_pair(v6, 0x501, "two.example.com", 6, 35001)
    out += [q] + frag(r, [800], 0x101)
    # in order, 3 fragments
    q, r = dns_pair(v6, 0x502, "three.example.com", 8, 35002)
    out += [q] + frag(r, [544, 1088], 0x102)
    # out of order, 4 fragments: last, first, third, second
    q, r = dns_pair(v6, 0x503, "ooo.example.com", 10, 35003)
    f = frag(r, [512, 1024, 1536], 0x103)
    out += [q, f[3], f[0], f[2], f[1]]
    # a duplicate fragment (the first one twice)
    q, r = dns_pair(v6, 0x504, "dup.example.com", 6, 35004)
    f = frag(r, [640], 0x104)
    out += [q, f[0], f[0], f[1]]
    # overlapping fragments (same bytes in the overlap)
    q, r = dns_pair(v6, 0x505, "overlap.example.com", 6, 35005)
    f = frag(r, [(0, 720), (640, 4000)], 0x105)
    out += [q] + f
    # a missing fragment: first and last of three, never completed
    q, r = dns_pair(v6, 0x506, "missing.example.com", 8, 35006)
    f = frag(r, [544, 1088], 0x106)
    out += [q, f[0], f[2]]
    # a fragmented ICMP echo request and its (unfragmented) reply
    if v6:
        a, b = "2001:db8:1::10", "2001:db8:2::53"
        req = l3(a, b, True, ICMPv6EchoRequest(id=0x77, seq=1, data=b"E" * 1800))
        rep = l3(b, a, True, ICMPv6EchoReply(id=0x77, seq=1, data=b"R" * 64))
    else:
        a, b = "198.51.100.10", "203.0.113.53"
        req = l3(a, b, False, ICMP(type=8, id=0x77, seq=1) / Raw(b"E" * 1800))
        rep = l3(b, a, False, ICMP(type=0, id=0x77, seq=1) / Raw(b"R" * 64))
    out += frag(req, [1200], 0x107) + [rep]
    return eth_frames(out)


def fragments_in_tunnel():
    out = []
    # inner IPv4 fragments inside GRE
    q, r = dns_pair(False, 0x601, "gre-frag.example.com", 6, 36001)
    out += [eth(gre(q, key=1))] + [eth(gre(f, key=1)) for f in frag4(r, [800], 0x201)]
    # inner IPv6 fragments inside VXLAN
    q, r = dns_pair(True, 0x602, "vxlan-frag.example.com", 6, 36002)
    out += [eth(vxlan(eth(q, MAC_C, MAC_D)))]
    out += [eth(vxlan(eth(f, MAC_C, MAC_D))) for f in frag6(r, [800], 0x202)]
    # the outer IPv4 packet fragmented: IP-in-IP with a large DNS response inside
    q, r = dns_pair(False, 0x603, "outer-frag.example.com", 6, 36003)
    out += [eth(ipip(q))] + eth_frames(frag4(ipip(r), [720], 0x203))
    return out


# ---------------------------------------------------------------------------
# TCP streams
# ---------------------------------------------------------------------------

C4, S4 = "198.51.100.10", "203.0.113.80"


def http_split():
    out = []
    t = Tcp(C4, S4, 41001, 80)
    out += t.handshake() + [t.c(HTTP_GET[:20]), t.c(HTTP_GET[20:]), t.s(HTTP_OK)]
    t = Tcp(C4, S4, 41002, 80)
    out += t.handshake() + [t.c(HTTP_GET[:10]), t.c(HTTP_GET[10:40]), t.c(HTTP_GET[40:]),
                            t.s(HTTP_OK)]
    return eth_frames(out)


def http_pipelined():
    out = []
    g2 = HTTP_GET.replace(b"/index.html", b"/a") + HTTP_GET.replace(b"/index.html", b"/b")
    t = Tcp(C4, S4, 41011, 80)
    out += t.handshake() + [t.c(g2), t.s(HTTP_OK + HTTP_OK)]
    g3 = b"".join(HTTP_GET.replace(b"/index.html", b"/" + x) for x in (b"x", b"y", b"z"))
    t = Tcp(C4, S4, 41012, 80)
    out += t.handshake() + [t.c(g3), t.s(HTTP_OK), t.s(HTTP_OK), t.s(HTTP_OK)]
    return eth_frames(out)


def http_post_body():
    body = b"GET / HTTP/1.1\r\nHost: not.a.request\r\n\r\n"
    req = (b"POST /upload HTTP/1.1\r\nHost: www.example.com\r\n"
           b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    t = Tcp(C4, S4, 41021, 80)
    return eth_frames(t.handshake() + [t.c(req), t.s(HTTP_OK)])


def http_content_length():
    body = b"".join(b"line %03d of a body sent in several segments\n" % i for i in range(40))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body)
    resp = head + body
    t = Tcp(C4, S4, 41031, 80)
    out = t.handshake() + [t.c(HTTP_GET)]
    for i in range(0, len(resp), 600):
        out.append(t.s(resp[i:i + 600]))
    out.append(t.c(flags="A"))
    return eth_frames(out)


def http_chunked():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = [b"first chunk\n", b"second chunk, a bit longer\n", b"third\n"]
    t = Tcp(C4, S4, 41041, 80)
    out = t.handshake() + [t.c(HTTP_GET), t.s(head)]
    for c in chunks:
        out.append(t.s(b"%x\r\n" % len(c) + c + b"\r\n"))
    out.append(t.s(b"0\r\n\r\n"))
    out.append(t.c(flags="A"))
    return eth_frames(out)


def http_retransmit():
    t = Tcp(C4, S4, 41051, 80)
    out = t.handshake()
    seq = t.cseq
    out.append(t.c(HTTP_GET))
    out.append(t.c(HTTP_GET, seq=seq))  # the same segment again
    out.append(t.s(HTTP_OK))
    return eth_frames(out)


def tcp_out_of_order():
    t = Tcp(C4, S4, 41061, 80)
    out = t.handshake()
    a, b = t.c(HTTP_GET[:30]), t.c(HTTP_GET[30:])
    out += [b, a]
    r = HTTP_OK
    x, y, z = t.s(r[:25]), t.s(r[25:50]), t.s(r[50:])
    out += [x, z, y]
    return eth_frames(out)


def dns_tcp_msg(qid, name, response):
    d = dns_response(qid, name, "192.0.2.53") if response else dns_query(qid, name)
    b = bytes(d)
    return struct.pack("!H", len(b)) + b


def dns_tcp_two_in_one():
    t = Tcp(C4, "203.0.113.53", 42001, 53)
    q = dns_tcp_msg(0x701, "a.example.com", False) + dns_tcp_msg(0x702, "b.example.com", False)
    r = dns_tcp_msg(0x701, "a.example.com", True) + dns_tcp_msg(0x702, "b.example.com", True)
    return eth_frames(t.handshake() + [t.c(q), t.s(r)] + t.close())


def dns_tcp_split():
    t = Tcp(C4, "203.0.113.53", 42011, 53)
    q = dns_tcp_msg(0x711, "split.example.com", False)
    r = dns_tcp_msg(0x711, "split.example.com", True)
    return eth_frames(t.handshake() + [t.c(q[:12]), t.c(q[12:]), t.s(r[:20]), t.s(r[20:])]
                      + t.close())


def dns_tcp_length_prefix():
    t = Tcp(C4, "203.0.113.53", 42021, 53)
    q = dns_tcp_msg(0x721, "prefix.example.com", False)
    r = dns_tcp_msg(0x721, "prefix.example.com", True)
    return eth_frames(t.handshake() + [t.c(q[:2]), t.c(q[2:]), t.s(r[:1]), t.s(r[1:])]
                      + t.close())


# ---------------------------------------------------------------------------
# Parser bounds and framing limits (issue 31, R11): what tshark still decodes
# ---------------------------------------------------------------------------

def mpls_raw(pkt, entries, src=MAC_A, dst=MAC_B):
    """MPLS with label stack entries as given (label, bottom-of-stack bit)."""
    h = b"".join(struct.pack("!I", (lab << 12) | (bos << 8) | 64) for lab, bos in entries)
    return dst + src + struct.pack("!H", ET_MPLS) + h + pkt


def mpls_deep():
    """9 labels (one past the parser's 8) over IPv4, and 2 labels with no
    bottom-of-stack bit (the stack runs into the IP header)."""
    p = inner_set(False, 90)
    return ([mpls_raw(x, [(900 + i, 1 if i == 8 else 0) for i in range(9)]) for x in p[:4]] +
            [mpls_raw(x, [(910, 0), (911, 0)]) for x in p[:2]])


def vlan_deep():
    """20 802.1Q tags (the parser reads 4) before IPv4 DNS and ICMP echo."""
    return [eth(x, tags=[(ET_VLAN, 100 + i) for i in range(20)]) for x in inner_set(False, 91)[:4]]


def ipv6_many_opts():
    """100 destination-option headers (the parser walks 8) before UDP/DNS and
    ICMPv6 echo."""
    from scapy.all import IPv6ExtHdrDestOpt
    out = []
    for x in inner_set(True, 92)[:4]:
        v6 = IPv6(x)
        l4 = v6.payload
        ext = IPv6ExtHdrDestOpt()
        for _ in range(99):
            ext = ext / IPv6ExtHdrDestOpt()
        out.append(eth(bytes(IPv6(src=v6.src, dst=v6.dst, hlim=64) / ext / l4)))
    return out


def pppoe_pfc():
    """PPPoE sessions whose PPP protocol field is compressed to one byte
    (RFC 1661 section 6.5: 0x21 IPv4, 0x57 IPv6)."""
    out = []
    for x in inner_set(False, 93)[:4] + inner_set(True, 94)[:4]:
        ppp = struct.pack("!B", 0x57 if is_v6(x) else 0x21) + x
        out.append(MAC_B + MAC_A + struct.pack("!HBBHH", ET_PPPOE_S, 0x11, 0, 0x0012, len(ppp)) + ppp)
    return out


def http_chunk_overflow():
    """A chunked response whose chunk size (20 hex digits) overflows 64 bits,
    then a second request and response on the same connection."""
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    t = Tcp(C4, S4, 41071, 80)
    out = t.handshake() + [t.c(HTTP_GET), t.s(head + b"FFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n"),
                           t.c(HTTP_GET), t.s(HTTP_OK)]
    return eth_frames(out + t.close())


def http_huge_length():
    """A POST with Content-Length 4294967300 (more than 32 bits) whose body
    never completes, on one connection; then a GET on a second connection."""
    req = (b"POST /upload HTTP/1.1\r\nHost: www.example.com\r\n"
           b"Content-Length: 4294967300\r\n\r\n")
    t = Tcp(C4, S4, 41081, 80)
    out = t.handshake() + [t.c(req), t.c(b"x" * 200), t.s(HTTP_OK.replace(b"200 OK", b"100 Continue"))]
    u = Tcp(C4, S4, 41082, 80)
    out += u.handshake() + [u.c(HTTP_GET), u.s(HTTP_OK)]
    return eth_frames(out)


# ---------------------------------------------------------------------------
# Classes of difference from tshark seen on real captures (issue 31, point 10)
# ---------------------------------------------------------------------------

def dns_cut_first_fragment():
    """DNS responses in first fragments (MF set, offset 0) whose frames end
    long before the IP total length (the sender cut them): never
    reassembled, tshark decodes the DNS inside what is there."""
    out = []
    for i in range(3):
        name = "cut%d.example.com" % i
        r = DNS(id=0x900 + i, qr=1, aa=1, rd=1, ra=1, qd=DNSQR(qname=name, qtype="TXT"),
                an=DNSRR(rrname=name, type="TXT", ttl=300, rdata=[b"x" * 200] * 9))
        udp = bytes(UDP(sport=53, dport=35000 + i) / r)
        hdr = bytes(IP(src=S4, dst=C4, ttl=64, id=0x4400 + i, flags="MF", proto=17,
                       len=1500)/Raw(b""))[:20]
        out.append(eth(hdr + udp[:150 + 40 * i]))
    return out


def mdns_many_questions():
    """mDNS queries with 17 questions (more than the 16 a port-53 message
    may have), over IPv4 and IPv6, as Apple devices send them."""
    qd = None
    for i in range(17):
        q = DNSQR(qname="_svc%d._tcp.local" % i, qtype="PTR")
        qd = q if qd is None else qd / q
    m = DNS(id=0, qd=qd)
    return [eth(l3("192.0.2.50", "224.0.0.251", False, UDP(sport=5353, dport=5353) / m)),
            eth(l3("fe80::50", "ff02::fb", True, UDP(sport=5353, dport=5353) / m))]


def dns_iquery():
    """An inverse query (opcode 1): no question, one answer record; and its
    answer, as ndpi's dns_invert_query capture has them."""
    # Written by hand: scapy adds a question to a DNS() without one.
    q = struct.pack("!HHHHHH", 0x777, 0x0900, 0, 1, 0, 0) + b"\x00" + struct.pack(
        "!HHIH", 1, 1, 0, 4) + bytes([192, 0, 2, 9])
    r = struct.pack("!HHHHHH", 0x777, 0x8804, 0, 0, 0, 0)  # NOTIMP
    return [eth(l3(C4, S4, False, UDP(sport=18427, dport=53) / Raw(q))),
            eth(l3(S4, C4, False, UDP(sport=53, dport=18427) / Raw(r)))]


def http2_preface():
    """HTTP/2 with prior knowledge on port 3000: the connection preface
    "PRI * HTTP/2.0" is not an HTTP/1.x request; then a GET on port 80."""
    t = Tcp(C4, S4, 41091, 3000)
    pre = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    u = Tcp(C4, S4, 41092, 80)  # and an HTTP/1.1 exchange beside it
    return eth_frames(t.handshake() + [t.s(settings), t.c(pre + settings), t.s(settings)] + t.close() +
                      u.handshake() + [u.c(HTTP_GET), u.s(HTTP_OK)])


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def tunnel_files():
    f = {}
    f["ipip4in4"] = [eth(ipip(p)) for p in inner_set(False, 1)]
    f["ipip6in4"] = [eth(ipip(p)) for p in inner_set(True, 2)]
    f["ipip4in6"] = [eth(ipip(p, outer_v6=True)) for p in inner_set(False, 3)]
    f["ipip6in6"] = [eth(ipip(p, outer_v6=True)) for p in inner_set(True, 4)]
    gre_frames = [eth(gre(p)) for p in inner_set(False, 10)]
    gre_frames += [eth(gre(p, key=0x2a)) for p in inner_set(True, 11)]
    gre_frames += [eth(gre(p, key=0x2b, seq=i)) for i, p in enumerate(inner_set(False, 12))]
    gre_frames += [eth(gre_eth(eth(p, MAC_C, MAC_D, tags=[(ET_VLAN, 30)]), key=0x2c))
                   for p in inner_set(False, 13)]
    f["gre"] = gre_frames
    f["erspan2"] = [eth(erspan2(eth(p, MAC_C, MAC_D, tags=[(ET_VLAN, 40)]), seq=i, vlan=40))
                    for i, p in enumerate(inner_set(False, 20))]
    f["erspan3"] = [eth(erspan3(eth(p, MAC_C, MAC_D), seq=i, ts=0x01000000 + i))
                    for i, p in enumerate(inner_set(True, 21))]
    f["vxlan"] = ([eth(vxlan(eth(p, MAC_C, MAC_D, tags=[(ET_VLAN, 50)]), vni=5000))
                   for p in inner_set(False, 30)] +
                  [eth(vxlan(eth(p, MAC_C, MAC_D, tags=[(ET_QINQ, 60), (ET_VLAN, 61)]),
                             vni=5001)) for p in inner_set(True, 31)])
    opts = geneve_opt(0x0102, 0x80, b"\x00\x00\x00\x2a") + geneve_opt(0xFFFF, 0x01, b"ABCDEFGH")
    f["geneve"] = ([eth(geneve(eth(p, MAC_C, MAC_D), vni=7000)) for p in inner_set(False, 40)] +
                   [eth(geneve(eth(p, MAC_C, MAC_D, tags=[(ET_VLAN, 70)]), vni=7001,
                               options=opts)) for p in inner_set(True, 41)])
    dl = (0x85, b"\x00\x09")  # PDU session container: DL PDU session information, QFI 9
    ul = (0x85, b"\x10\x09")  # UL PDU session information, QFI 9
    f["gtpu"] = ([eth(gtpu(p, teid=0x1001)) for p in inner_set(False, 50)] +
                 [eth(gtpu(p, teid=0x1002, ext=[ul if i % 2 == 0 else dl]))
                  for i, p in enumerate(inner_set(True, 51))] +
                 [eth(gtpu(p, teid=0x1003, seq=i)) for i, p in enumerate(inner_set(False, 52))])
    f["mpls"] = ([mpls(p, [100]) for p in inner_set(False, 60)] +
                 [mpls(p, [200, 201]) for p in inner_set(True, 61)] +
                 [mpls(p, [300, 301, 302]) for p in inner_set(False, 62)])
    f["pppoe"] = ([pppoe_discovery(0x09, tags=ptag(0x0101, b"") + ptag(0x0103, b"\x00\x01"))] +
                  [pppoe_session(p) for p in inner_set(False, 70)] +
                  [pppoe_session(p) for p in inner_set(True, 71)])
    # nested: depth 3 (vxlan in gre in ipip), 4 (+ gtpu inside), 5 (+ geneve)
    a3 = (("192.0.2.31", "192.0.2.32"), ("192.0.2.33", "192.0.2.34"), ("192.0.2.35", "192.0.2.36"))

    def d3(x):
        return ipip(gre(vxlan(eth(x, MAC_C, MAC_D)), addrs=a3[1]), addrs=a3[0])

    def d4(p):
        return d3(gtpu(p, teid=0x4004, addrs=a3[2]))

    def d5(p):
        return d4(geneve(eth(p, MAC_C, MAC_D), vni=5005, addrs=("192.0.2.37", "192.0.2.38")))

    f["nested_d3"] = [eth(d3(p)) for p in inner_set(False, 80)]
    f["nested_d4"] = [eth(d4(p)) for p in inner_set(False, 81)]
    f["nested_d5"] = [eth(d5(p)) for p in inner_set(False, 82)]
    return f


def all_files():
    f = tunnel_files()
    f["frag4"] = fragment_cases(False)
    f["frag6"] = fragment_cases(True)
    f["frag_tunnel"] = fragments_in_tunnel()
    f["http_split"] = http_split()
    f["http_pipelined"] = http_pipelined()
    f["http_post_body"] = http_post_body()
    f["http_content_length"] = http_content_length()
    f["http_chunked"] = http_chunked()
    f["http_retransmit"] = http_retransmit()
    f["tcp_out_of_order"] = tcp_out_of_order()
    f["dns_tcp_two_in_one"] = dns_tcp_two_in_one()
    f["dns_tcp_split"] = dns_tcp_split()
    f["dns_tcp_length_prefix"] = dns_tcp_length_prefix()
    f["mpls_deep"] = mpls_deep()
    f["vlan_deep"] = vlan_deep()
    f["ipv6_many_opts"] = ipv6_many_opts()
    f["pppoe_pfc"] = pppoe_pfc()
    f["http_chunk_overflow"] = http_chunk_overflow()
    f["http_huge_length"] = http_huge_length()
    f["dns_cut_first_fragment"] = dns_cut_first_fragment()
    f["mdns_many_questions"] = mdns_many_questions()
    f["dns_iquery"] = dns_iquery()
    f["http2_preface"] = http2_preface()
    return f


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, frames in all_files().items():
        write_pcap(os.path.join(out, name + ".pcap"), frames)


if __name__ == "__main__":
    main()
