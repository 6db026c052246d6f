#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real nfdump collector for tests and benchmarks: nfcapd in the
foreground on a free loopback UDP port, stopped with SIGTERM once it has
read every datagram (so it writes its file), and its records read back with
`nfdump -R DIR -o json`. Used by tests/integration/ipfix_nfcapd_test.py and
bench/ipfix_vs_softflowd.py.

    with Collector(workdir) as c:
        run exporter to 127.0.0.1:c.port
        c.stop()
        records = c.records()   # nfdump's JSON objects
        c.summary               # nfcapd's own line: flows, packets, bytes, sequence errors
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time


def free_udp_port():
    """A UDP port no one holds now (bound to 0, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _udp_socket(port):
    """(bytes waiting in the receive queue, datagrams dropped) of the UDP socket bound to port, or None."""
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if int(cols[1].rsplit(":", 1)[1], 16) == port:
                        return int(cols[4].split(":")[1], 16), int(cols[-1])
        except OSError:
            continue
    return None


def _rx_queue(port):
    s = _udp_socket(port)
    return None if s is None else s[0]


class Collector:
    # rcvbuf: nfcapd's -B, the socket buffer in bytes; None: no -B, the
    # documented command, whose buffer is the kernel's net.core.rmem_default.
    def __init__(self, workdir, name="nfcapd", rcvbuf=4194304):
        for tool in ("nfcapd", "nfdump"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} not found: install Debian's nfdump (scripts/setup.sh does)")
        self.dir = os.path.join(workdir, name + ".flows")
        self.log_path = os.path.join(workdir, name + ".log")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.port = None
        self.summary = None
        self.rcvbuf = rcvbuf

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.kill()

    def start(self):
        # A port taken between the probe and nfcapd's bind makes it exit: try another.
        for _ in range(5):
            self.port = free_udp_port()
            self.log = open(self.log_path, "w")
            # By default -B 4 MiB (Debian's net.core.rmem_max), so that tests of what
            # the records hold do not depend on the exporter's pacing.
            buf = ["-B", str(self.rcvbuf)] if self.rcvbuf else []
            self.proc = subprocess.Popen(
                ["nfcapd", "-b", "127.0.0.1", "-p", str(self.port), *buf, "-w", self.dir],
                stdout=self.log, stderr=subprocess.STDOUT)
            # Ready once its socket exists (it binds before it logs Startup).
            while self.proc.poll() is None and _rx_queue(self.port) is None:
                time.sleep(0.01)
            if self.proc.poll() is None:
                return
            self.log.close()
        raise RuntimeError(f"nfcapd did not start: {open(self.log_path).read()}")

    def stop(self):
        """Waits until nfcapd has read every datagram, then SIGTERM: it writes its file and exits."""
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"nfcapd exited early: {open(self.log_path).read()}")
        while (_rx_queue(self.port) or 0) > 0 and self.proc.poll() is None:
            time.sleep(0.01)
        sock = _udp_socket(self.port)
        drops = sock[1] if sock else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError("nfcapd did not stop within 30 s of SIGTERM")
        self.log.close()
        text = open(self.log_path).read()
        m = re.search(r"Flows: (\d+), Packets: (\d+), Bytes: (\d+), Sequence Errors: (\d+), Bad Packets: (\d+)", text)
        if m:
            self.summary = dict(zip(("flows", "packets", "bytes", "sequence_errors", "bad_packets"),
                                    map(int, m.groups())))
            self.summary["socket_drops"] = drops  # datagrams the kernel dropped: nfcapd's buffer was full
        return text

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def records(self):
        """Every flow record nfcapd stored, as nfdump -o json prints them."""
        files = [f for f in os.listdir(self.dir) if f.startswith("nfcapd.")]
        if not files:
            return []
        out = subprocess.run(["nfdump", "-R", self.dir, "-o", "json"], capture_output=True, text=True, check=True)
        text = out.stdout.strip()
        # With no record at all nfdump 1.7.1 prints an unclosed "[".
        return json.loads(text) if "{" in text else []


def record_key(r):
    """(protocol, source, destination, source port, destination port) of an nfdump JSON record."""
    src = r.get("src4_addr") or r.get("src6_addr")
    dst = r.get("dst4_addr") or r.get("dst6_addr")
    return (int(r["proto"]), src, dst, int(r.get("src_port", 0)), int(r.get("dst_port", 0)))


TCP_FLAG_LETTERS = "CEUAPRSF"  # nfdump's tcp_flags string, most significant bit first


def tcp_flags_bits(text):
    bits = 0
    for i, ch in enumerate(text[:8]):
        if ch != ".":
            bits |= 1 << (7 - i)
    return bits
