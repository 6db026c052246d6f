#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# flow_count's first and last seen times against tshark: for captures from
# tests/data, every TCP and UDP flow row's first_seen_ns and last_seen_ns
# equal the frame.time_epoch of the first and last frame tshark puts in that
# 5-tuple, and its packets equal tshark's frame count. The --jsonl flow lines
# carry the same rows. Exits 77 (skipped) without tshark.
#
# The program comes from GNIO_FLOW_COUNT_BIN, the captures from
# GNIO_TEST_DATA_DIR (ctest sets them); GNIO_TEST_EXEC=cuda runs the kernel
# on the GPU.
import collections
import decimal
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile

LIMIT_S = 60  # a guard against hangs, never a measure of speed
EXEC = "cuda" if os.environ.get("GNIO_TEST_EXEC") == "cuda" else "host"

# Plain IPv4 and IPv6 TCP/UDP, one and two VLAN tags; flows of one packet and many.
CAPTURES = ["http.pcap", "dns_icmp.pcap", "nb6-http.pcap", "dns_tcp.pcap", "QinQpacket.pcap", "dns_udp.pcap"]
# The same capture over two contexts and queues: rows merged on the host.
RUNS = [(c, ["--exec", EXEC]) for c in CAPTURES] + [
    ("http.pcap", ["--gpu", "0,0" if EXEC == "cuda" else "host,host", "--queues", "2"])]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from testenv import env  # noqa: E402


def ns_of(epoch_text):
    """tshark's "1084443427.311224000" as integer nanoseconds, without a float's rounding."""
    return int(decimal.Decimal(epoch_text) * 1_000_000_000)


def tshark_flows(tshark, path):
    """{(proto, src, sport, dst, dport): [first_ns, last_ns, frames]} for frames with one IP layer and TCP or UDP."""
    fields = ["frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "tcp.srcport", "tcp.dstport",
              "udp.srcport", "udp.dstport", "ip.proto", "ipv6.nxt"]
    cmd = [tshark, "-r", path, "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S, check=True)
    flows = {}
    skipped = 0
    for line in r.stdout.splitlines():
        t, s4, d4, s6, d6, ts, td, us, ud, _, _ = line.split("|")
        src, dst = (s4, d4) if s4 else (s6, d6)
        # Tunnels, ICMP errors quoting a packet, fragments: more than one
        # layer or no ports; flow_count keys those otherwise.
        if not src or "," in src + dst + ts + us or (s4 and s6) or not (ts or us):
            skipped += 1
            continue
        proto, sport, dport = ("tcp", ts, td) if ts else ("udp", us, ud)
        key = (proto, str(ipaddress.ip_address(src)), int(sport), str(ipaddress.ip_address(dst)), int(dport))
        ns = ns_of(t)
        f = flows.setdefault(key, [ns, ns, 0])
        f[0] = min(f[0], ns)
        f[1] = max(f[1], ns)
        f[2] += 1
    return flows, skipped


def main():
    tshark = shutil.which("tshark")
    if not tshark:
        print("tshark not found: skipped (apt-get install tshark; scripts/setup.sh does)")
        return 77
    data = env("GNIO_TEST_DATA_DIR", "dir")
    prog = env("GNIO_FLOW_COUNT_BIN")
    failures = compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        out, lines = os.path.join(tmp, "out.json"), os.path.join(tmp, "out.jsonl")
        for name, args in RUNS:
            path = os.path.join(data, name)
            want, skipped = tshark_flows(tshark, path)
            cmd = [prog] + args + ["--stats-interval", "0", "--rx-slot", "65536", "--port", f"pcap:file={path}",
                   "--json", out, "--jsonl", lines]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S)
            if r.returncode != 0:
                print(f"FAIL {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
                failures += 1
                continue
            with open(out) as f:
                rows = json.load(f)["flow_rows"]
            with open(lines) as f:
                flow_lines = [json.loads(x) for x in f if '"type":"flow"' in x]
            got = {}
            tunnelled = False
            for row in rows:
                # PPPoE carries one IP layer, as tshark sees it; a tunnel's
                # rows are its inner flows, which tshark lists as two layers.
                if row.get("tunnel", "pppoe") != "pppoe":
                    tunnelled = True
                    continue
                if row["proto"] not in ("tcp", "udp"):
                    continue
                key = (row["proto"], str(ipaddress.ip_address(row["src"])), row["src_port"],
                       str(ipaddress.ip_address(row["dst"])), row["dst_port"])
                got[key] = [row.get("first_seen_ns"), row.get("last_seen_ns"), row["packets"]]
            # The tunnels' outer flows (L2TP's UDP 1701) are not flow_count's rows.
            outer = {k for k in want if k not in got} if tunnelled else set()
            ok = got and all(got[k] == want.get(k) for k in got) and set(want) - outer == set(got)
            compared += len(got)
            print(f"{'ok  ' if ok else 'FAIL'} {name:18} {' '.join(args):28} {len(got)} TCP/UDP flows: first/last seen and packets as "
                  f"tshark's ({skipped} frames of other kinds, {len(outer)} tunnels' outer flows left out)")
            if not ok:
                failures += 1
                for k in sorted(set(got) | set(want)):
                    if got.get(k) != want.get(k) and k not in outer:
                        print(f"  {k}: flow_count {got.get(k)}, tshark {want.get(k)}")
            # The stream's flow lines are the same rows.
            strip = [{k: v for k, v in x.items() if k not in ("schema", "version", "type")} for x in flow_lines]
            key = lambda x: json.dumps(x, sort_keys=True)
            same = sorted(strip, key=key) == sorted(rows, key=key)
            print(f"{'ok  ' if same else 'FAIL'} {name:18} --jsonl flow lines equal flow_rows ({len(flow_lines)})")
            failures += 0 if same else 1
    print(f"{compared} flows compared with tshark")
    return 1 if failures or compared == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
