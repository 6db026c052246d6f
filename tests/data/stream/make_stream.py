#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Writes the TCP stream-framing test captures of this folder (one connection
# each, Ethernet/IPv4, fixed addresses, times and ISNs, so that a rerun writes
# the same bytes): python3 make_stream.py [OUT_DIR]. Needs python3-scapy.
import os
import sys

from scapy.all import IP, TCP, Ether, Raw, wrpcap

CLIENT, SERVER = "10.0.0.1", "10.0.0.2"


class conn:
    def __init__(self, sport, dport):
        self.ports = (sport, dport)
        self.seq = [1000, 5000]  # next sequence number of client, server
        self.pkts = []
        self.t = 1700000000.0
        self._add(0, "S", b"")
        self._add(1, "SA", b"")
        self._add(0, "A", b"")

    def _add(self, d, flags, payload, seq=None):
        src, dst = (CLIENT, SERVER) if d == 0 else (SERVER, CLIENT)
        sp, dp = self.ports if d == 0 else self.ports[::-1]
        s = self.seq[d] if seq is None else seq
        ack = self.seq[1 - d] if "A" in flags else 0
        p = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=src, dst=dst, ttl=64, id=len(self.pkts)) / \
            TCP(sport=sp, dport=dp, seq=s, ack=ack, flags=flags, window=65535)
        if payload:
            p = p / Raw(payload)
        p.time = self.t
        self.t += 0.001
        self.pkts.append(p)
        if seq is None:
            self.seq[d] += len(payload) + (1 if ("S" in flags or "F" in flags) else 0)

    def c(self, payload, **kw):  # client to server
        self._add(0, "PA", payload, **kw)

    def s(self, payload, **kw):
        self._add(1, "PA", payload, **kw)

    def skip(self, d, n):  # n bytes of direction d never captured
        self.seq[d] += n

    def close(self):
        self._add(0, "FA", b"")
        self._add(1, "FA", b"")
        self._add(0, "A", b"")


def http_cases():
    cases = {}
    k = conn(40001, 80)  # request in 2 segments, split inside CRLFCRLF
    k.c(b"GET /a HTTP/1.1\r\nHost: x\r\n\r")
    k.c(b"\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    k.close()
    cases["split2"] = k
    k = conn(40002, 80)  # request in 3 segments, split inside the method
    k.c(b"GE")
    k.c(b"T /b HTTP/1.1\r\nHo")
    k.c(b"st: x\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    k.close()
    cases["split3"] = k
    k = conn(40003, 80)  # POST split inside "Content-Length" and inside the body
    k.c(b"POST /c HTTP/1.1\r\nHost: x\r\nContent-Len")
    k.c(b"gTH: 5\r\n\r\nhel")
    k.c(b"lo")
    k.s(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
    k.close()
    cases["split_cl"] = k
    k = conn(40004, 80)  # three pipelined requests in one segment, responses in one
    k.c(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nOPTIONS /3 HTTP/1.1\r\nHost: x\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc")
    k.close()
    cases["pipelined"] = k
    k = conn(40005, 80)  # a POST body that looks like a request
    body = b"GET / HTTP/1.1\r\nHost: y\r\n\r\n"
    k.c(b"POST /d HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body))
    k.c(body)
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    k.close()
    cases["post_body"] = k
    k = conn(40006, 80)  # Content-Length response over three segments
    k.c(b"GET /e HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\ncontent-length: 3000\r\n\r\n" + b"x" * 1000)
    k.s(b"HTTP/1.1 200 OK\r\n" + b"y" * 983)  # body bytes that look like a status line
    k.s(b"z" * 1000)
    k.close()
    cases["resp_cl"] = k
    k = conn(40007, 80)  # chunked response: size line split, chunk data split, a trailer
    k.c(b"GET /f HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1")
    k.s(b"0\r\n0123456789abcdef")
    k.s(b"\r\n5;ext=1\r\nHTTP/\r\n0\r")
    k.s(b"\nX-Trailer: 1\r\n\r\n")
    k.c(b"GET /g HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    k.close()
    cases["chunked"] = k
    k = conn(40008, 80)  # HEAD: the response's Content-Length has no body after it
    k.c(b"HEAD /h HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    k.c(b"GET /h HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
    k.close()
    cases["head"] = k
    k = conn(40009, 80)  # 304 and 204 with a Content-Length but no body
    k.c(b"GET /i HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n")
    k.c(b"DELETE /i HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 204 No Content\r\n\r\n")
    k.c(b"GET /j HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    k.close()
    cases["bodiless"] = k
    k = conn(40010, 80)  # a retransmitted request and response
    k.c(b"GET /k HTTP/1.1\r\n\r\n")
    seq = k.seq[0] - len(b"GET /k HTTP/1.1\r\n\r\n")
    k.c(b"GET /k HTTP/1.1\r\n\r\n", seq=seq)
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", seq=k.seq[1] - 40)
    k.close()
    cases["retrans"] = k
    k = conn(40011, 80)  # a lost segment in a response body, then the next exchange
    k.c(b"GET /l HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n" + b"a" * 100)
    k.skip(1, 100)
    k.s(b"b" * 100)
    k.c(b"GET /m HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    k.close()
    cases["gap"] = k
    k = conn(40012, 80)  # a lost segment inside a request's headers
    k.c(b"GET /n HTTP/1.1\r\nHost: x\r\n")
    k.skip(0, 20)
    k.c(b"Accept: */*\r\n\r\n")
    k.c(b"GET /o HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    k.close()
    cases["gap_header"] = k
    k = conn(40013, 80)  # a response without Content-Length ends with the connection
    k.c(b"GET /p HTTP/1.0\r\n\r\n")
    k.s(b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nsome")
    k.s(b"HTTP/1.0 200 OK\r\n\r\n")  # body text
    k._add(1, "FA", b"")
    k._add(0, "FA", b"")
    k._add(1, "A", b"")
    cases["until_close"] = k
    k = conn(40014, 80)  # the same cut off by a RST
    k.c(b"GET /q HTTP/1.0\r\n\r\n")
    k.s(b"HTTP/1.0 200 OK\r\n\r\nsome")
    k._add(1, "RA", b"")
    cases["until_rst"] = k
    k = conn(40015, 80)  # a lost segment inside a Content-Length body; the next response in the same segment
    k.c(b"GET /r HTTP/1.1\r\n\r\nGET /s HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n" + b"a" * 100)
    k.skip(1, 100)
    k.s(b"b" * 100 + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    k.close()
    cases["gap_body"] = k
    k = conn(40016, 80)  # a response's headers start after a body ends mid-segment and end in the next one
    k.c(b"GET /t HTTP/1.1\r\n\r\nGET /u HTTP/1.1\r\n\r\n")
    k.s(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
    k.s(b"56789HTTP/1.1 200 OK\r\n")
    k.s(b"Content-Length: 0\r\n\r\n")
    k.close()
    cases["resp_split"] = k
    return cases


def dns_msg(qid, qr, name=b"\x07example\x03com\x00"):
    flags = 0x8180 if qr else 0x0100
    hdr = qid.to_bytes(2, "big") + flags.to_bytes(2, "big") + b"\x00\x01" + (b"\x00\x01" if qr else b"\x00\x00") + \
        b"\x00\x00\x00\x00"
    q = name + b"\x00\x01\x00\x01"
    ans = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x5d\xb8\xd8\x22" if qr else b""
    m = hdr + q + ans
    return len(m).to_bytes(2, "big") + m


def dns_cases():
    cases = {}
    k = conn(41001, 53)  # two queries in one segment, two responses in one
    k.c(dns_msg(1, False) + dns_msg(2, False, b"\x03www\x07example\x03org\x00"))
    k.s(dns_msg(1, True) + dns_msg(2, True, b"\x03www\x07example\x03org\x00"))
    k.close()
    cases["dns_two"] = k
    k = conn(41002, 53)  # a query split over two segments, a response over three
    m = dns_msg(3, False)
    k.c(m[:10])
    k.c(m[10:])
    r = dns_msg(3, True)
    k.s(r[:20])
    k.s(r[20:30])
    k.s(r[30:])
    k.close()
    cases["dns_split"] = k
    k = conn(41003, 53)  # the length prefix split from the message, and split itself
    m = dns_msg(4, False)
    k.c(m[:1])
    k.c(m[1:])
    r = dns_msg(4, True)
    k.s(r[:2])
    k.s(r[2:])
    k.close()
    cases["dns_prefix"] = k
    k = conn(41004, 53)  # a lost segment inside a response, the next response in the same segment
    k.c(dns_msg(5, False) + dns_msg(6, False))
    r = dns_msg(5, True)
    k.s(r[:10])
    k.skip(1, 10)
    k.s(r[20:] + dns_msg(6, True))
    k.close()
    cases["dns_gap"] = k
    return cases


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, k in {**http_cases(), **dns_cases()}.items():
        wrpcap(os.path.join(out, name + ".pcap"), k.pkts)


if __name__ == "__main__":
    main()
