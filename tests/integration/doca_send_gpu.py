#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NVIDIA's two DOCA GPUNetIO send samples, built unmodified against gnio
(tests/integration/doca_sample_test.sh with GNIO_DOCA_SAMPLE_OUT), run on a
GPU, their frames checked byte for byte.

  doca_send_gpu.py SIMPLE_SEND WAIT_TIME [--gpu BUS_ID] [--interval-ns N]

gpunetio_simple_send: every CUDA thread sends the same frame again and again
(destination 10:11:12:13:14:15, source 20:21:22:23:24:25, type 0x0800, then
zeros up to -s bytes) until SIGINT. Checked:
  pcap:   into a pcap:tx= file, without a shared queue (the WQE calls:
          get_wqe_ptr, wqe_prepare_send, submit, poll_completion_at) and with
          one (-q 1) at thread, warp and block scope (send, poll_completion): every
          record holds exactly that frame, and there are some;
  veth:   into af_packet on one end of a veth pair, read on the other end:
          every frame from the sample's source address is exactly that frame.
gpunetio_send_wait_time: 8 bursts of 32 frames of 1024 bytes ("Sent from DOCA
GPUNetIO N" after the Ethernet header, N the frame's index 0..255), burst b due
at T0 + b * interval (doca_gpu_dev_eth_txq_wait_send). Checked:
  pcap:   256 records, each frame exact, the file's timestamps (the frames'
          send times) spaced by the interval to the nanosecond;
  veth:   256 frames exact on the peer, the kernel's receive time of each
          burst's first frame, less burst 0's, against b * interval: the error
          is printed (p50/max) and must stay under --tolerance-us; no burst
          may arrive before its time relative to burst 0 by more than that.
Exit 77 without a GPU; the veth parts are reported as skipped where the
machine cannot make a veth pair.
"""
import argparse
import os
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import pcapfile  # noqa: E402
from doca_sample_gpu import PCI, delete_veth, gpu_bus_id, make_veth  # noqa: E402

DST = bytes([0x10, 0x11, 0x12, 0x13, 0x14, 0x15])
SRC = bytes([0x20, 0x21, 0x22, 0x23, 0x24, 0x25])
ETH = DST + SRC + b"\x08\x00"
WAIT_BURSTS, WAIT_PER_BURST, WAIT_SIZE = 8, 32, 1024
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python's socket module may lack the name


def simple_frame(size):
    return (ETH + b"\0" * size)[:size]


def wait_frame(idx):
    body = b"Sent from DOCA GPUNetIO" + f" {idx}".encode()
    return (ETH + body + b"\0" * WAIT_SIZE)[:WAIT_SIZE]


def check_repeated(path, frame):
    """Every record of a (large) pcap file is `frame`: one regular expression
    over record-aligned chunks. Returns the number of records."""
    rec = 16 + len(frame)
    one = rb".{8}" + re.escape(struct.pack("<II", len(frame), len(frame)) + frame)
    pat = re.compile(b"(?:" + one + b")*", re.S)
    n = 0
    with open(path, "rb") as f:
        order, _, link = pcapfile.parse_header(f.read(24), path)
        if order != "<" or link != pcapfile.LINKTYPE_ETHERNET:
            raise ValueError(f"{path}: not a little-endian Ethernet pcap file")
        while True:
            chunk = f.read(rec * 65536)
            if not chunk:
                break
            if len(chunk) % rec or not pat.fullmatch(chunk):
                raise ValueError(f"a record after record {n} is not the {len(frame)}-byte frame")
            n += len(chunk) // rec
    return n


def sample_env(device_string):
    return dict(os.environ, GNIO_DOCA_DEVICES=f"{PCI}={device_string}")


def finish(p, timeout=30):
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        return False, out + f"\n(killed: no exit {timeout} s after it was due)"
    ok = p.returncode == 0 and "Sample finished successfully" in out
    return ok, out


def run_simple_until(binary, gpu, device_string, args, started, run_s=0.3, limit_s=30.0):
    """Runs simple_send until started() is true (or limit_s), run_s more, SIGINT."""
    p = subprocess.Popen([binary, "-g", gpu, "-n", PCI] + args, env=sample_env(device_string),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.monotonic()
    while p.poll() is None and not started() and time.monotonic() - t0 < limit_s:
        time.sleep(0.02)
    time.sleep(run_s)
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    return finish(p)


def simple_pcap(binary, gpu, tmp):
    failed = 0
    size = 64
    # -q 1: a shared queue (the sample's option takes a number).
    for args in (["-t", "64"], ["-t", "64", "-q", "1", "-e", "0"], ["-t", "64", "-q", "1", "-e", "1"],
                 ["-t", "128", "-q", "1", "-e", "2"]):
        path = os.path.join(tmp, "simple.pcap")
        if os.path.exists(path):
            os.unlink(path)
        started = lambda: os.path.exists(path) and os.path.getsize(path) > 24 + 16 * (16 + size)
        ok, out = run_simple_until(binary, gpu, f"pcap:tx={path}", args + ["-s", str(size)], started)
        n, err = 0, ""
        try:
            n = check_repeated(path, simple_frame(size))
        except (OSError, ValueError) as e:
            err = str(e)
        good = ok and not err and n > 0
        failed += not good
        print(f"simple_send {' '.join(args)} -s {size} -> pcap: {n} frames, each the sample's {size}-byte frame"
              f"{'' if not err else ' -- ' + err}{'' if ok else ' -- the sample did not finish successfully'}: "
              f"{'ok' if good else 'FAIL'}")
        if not good:
            print(out[-4000:])
        if os.path.exists(path):
            os.unlink(path)
    return failed


def open_capture(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((ifname, 0))
    return s


def drain(s, until, want_src=SRC):
    """(receive time ns, frame) for frames from the sample's source until `until` (monotonic)."""
    got = []
    while time.monotonic() < until:
        r, _, _ = select.select([s], [], [], 0.05)
        if not r:
            continue
        data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(16))
        if data[6:12] != want_src:
            continue
        ts = None
        for level, kind, val in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:  # SCM_TIMESTAMPNS
                sec, ns = struct.unpack("qq", val[:16])
                ts = sec * 1_000_000_000 + ns
        got.append((ts, data))
    return got


def simple_veth(binary, gpu, va, vb):
    size = 128
    cap = open_capture(vb)
    seen = []

    def started():
        seen.extend(drain(cap, time.monotonic() + 0.05))
        return len(seen) > 0

    ok, out = run_simple_until(binary, gpu, f"af_packet:if={va}", ["-t", "64", "-s", str(size)], started,
                               run_s=0.5, limit_s=60.0)
    seen.extend(drain(cap, time.monotonic() + 0.3))
    cap.close()
    bad = sum(1 for _, d in seen if d != simple_frame(size))
    good = ok and seen and not bad
    print(f"simple_send -t 64 -s {size} -> veth {va} -> {vb}: {len(seen)} frames read on the peer, "
          f"{bad} not the sample's frame: {'ok' if good else 'FAIL'}")
    if not good:
        print(out[-4000:])
    return 0 if good else 1


def wait_pcap(binary, gpu, tmp, interval):
    path = os.path.join(tmp, "wait.pcap")
    p = subprocess.Popen([binary, "-g", gpu, "-n", PCI, "-t", str(interval)], env=sample_env(f"pcap:tx={path}"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ok, out = finish(p, timeout=60)
    problems = []
    try:
        recs = pcapfile.records(path, ethernet=True)
    except (OSError, ValueError) as e:
        recs, problems = [], [str(e)]
    total = WAIT_BURSTS * WAIT_PER_BURST
    if len(recs) != total:
        problems.append(f"{len(recs)} records, want {total}")
    wrong = [i for i, (_, wire, d) in enumerate(recs) if d != wait_frame(i) or wire != len(d)]
    if wrong:
        problems.append(f"{len(wrong)} frames differ from the sample's (first: record {wrong[0]})")
    times = [t for t, _, _ in recs]
    if len(times) == total:
        for b in range(WAIT_BURSTS):
            burst = times[b * WAIT_PER_BURST:(b + 1) * WAIT_PER_BURST]
            if len(set(burst)) != 1:
                problems.append(f"burst {b}: its frames carry {len(set(burst))} different times")
            elif burst[0] - times[0] != b * interval:
                problems.append(f"burst {b}: due {burst[0] - times[0]} ns after burst 0, want {b * interval}")
    good = ok and not problems
    print(f"send_wait_time -t {interval} -> pcap: {len(recs)} frames exact, send times of the 8 bursts "
          f"spaced {interval} ns{'' if good else ' -- ' + '; '.join(problems)}: {'ok' if good else 'FAIL'}")
    if not ok:
        print(out[-4000:])
    return 0 if good else 1


def wait_veth(binary, gpu, va, vb, interval, tolerance_us):
    cap = open_capture(vb)
    p = subprocess.Popen([binary, "-g", gpu, "-n", PCI, "-t", str(interval)], env=sample_env(f"af_packet:if={va}"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    t_end = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < t_end:
        seen.extend(drain(cap, time.monotonic() + 0.2))
    seen.extend(drain(cap, time.monotonic() + 0.2))
    cap.close()
    ok, out = finish(p, timeout=30)
    problems = []
    total = WAIT_BURSTS * WAIT_PER_BURST
    if len(seen) != total:
        problems.append(f"{len(seen)} frames on the peer, want {total}")
    frames = [d for _, d in seen]
    if sorted(frames) != sorted(wait_frame(i) for i in range(total)):
        problems.append("the frames are not the sample's 256")
    errors = []
    if len(seen) == total:
        first = [seen[b * WAIT_PER_BURST][0] for b in range(WAIT_BURSTS)]
        if None in first:
            problems.append("no receive timestamps")
        else:
            errors = [(first[b] - first[0]) - b * interval for b in range(1, WAIT_BURSTS)]
            worst = max(abs(e) for e in errors)
            if worst > tolerance_us * 1000:
                problems.append(f"spacing error {worst / 1000:.1f} us, above {tolerance_us} us")
    if errors:
        absn = sorted(abs(e) for e in errors)
        spacing = (f"burst spacing error (receive time on the peer, relative to burst 0) p50 "
                   f"{statistics.median(absn) / 1000:.1f} us, max {absn[-1] / 1000:.1f} us, "
                   f"earliest {min(errors) / 1000:+.1f} us")
    else:
        spacing = "no spacing measured"
    good = ok and not problems
    print(f"send_wait_time -t {interval} -> veth {va} -> {vb}: {len(seen)} frames; {spacing}"
          f"{'' if good else ' -- ' + '; '.join(problems)}: {'ok' if good else 'FAIL'}")
    if not ok:
        print(out[-4000:])
    return 0 if good else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("simple_send")
    ap.add_argument("wait_time")
    ap.add_argument("--gpu", help="the GPU's PCIe bus id (default: nvidia-smi's first)")
    ap.add_argument("--interval-ns", type=int, default=20_000_000, help="send_wait_time's -t (default 20 ms)")
    ap.add_argument("--tolerance-us", type=float, default=2000.0,
                    help="largest burst spacing error on veth (default 2000 us: software pacing on a shared machine)")
    a = ap.parse_args()
    gpu = a.gpu or gpu_bus_id()
    if gpu is None:
        print("doca_send_gpu: no GPU (nvidia-smi found none); skipping")
        return 77
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gnio_doca_send_") as tmp:
        failed += simple_pcap(a.simple_send, gpu, tmp)
        failed += wait_pcap(a.wait_time, gpu, tmp, a.interval_ns)
    va, vb = "gdsend0", "gdsend1"
    delete_veth(va)
    try:
        make_veth(va, vb)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"veth: SKIPPED: this machine cannot make a veth pair ({e})")
        return 1 if failed else 0
    try:
        time.sleep(1.0)
        failed += simple_veth(a.simple_send, gpu, va, vb)
        failed += wait_veth(a.wait_time, gpu, va, vb, a.interval_ns, a.tolerance_us)
    finally:
        delete_veth(va)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
