#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NVIDIA's DOCA GPUNetIO receive sample, built unmodified against gnio
(tests/integration/doca_sample_test.sh with GNIO_DOCA_SAMPLE_OUT), run on a
GPU: on a capture at thread, warp and block scope, and on a veth pair with
real traffic. The sample counts the IPv4 UDP frames its DOCA Flow pipes let
through and prints "Total number of received packets: N" at SIGINT.

  doca_sample_gpu.py SAMPLE_BINARY [--gpu BUS_ID] [--veth-frames N]

Checks:
  capture: N equals the capture's IPv4 UDP count from tests/data/MANIFEST.tsv
           (tshark's count, `ip && udp`), at -e 0, 1 and 2;
  veth:    a veth pair (made with `ip`, or over rtnetlink where there is no
           `ip`), the sample on af_packet:if=<one end>, N IPv4 UDP frames
           sent from the other end with an AF_PACKET socket, plus frames the
           sample's pipes must drop (TCP, ARP); N must be counted exactly.
Exit 77 without a GPU; the veth part is reported as skipped (not failed) where
the machine cannot make a veth pair, and then the exit status is that of the
capture part.
"""
import argparse
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("GNIO_TEST_DATA_DIR", os.path.join(HERE, "..", "data"))
CAPTURE = "dhcp-rfc4388.pcap"
PCI = "17:00.0"  # any well-formed address: GNIO_DOCA_DEVICES maps it


def gpu_bus_id():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    ids = [l.strip() for l in out.stdout.splitlines() if l.strip()]
    if out.returncode != 0 or not ids:
        return None
    # nvidia-smi prints 00000000:18:00.0; DOCA samples take 18:00.0
    return ids[0].split(":", 1)[1] if ids[0].count(":") == 2 else ids[0]


def manifest_udp4(name):
    """tshark's `ip && udp` count for a capture without IPv6: its udp column."""
    with open(os.path.join(DATA, "MANIFEST.tsv")) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    head = rows[0]
    for r in rows[1:]:
        rec = dict(zip(head, r))
        if rec["path"] == name:
            if rec["ipv6"] != "0":
                raise SystemExit(f"{name} has IPv6 frames: its udp count is not `ip && udp`")
            return int(rec["udp"])
    raise SystemExit(f"{name} is not in MANIFEST.tsv")


def run_sample(binary, gpu, device_string, scope, ready_s, on_ready=None, stop_after_s=2.0):
    env = dict(os.environ, GNIO_DOCA_DEVICES=f"{PCI}={device_string}")
    p = subprocess.Popen([binary, "-g", gpu, "-n", PCI, "-e", str(scope)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    time.sleep(ready_s)
    if on_ready is not None and p.poll() is None:
        on_ready()
    time.sleep(stop_after_s)
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        return None, out + "\n(killed: no exit 30 s after SIGINT)"
    m = re.search(r"Total number of received packets: (\d+)", out)
    return (int(m.group(1)) if m else None), out


# --- a veth pair without iproute2 --------------------------------------------

def _nla(kind, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, kind) + data + b"\0" * ((4 - n % 4) % 4)


def _rtnl(msg_type, flags, body):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    try:
        s.bind((0, 0))
        s.send(struct.pack("=IHHII", 16 + len(body), msg_type, flags | 0x1 | 0x4, 1, 0) + body)  # REQUEST|ACK
        resp = s.recv(65536)
    finally:
        s.close()
    err = struct.unpack("=i", resp[16:20])[0]
    if err != 0:
        raise OSError(-err, os.strerror(-err))


def make_veth(a, b):
    if subprocess.run(["sh", "-c", "command -v ip"], capture_output=True).returncode == 0:
        subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
        for n in (a, b):
            subprocess.run(["ip", "link", "set", n, "up"], check=True)
        return
    RTM_NEWLINK, CREATE, EXCL = 16, 0x400, 0x200
    ifi = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0)
    peer = _nla(1, ifi + _nla(3, b.encode() + b"\0"))  # VETH_INFO_PEER: ifinfomsg, IFLA_IFNAME
    info = _nla(18, _nla(1, b"veth") + _nla(2, peer))  # IFLA_LINKINFO: KIND, DATA
    _rtnl(RTM_NEWLINK, CREATE | EXCL, ifi + _nla(3, a.encode() + b"\0") + info)
    for n in (a, b):
        IFF_UP = 1
        _rtnl(RTM_NEWLINK, 0, struct.pack("=BxHiII", socket.AF_UNSPEC, 0, socket.if_nametoindex(n), IFF_UP, IFF_UP))


def delete_veth(a):
    if subprocess.run(["sh", "-c", "command -v ip"], capture_output=True).returncode == 0:
        subprocess.run(["ip", "link", "del", a], capture_output=True)
        return
    try:
        _rtnl(17, 0, struct.pack("=BxHiII", socket.AF_UNSPEC, 0, socket.if_nametoindex(a), 0, 0))  # RTM_DELLINK
    except OSError:
        pass


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ipv4_frame(proto, l4, i):
    src, dst = bytes([10, 77, 0, 2]), bytes([10, 77, 0, 1])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), i & 0xFFFF, 0, 64, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return b"\xff" * 6 + b"\x02\x00\x00\x00\x77\x02" + b"\x08\x00" + ip + l4


def udp_frame(i):
    payload = struct.pack("!I", i) + b"gnio-doca" * 4
    return ipv4_frame(17, struct.pack("!HHHH", 40000 + (i % 64), 5000, 8 + len(payload), 0) + payload, i)


def tcp_frame(i):
    return ipv4_frame(6, struct.pack("!HHIIBBHHH", 40000, 80, i, 0, 0x50, 0x02, 1024, 0, 0), i)


def arp_frame():
    return (b"\xff" * 6 + b"\x02\x00\x00\x00\x77\x02" + b"\x08\x06" +
            struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, b"\x02\x00\x00\x00\x77\x02", bytes([10, 77, 0, 2]),
                        b"\0" * 6, bytes([10, 77, 0, 1])))


def send_frames(ifname, n_udp):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    for i in range(n_udp):
        s.send(udp_frame(i))
        if i % 50 == 0:
            s.send(tcp_frame(i))  # the sample's pipes drop these
        if i % 200 == 0:
            s.send(arp_frame())
        if i % 100 == 99:
            time.sleep(0.002)  # leave the receiver's ring room
    s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--gpu", help="the GPU's PCIe bus id (default: nvidia-smi's first)")
    ap.add_argument("--veth-frames", type=int, default=5000)
    a = ap.parse_args()
    gpu = a.gpu or gpu_bus_id()
    if gpu is None:
        print("doca_sample_gpu: no GPU (nvidia-smi found none); skipping")
        return 77
    failed = 0
    want = manifest_udp4(CAPTURE)
    cap = os.path.join(DATA, CAPTURE)
    for scope in (0, 1, 2):
        got, out = run_sample(a.binary, gpu, f"pcap:file={cap}", scope, ready_s=3.0)
        ok = got == want
        failed += not ok
        print(f"capture {CAPTURE} -e {scope}: sample counted {got}, tshark (MANIFEST.tsv) {want}: "
              f"{'ok' if ok else 'FAIL'}")
        if not ok:
            print(out)

    va, vb = "gdoca0", "gdoca1"
    delete_veth(va)
    try:
        make_veth(va, vb)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"veth: SKIPPED: this machine cannot make a veth pair ({e})")
        return 1 if failed else 0
    try:
        time.sleep(1.0)  # let the kernel's own frames on link-up (IPv6 ND) go by
        for scope in (0, 2):
            got, out = run_sample(a.binary, gpu, f"af_packet:if={va}", scope, ready_s=4.0,
                                  on_ready=lambda: send_frames(vb, a.veth_frames), stop_after_s=2.0)
            ok = got == a.veth_frames
            failed += not ok
            print(f"veth {vb} -> {va} (af_packet) -e {scope}: sent {a.veth_frames} IPv4 UDP frames "
                  f"(+{(a.veth_frames + 49) // 50} TCP, +{(a.veth_frames + 199) // 200} ARP), sample counted {got}: "
                  f"{'ok' if ok else 'FAIL'}")
            if not ok:
                print(out)
    finally:
        delete_veth(va)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
