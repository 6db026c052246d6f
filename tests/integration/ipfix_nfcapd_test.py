#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""IPFIX export read back by a real collector (Debian's nfdump 1.7).

For each capture, flow_count --ipfix sends to a fresh nfcapd; `nfdump -o
json` then has to hold the same IP flows as flow_count's JSON flow_rows:
equal 5-tuples, packets, IP bytes (octetDeltaCount), TCP flags and VLAN IDs,
one record per flow, and nfcapd's own line must count the same flows,
packets and bytes with no sequence errors (it checks our message sequence
numbers). On the captures without tunnels, nfdump's flows must also be what
tshark reads from the capture: per 5-tuple the packets, the IP bytes (ip.len,
40 + ipv6.plen) and the first and last seen times (frame.time_epoch, to the
millisecond): the times are the packets' capture times, not the export's. A live generator
run with short timeouts must split flows into several records that still sum
to the JSON's counts; gnio pp --ipfix must export its conversations; a bad
collector is a usage error (exit 2); pp's conversations carry tshark's first and last
seen times (both directions folded). A 65,536-flow end-of-run flush to nfcapd
with its default socket buffer (the documented command) must arrive whole,
which needs the exporter's pacing; a stop (--duration) with a low rate must
leave records unsent within --ipfix-flush-timeout, and count them. Flows that
come and go, four times as many as --table holds, end during the run (flow
expiry) and each arrives as one record whose counts are its JSON row's.

Environment (ctest sets it): GNIO_FLOW_COUNT_BIN, GNIO_TOOL_BIN,
GNIO_TEST_DATA_DIR, GNIO_SOURCE_DIR.
"""
import collections
import ipaddress
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("GNIO_SOURCE_DIR", "."), "tests", "support"))
from nfcapd import Collector, record_key, tcp_flags_bits  # noqa: E402

FLOW_COUNT = os.environ.get("GNIO_FLOW_COUNT_BIN")
GNIO = os.environ.get("GNIO_TOOL_BIN")
DATA = os.environ.get("GNIO_TEST_DATA_DIR")
# The executor the programs run on: GNIO_TEST_EXEC=cuda (scripts/gpu-check.sh) runs them on GPU 0.
EXEC = "cuda" if os.environ.get("GNIO_TEST_EXEC") == "cuda" else "host"
GPU = "0" if EXEC == "cuda" else "host"

CAPTURES = [
    "http.pcap",                          # IPv4 TCP/UDP
    "nb6-http.pcap",                      # IPv4 and IPv6
    "test_loopback.pcap",                 # IPv6 on a null link type
    "QinQpacket.pcap",                    # 802.1ad/802.1Q tags: vlanId; ARP frames are no IP flow
    "vxlan.pcap",                         # VXLAN: layer2SegmentId
    "geneve.pcap",
    "gen/gtpu.pcap",                      # GTP-U: flows keyed by TEID stay apart
    "gen/erspan2.pcap",
    "dns_udp.pcap",
    "corpus/tcpdump/icmpv6.pcap",         # ICMPv6
    "corpus/wireshark/ipv6.pcap",
]
PROTO = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def norm(addr):
    return str(ipaddress.ip_address(addr))


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def json_flows(j):
    """flow_count's IP flow rows by 5-tuple: [packets, bytes, tcp flags, vlan, rows]."""
    out = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in j["flow_rows"]:
        if r["family"] not in (4, 6):
            continue
        proto = PROTO.get(r["proto"]) or int(r["proto"])
        k = (proto, norm(r["src"]), norm(r["dst"]), r["src_port"], r["dst_port"])
        v = out[k]
        v[0] += r["packets"]
        v[1] += r["ip_bytes"]  # octetDeltaCount: IP bytes (the frames' are layer2OctetDeltaCount, which nfdump 1.7 drops)
        v[2] |= r.get("tcp_flags", 0) & 0xff
        v[3] = r.get("vlan", 0)
        v[4] += 1
    return out


def nfdump_flows(records):
    out = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in records:
        proto, src, dst, sp, dp = record_key(r)
        k = (proto, norm(src), norm(dst), sp, dp)
        v = out[k]
        v[0] += int(r["in_packets"])
        v[1] += int(r["in_bytes"])
        v[2] |= tcp_flags_bits(r.get("tcp_flags", "........")) if proto == 6 else 0
        v[3] = int(r.get("src_vlan", 0))
        v[4] += 1
    return out


# Captures of plain IP flows, where tshark's 5-tuples are flow_count's.
TSHARK_CAPTURES = {"http.pcap", "dns_udp.pcap", "test_loopback.pcap"}


def ms_of(text):
    """Milliseconds since the epoch of a decimal seconds string, truncated as the exporter truncates ns."""
    sec, _, frac = text.partition(".")
    return int(sec) * 1000 + int((frac + "000")[:3])


def nfdump_ms(text):
    """nfdump -o json's local time "2004-05-13T10:17:08.222" as milliseconds since the epoch."""
    base, _, frac = text.partition(".")
    return int(time.mktime(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))) * 1000 + int((frac + "000")[:3])


def tshark_flows(capture):
    """Per 5-tuple, as tshark reads the capture: [packets, IP bytes, first ms, last ms]."""
    fields = ["frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ip.proto", "ipv6.nxt", "tcp.srcport",
              "tcp.dstport", "udp.srcport", "udp.dstport", "ip.len", "ipv6.plen"]
    r = subprocess.run(["tshark", "-r", capture, "-T", "fields", "-E", "occurrence=f", "-E", "separator=|",
                        "-o", "gui.column.format:\"Time\",\"%Yt\""] + sum((["-e", f] for f in fields), []),
                       capture_output=True, text=True, timeout=120)
    out = {}
    for line in r.stdout.splitlines():
        t, s4, d4, s6, d6, p4, p6, ts, td, us, ud, ilen, plen = line.split("|")
        if not (s4 or s6):
            continue
        proto = int(p4 or p6 or 0)
        sp, dp = (ts, td) if proto == 6 else (us, ud) if proto == 17 else ("0", "0")
        k = (proto, norm(s4 or s6), norm(d4 or d6), int(sp or 0), int(dp or 0))
        v = out.setdefault(k, [0, 0, None, None])
        v[0] += 1
        v[1] += int(ilen) if s4 else 40 + int(plen)
        ms = ms_of(t)
        v[2] = ms if v[2] is None else min(v[2], ms)
        v[3] = ms if v[3] is None else max(v[3], ms)
    return out


def nfdump_times(records):
    """Per 5-tuple: [packets, bytes, first ms, last ms] as nfdump read them."""
    out = {}
    for r in records:
        proto, src, dst, sp, dp = record_key(r)
        k = (proto, norm(src), norm(dst), sp, dp)
        v = out.setdefault(k, [0, 0, None, None])
        v[0] += int(r["in_packets"])
        v[1] += int(r["in_bytes"])
        first, last = nfdump_ms(r["first"]), nfdump_ms(r["last"])
        v[2] = first if v[2] is None else min(v[2], first)
        v[3] = last if v[3] is None else max(v[3], last)
    return out


def export_capture(tmp, capture, extra=()):
    name = capture.replace("/", "_")
    with Collector(tmp, name) as c:
        out_json = os.path.join(tmp, name + ".json")
        r = run([FLOW_COUNT, "--port", f"pcap:file={os.path.join(DATA, capture)}", "--exec", EXEC, "--json",
                 out_json, "--ipfix", f"127.0.0.1:{c.port}", *extra])
        c.stop()
        if r.returncode != 0:
            print(r.stdout, r.stderr)
        j = json.load(open(out_json))
        check(j.get("executor") == EXEC, f"{name}: ran on the {j.get('executor')} executor, not {EXEC}")
        return r.returncode, j, c.records(), c.summary


def test_capture(tmp, capture):
    rc, j, records, summary = export_capture(tmp, capture)
    check(rc == 0, f"{capture}: flow_count exits 0")
    want, got = json_flows(j), nfdump_flows(records)
    ip_rows = sum(v[4] for v in want.values())
    check(j["ipfix"]["send_errors"] == 0, f"{capture}: no send errors")
    check(j["ipfix"]["records"] == ip_rows, f"{capture}: {ip_rows} records sent, one per IP flow")
    check(len(records) == ip_rows, f"{capture}: nfdump reads {len(records)} records, flow_count has {ip_rows} IP flows")
    check(set(got) == set(want), f"{capture}: the same {len(want)} 5-tuples")
    for k in sorted(set(got) | set(want), key=str):
        g, w = got.get(k), want.get(k)
        if g is None or w is None or g[:4] != w[:4]:
            check(False, f"{capture}: {k}: nfdump packets/bytes/flags/vlan {g and g[:4]} != flow_count {w and w[:4]}")
    packets = sum(v[0] for v in want.values())
    nbytes = sum(v[1] for v in want.values())
    check(summary is not None and summary["flows"] == ip_rows and summary["packets"] == packets
          and summary["bytes"] == nbytes and summary["sequence_errors"] == 0,
          f"{capture}: nfcapd counts {summary} = {ip_rows} flows, {packets} packets, {nbytes} bytes, no sequence errors")
    if capture in TSHARK_CAPTURES:
        ts, nf = tshark_flows(os.path.join(DATA, capture)), nfdump_times(records)
        bad = {k: (nf.get(k), ts.get(k)) for k in set(ts) | set(nf) if nf.get(k) != ts.get(k)}
        check(not bad, f"{capture}: nfdump's packets, IP bytes, first and last seen = tshark's for all {len(ts)} "
                       f"5-tuples (differing, nfdump vs tshark: {bad})")


def test_live_timeouts(tmp):
    """A paced generator run (about 3 s) with timeouts far below it: flows come in several records."""
    with Collector(tmp, "live") as c:
        out_json = os.path.join(tmp, "live.json")
        r = run([FLOW_COUNT, "--port", "gen:flows=6,mix=all,count=30000,rate=10kpps,vlan=42", "--exec", EXEC,
                 "--json", out_json, "--ipfix", f"127.0.0.1:{c.port}", "--ipfix-active-timeout", "0.5",
                 "--ipfix-idle-timeout", "0.3", "--ipfix-scan-interval", "0.1", "--ipfix-template-refresh", "1"])
        c.stop()
        check(r.returncode == 0, "live: flow_count exits 0")
        j = json.load(open(out_json))
        check(j.get("executor") == EXEC, f"live: flow_count ran on the {j.get('executor')} executor, not {EXEC}")
        records = c.records()
    want, got = json_flows(j), nfdump_flows(records)
    check(set(got) == set(want), f"live: the same {len(want)} flows")
    check(all(got[k][:2] == want[k][:2] for k in want if k in got), "live: packets and bytes per flow sum up exactly")
    check(all(v[3] == 42 for v in got.values()), "live: every record carries vlanId 42")
    check(len(records) > len(want), f"live: {len(records)} records for {len(want)} flows (active timeout splits them)")
    check(j["ipfix"]["template_messages"] >= 2, f"live: templates resent ({j['ipfix']['template_messages']} times)")
    check(c.summary is not None and c.summary["sequence_errors"] == 0, f"live: nfcapd sees no sequence errors")


def test_pp(tmp):
    """pp's conversations: one record per conversation, both directions counted in it."""
    capture = os.path.join(DATA, "http.pcap")
    with Collector(tmp, "pp") as c:
        out_json = os.path.join(tmp, "pp.json")
        r = run([GNIO, "pp", "--port", f"pcap:file={capture}", "--gpu", GPU, "--json", out_json,
                 "--ipfix", f"127.0.0.1:{c.port}"])
        c.stop()
        check(r.returncode == 0, "pp: exits 0")
        j = json.load(open(out_json))
        check(j.get("executor") == EXEC, f"pp: ran on the {j.get('executor')} executor, not {EXEC}")
        records = c.records()
    check(len(records) == j["tcp_flows"] + j["udp_flows"],
          f"pp: {len(records)} records = tcp_flows {j['tcp_flows']} + udp_flows {j['udp_flows']}")
    # The same packets as flow_count's flows with both directions folded together.
    _, fc, _, _ = export_capture(tmp, "http.pcap")
    conv = collections.defaultdict(lambda: [0, 0])
    for r in fc["flow_rows"]:
        if r["proto"] in ("tcp", "udp"):
            a, b = (r["src"], r["src_port"]), (r["dst"], r["dst_port"])
            k = (r["proto"],) + (a + b if (ipaddress.ip_address(a[0]).packed, a[1]) <= (ipaddress.ip_address(b[0]).packed, b[1]) else b + a)
            conv[k][0] += r["packets"]
            conv[k][1] += r["ip_bytes"]
    got = {}
    for r in records:
        proto, src, dst, sp, dp = record_key(r)
        got[({6: "tcp", 17: "udp"}[proto], src, sp, dst, dp)] = [int(r["in_packets"]), int(r["in_bytes"])]
    check(got == dict(conv), f"pp: conversations' packets and bytes {got} == flow_count's, folded {dict(conv)}")


def conversation(k):
    """A 5-tuple's conversation: (protocol, its two endpoints in either order)."""
    proto, src, dst, sp, dp = k
    return (proto, frozenset([(norm(src), sp), (norm(dst), dp)]))


def fold(flows):
    """Per-5-tuple [packets, bytes, first ms, last ms] folded into conversations (TCP and UDP only)."""
    out = {}
    for k, (packets, nbytes, first, last) in flows.items():
        if k[0] not in (6, 17):
            continue
        v = out.setdefault(conversation(k), [0, 0, first, last])
        v[0] += packets
        v[1] += nbytes
        v[2] = min(v[2], first)
        v[3] = max(v[3], last)
    return out


def test_pp_times(tmp):
    """pp's conversation records carry capture times: per conversation, nfdump's packets, IP bytes, first and
    last seen equal tshark's for the packets of both directions."""
    for capture in sorted(TSHARK_CAPTURES):
        with Collector(tmp, "pp-times-" + capture) as c:
            r = run([GNIO, "pp", "--port", f"pcap:file={os.path.join(DATA, capture)}", "--gpu", GPU,
                     "--stats-interval", "0", "--ipfix", f"127.0.0.1:{c.port}"])
            c.stop()
            check(r.returncode == 0, f"pp {capture}: exits 0")
            records = c.records()
        got, want = fold(nfdump_times(records)), fold(tshark_flows(os.path.join(DATA, capture)))
        bad = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
        check(want and not bad, f"pp {capture}: nfdump's packets, IP bytes, first and last seen = tshark's for all "
              f"{len(want)} conversations" + (f"; differ (nfdump, tshark): {bad}" if bad else ""))


def nfdump_totals(records):
    return (len(records), sum(int(r["in_packets"]) for r in records), sum(int(r["in_bytes"]) for r in records))


def test_burst_default_buffers(tmp):
    """65,536 flows, all flushed at the end of the run, to nfcapd with its default socket buffer (no -B: the
    documented command). Unpaced, the burst overflowed that buffer and most records were dropped, silently."""
    flows = 65536
    with Collector(tmp, "burst", rcvbuf=None) as c:
        out_json = os.path.join(tmp, "burst.json")
        r = run([FLOW_COUNT, "--port", f"gen:flows={flows},count={2 * flows}", "--exec", EXEC, "--table", "262144",
                 "--top", "0", "--json", out_json, "--ipfix", f"127.0.0.1:{c.port}"])
        c.stop()
        check(r.returncode == 0, f"burst: flow_count exits 0 ({r.returncode}: {r.stderr.strip()[-300:]})")
        j = json.load(open(out_json))
        records = c.records()
    ipx = j["ipfix"]
    check(j["flows"] == flows and ipx["records"] == flows, f"burst: {j['flows']} flows, {ipx['records']} records")
    check(ipx.get("records_sent") == flows and ipx.get("records_not_sent") == 0,
          f"burst: the JSON has every record sent ({ipx.get('records_sent')} sent, {ipx.get('records_not_sent')} not)")
    check(not j["flows_truncated"], "burst: the JSON lists every flow")
    got, want = nfdump_totals(records), (flows, j["packets"], sum(r["ip_bytes"] for r in j["flow_rows"]))
    check(got == want, f"burst: nfdump's records, packets, IP bytes {got} == flow_count's {want}")
    check(c.summary is not None and c.summary["socket_drops"] == 0 and c.summary["sequence_errors"] == 0,
          f"burst: nfcapd's socket dropped nothing, no sequence errors ({c.summary})")


def test_stop_leaves_unsent(tmp):
    """--duration stops the run; at 50 messages/s the final flush of 16,384 records (713 messages) cannot finish
    within --ipfix-flush-timeout 1: the rest is counted as unsent, said on stderr, and what was sent arrived."""
    with Collector(tmp, "stop") as c:
        out_json = os.path.join(tmp, "stop.json")
        r = run([FLOW_COUNT, "--port", "gen:flows=16384", "--exec", EXEC, "--table", "65536", "--duration", "1",
                 "--top", "0", "--json", out_json, "--ipfix", f"127.0.0.1:{c.port}", "--ipfix-rate", "50",
                 "--ipfix-flush-timeout", "1"])
        c.stop()
        j = json.load(open(out_json))
        records = c.records()
    ipx = j["ipfix"]
    check(r.returncode == 0 and j["stopped_early"], f"stop: flow_count exits 0, stopped by --duration ({r.returncode})")
    check(ipx["records_unsent"] > 0 and ipx["records_not_sent"] == ipx["records_unsent"] + ipx["records_failed"],
          f"stop: {ipx['records_unsent']} records counted as unsent")
    check(ipx["records"] == ipx["records_sent"] + ipx["records_failed"] + ipx["records_unsent"],
          f"stop: records {ipx['records']} = sent {ipx['records_sent']} + failed + unsent")
    check("not sent" in r.stderr and "flush-timeout" in r.stderr, f"stop: stderr says so: {r.stderr.strip()[-400:]}")
    check(len(records) == ipx["records_sent"], f"stop: nfdump has the {ipx['records_sent']} records sent ({len(records)})")


def write_churn_pcap(path, flows):
    """flows two-packet UDP flows, one after another: 10.1.x.y:30000+i to 192.0.2.1:9."""
    def frame(i):
        l4 = struct.pack("!HHHH", 30000 + i, 9, 8 + 18, 0) + b"x" * 18
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0, 64, 17, 0, bytes([10, 1, i >> 8, i & 255]),
                         bytes([192, 0, 2, 1]))
        s = sum(struct.unpack("!10H", ip))
        s = (s & 0xffff) + (s >> 16)
        s = (s & 0xffff) + (s >> 16)
        ip = ip[:10] + struct.pack("!H", ~s & 0xffff) + ip[12:]
        return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + l4
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        t = 0
        for i in range(1, flows + 1):
            p = frame(i)
            for _ in range(2):
                t += 1
                f.write(struct.pack("<IIII", t // 1000000, t % 1000000, len(p), len(p)) + p)


def test_churn(tmp):
    """2,048 flows through --table 512 (two tables of it), paced: flows end by the idle timeout while the run goes
    on, each with one record; the records add up to the JSON's rows, which add up to its packets."""
    flows = 2048
    pcap = os.path.join(tmp, "churn.pcap")
    write_churn_pcap(pcap, flows)
    with Collector(tmp, "churn") as c:
        out_json = os.path.join(tmp, "churn.json")
        r = run([FLOW_COUNT, "--port", f"pcap:file={pcap},rate=4000pps", "--exec", EXEC, "--table", "512",
                 "--flow-idle-timeout", "500ms", "--top", "0", "--json", out_json, "--ipfix", f"127.0.0.1:{c.port}"])
        c.stop()
        check(r.returncode == 0, f"churn: flow_count exits 0 ({r.returncode}: {r.stderr.strip()[-300:]})")
        j = json.load(open(out_json))
        records = c.records()
    want, got = json_flows(j), nfdump_flows(records)
    rows = sum(v[4] for v in want.values())
    check(j["flows_expired"] > 0 and j["table_flips"] > 0,
          f"churn: flows ended during the run ({j['flows_expired']}, {j['table_flips']} flips)")
    check(j["table_full"] < flows // 10, f"churn: the table kept room ({j['table_full']} table_full)")
    check(sum(v[0] for v in want.values()) + j["table_full"] == j["packets"] == 2 * flows,
          f"churn: rows and table_full add up to the {j['packets']} packets")
    check(j["ipfix"]["records"] == rows and len(records) == rows,
          f"churn: one record per row ({j['ipfix']['records']} sent, {len(records)} read, {rows} rows)")
    check(got == want, "churn: nfdump's flows, packets and bytes are the JSON's rows")
    # Each flow's two packets are 1 us apart in the capture, flow i at i * 2 us: every record's first and last
    # seen are those capture times (to the ms), not the times of the run.
    # A packet that found the table full (table_full, counted in the JSON) is in no row: its flow's record
    # shows fewer packets than tshark, or there is none. Every other flow must match exactly.
    ts, nf = tshark_flows(pcap), nfdump_times(records)
    differ = [k for k in ts if nf.get(k) != ts[k]]
    short = [k for k in differ if k not in nf or nf[k][0] < ts[k][0]]
    lost = sum(ts[k][0] - (nf[k][0] if k in nf else 0) for k in short)
    check(set(nf) <= set(ts) and differ == short and lost == j["table_full"],
          f"churn: nfdump's packets, IP bytes, first and last seen = tshark's for {len(ts) - len(differ)} of "
          f"{len(ts)} flows; the {len(differ)} others lack {lost} packets, table_full {j['table_full']}")


def test_bad_collector():
    for prog in ([FLOW_COUNT], [GNIO, "pp"]):
        for bad, why in (("no-such-host.invalid:4739", "cannot resolve"), ("127.0.0.1:0", "port 0"),
                         ("127.0.0.1", "no port"), ("127.0.0.1:99999", "99999"), ("", "needs HOST:PORT")):
            r = run(prog + ["--port", f"pcap:file={os.path.join(DATA, 'http.pcap')}", "--ipfix", bad])
            name = os.path.basename(prog[0]) + (" pp" if len(prog) > 1 else "")
            check(r.returncode == 2 and "--ipfix" in r.stderr and why in r.stderr,
                  f"{name} --ipfix {bad}: exit 2 naming the option ({r.returncode}: {r.stderr.strip()})")


def main():
    missing = [n for n, v in (("GNIO_FLOW_COUNT_BIN", FLOW_COUNT), ("GNIO_TOOL_BIN", GNIO),
                              ("GNIO_TEST_DATA_DIR", DATA)) if not v]
    if missing:
        print("set by ctest: " + ", ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gnio-ipfix-") as tmp:
        for cap in CAPTURES:
            test_capture(tmp, cap)
        test_live_timeouts(tmp)
        test_burst_default_buffers(tmp)
        test_stop_leaves_unsent(tmp)
        test_churn(tmp)
        test_pp(tmp)
        test_pp_times(tmp)
        test_bad_collector()
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
