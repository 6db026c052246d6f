#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# --filter against tcpdump: for a set of expressions on captures from
# tests/data and the corpus, the frames a program let through (received
# minus filtered) equal what `tcpdump -r FILE -w OUT EXPR` writes, and the
# accounting identity holds with filtered in it.
#
#   filter_test.py pp | flow_count | l2fwd    the counts, per program
#   filter_test.py bad-input                  bad expressions: exit 2, the
#                                             expression and libpcap's message
#   filter_test.py write                      --write FILE: for each program, the
#                                             frames written are those tcpdump -w
#                                             writes for the expression (and all
#                                             of them without one): same bytes,
#                                             original lengths and capture times
#   filter_test.py record OUT.json            tcpdump's counts written down, for
#                                             a machine without tcpdump (the GPU
#                                             machine): there GNIO_FILTER_EXPECTED
#                                             names that file
#
# Exits 77 (skipped) without tcpdump or recorded counts. The programs come from GNIO_TOOL_BIN,
# GNIO_FLOW_COUNT_BIN and GNIO_L2FWD_BIN, the captures from
# GNIO_TEST_DATA_DIR and GNIO_CORPUS_DIR (ctest sets them).
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

LIMIT_S = 60  # a guard against hangs, never a measure of speed
EXEC = "cuda" if os.environ.get("GNIO_TEST_EXEC") == "cuda" else "host"
GPU = "0" if EXEC == "cuda" else "host"

EXPRESSIONS = [
    "udp",
    "tcp port 80",
    "ip6",
    "vlan",
    "icmp or arp",
    "net 10.0.0.0/8",
    "udp and dst port 53",
    "tcp[tcpflags] & tcp-syn != 0",
    "greater 200",
    "not ip",
]

# Captures with what the expressions ask about: UDP/DNS and ICMP, HTTP,
# IPv6 and ARP, 802.1Q and QinQ, DHCP, VXLAN, damaged frames.
CAPTURES = [
    ("data", "dns_icmp.pcap"),
    ("data", "http.pcap"),
    ("data", "nb6-http.pcap"),
    ("data", "QinQpacket.pcap"),
    ("data", "dhcp-rfc4388.pcap"),
    ("corpus", "tcpdump/arista_ether.pcap"),
    ("corpus", "tcpdump/vxlan.pcap"),
    ("corpus", "tcpdump/malformed/nfs-attr-oobr.pcap"),
    ("corpus", "wireshark/communityid.pcap.gz"),
    ("corpus", "python3-libtrace/icmp6-sample.pcap.gz"),
]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from testenv import env  # noqa: E402
import pcapfile  # noqa: E402


def captures(tmp):
    """The captures as plain files (tcpdump does not read .gz): (name, path)."""
    data = env("GNIO_TEST_DATA_DIR", "dir")
    corpus = os.environ.get("GNIO_CORPUS_DIR") or os.path.join(data, "corpus")
    out = []
    for where, rel in CAPTURES:
        src = os.path.join(data if where == "data" else corpus, rel)
        if not os.path.isfile(src):
            sys.exit(f"capture {src} is missing ({where}; see tests/data/MANIFEST.tsv)")
        if src.endswith(".gz"):
            dst = os.path.join(tmp, os.path.basename(src)[:-3])
            with gzip.open(src, "rb") as i, open(dst, "wb") as o:
                shutil.copyfileobj(i, o)
            src = dst
        out.append((rel, src))
    return out


def tcpdump_count(tcpdump, path, expr, tmp):
    """The packets tcpdump's filter selects: written with -w and counted,
    as some decoders print a packet on several lines."""
    out = os.path.join(tmp, "tcpdump.pcap")
    subprocess.run([tcpdump, "-r", path, "-w", out, expr], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=LIMIT_S, check=True)
    return len(pcapfile.records(out))


def run_program(mode, path, expr, tmp, extra=None):
    out = os.path.join(tmp, "out.json")
    if mode == "pp":
        cmd = [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--stats-interval", "0", "--rx-slot", "65536",
               "--port", f"pcap:file={path}", "--json", out]
    elif mode == "flow_count":
        cmd = [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC, "--stats-interval", "0", "--rx-slot", "65536",
               "--port", f"pcap:file={path}", "--json", out]
    else:
        cmd = [env("GNIO_L2FWD_BIN"), "--gpu", GPU, "--stats-interval", "0", "--rx-slot", "65536",
               "--port", f"pcap:file={path},tx={os.path.join(tmp, 'tx.pcap')}", "--json", out]
    cmd += extra if extra is not None else ["--filter", expr]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=LIMIT_S, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    with open(out) as f:
        return json.load(f), r.stdout, cmd


def tcpdump_version(tcpdump):
    r = subprocess.run([tcpdump, "--version"], capture_output=True, text=True, timeout=LIMIT_S)
    return (r.stdout or r.stderr).splitlines()[0].strip()


def record(out_path):
    tcpdump = shutil.which("tcpdump")
    if not tcpdump:
        sys.exit("record: tcpdump not found (apt-get install tcpdump)")
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in captures(tmp):
            counts[name] = {expr: tcpdump_count(tcpdump, path, expr, tmp) for expr in EXPRESSIONS}
    with open(out_path, "w") as f:
        json.dump({"tool": tcpdump_version(tcpdump), "counts": counts}, f, indent=1)
    print(f"record: tcpdump's counts for {len(counts)} captures x {len(EXPRESSIONS)} expressions in {out_path}")
    return 0


def check_counts(mode):
    tcpdump = shutil.which("tcpdump")
    recorded = None
    if not tcpdump:
        expected = os.environ.get("GNIO_FILTER_EXPECTED", "")
        if not os.path.isfile(expected):
            print("tcpdump not found: skipped (apt-get install tcpdump; scripts/setup.sh does)")
            return 77
        with open(expected) as f:
            recorded = json.load(f)
        print(f"tcpdump not found: its counts as recorded in {expected} ({recorded['tool']})")
    failures = 0
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in captures(tmp):
            for expr in EXPRESSIONS:
                want = recorded["counts"][name][expr] if recorded else tcpdump_count(tcpdump, path, expr, tmp)
                j, text, cmd = run_program(mode, path, expr, tmp)
                received, filtered = j["received"], j["filtered"]
                matched = received - filtered
                rest = j["missed"] + j["unsteered"] + j["pending"]
                ok = matched == want and j["processed"] == matched and rest == 0 and j["unaccounted"] == 0
                if mode == "l2fwd":
                    ok = ok and j["forwarded"] == matched
                checked += 1
                print(f"{'ok  ' if ok else 'FAIL'} {mode} {name:42} {expr!r:34} tcpdump {want:4} gnio {matched:4} "
                      f"(received {received}, filtered {filtered})")
                if not ok:
                    failures += 1
                    print(f"  {' '.join(cmd)}\n{text}")
                    if "filtered" not in text:
                        print("  the accounting line does not name filtered")
    print(f"{checked - failures}/{checked} agree with tcpdump")
    return 1 if failures else 0


def check_write():
    tcpdump = shutil.which("tcpdump")
    if not tcpdump:
        print("tcpdump not found: skipped (apt-get install tcpdump; scripts/setup.sh does)")
        return 77
    failures = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in captures(tmp)[:5]:
            for expr in ("", "udp", "tcp port 80", "vlan", "not ip"):
                want_path = os.path.join(tmp, "want.pcap")
                subprocess.run([tcpdump, "-r", path, "-w", want_path] + ([expr] if expr else []),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=LIMIT_S, check=True)
                want = pcapfile.records(want_path)
                for mode in ("pp", "flow_count", "l2fwd"):
                    got_path = os.path.join(tmp, "got.pcap")
                    if os.path.exists(got_path):
                        os.unlink(got_path)
                    extra = ["--write", got_path] + (["--filter", expr] if expr else [])
                    j, text, cmd = run_program(mode, path, expr, tmp, extra)
                    got = pcapfile.records(got_path)
                    # Queues are written as the engine hands them over: order
                    # across queues may differ from the capture's.
                    ok = sorted(got) == sorted(want) and j.get("written") == len(want)
                    checked += 1
                    print(f"{'ok  ' if ok else 'FAIL'} {mode:10} --write {name:24} {expr or '(no filter)'!r:16} "
                          f"tcpdump -w {len(want):4} gnio {len(got):4}")
                    if not ok:
                        failures += 1
                        print(f"  {' '.join(cmd)}\n{text}")
        failures += check_rotation(tmp, tcpdump)
    print(f"{checked - failures}/{checked} --write files equal tcpdump's")
    return 1 if failures else 0


def check_rotation(tmp, tcpdump):
    """--write-size and --write-seconds (tcpdump's -C and -G): the files, in
    order, hold tcpdump -w's frames; each file but the last grew past the
    size (and not by more than one frame), or each spans less than the time."""
    data = env("GNIO_TEST_DATA_DIR", "dir")
    failures = 0
    for cap, flag, value in (("http.pcap", "--write-size", "0.01"), ("dns_icmp.pcap", "--write-seconds", "2"),
                             ("QinQpacket.pcap", "--write-seconds", "300")):
        path = os.path.join(data, cap)
        want_path = os.path.join(tmp, "want.pcap")
        subprocess.run([tcpdump, "-r", path, "-w", want_path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=LIMIT_S, check=True)
        want = pcapfile.records(want_path)
        base = os.path.join(tmp, "rot.pcap")
        for f in os.listdir(tmp):
            if f.startswith("rot.pcap"):
                os.unlink(os.path.join(tmp, f))
        for mode in ("pp", "flow_count", "l2fwd"):
            j, text, cmd = run_program(mode, path, "", tmp, ["--write", base, flag, value])
            files = [base] + [f"{base}{i}" for i in range(1, 10000) if os.path.exists(f"{base}{i}")]
            parts = [pcapfile.records(f) for f in files]
            got = [r for p in parts for r in p]
            ok = len(files) > 1 and sorted(got) == sorted(want)
            for p, f in zip(parts[:-1], files[:-1]):
                if flag == "--write-size":
                    size = os.path.getsize(f)
                    ok = ok and float(value) * 1e6 < size <= float(value) * 1e6 + 16 + 65535
                else:
                    ok = ok and p and max(r[0] for r in p) - p[0][0] < int(value) * 1_000_000_000
            print(f"{'ok  ' if ok else 'FAIL'} {mode:10} --write {cap} {flag} {value}: {len(files)} files, "
                  f"{len(got)} frames, tcpdump -w {len(want)}")
            if not ok:
                failures += 1
                print(f"  {' '.join(cmd)}\n{text}")
            for f in files:
                os.unlink(f)
    return failures


def check_bad_input():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(env("GNIO_TEST_DATA_DIR", "dir"), "dns_icmp.pcap")
        progs = [
            ("pp", [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--port", f"pcap:file={path}"]),
            ("flow_count", [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC, "--port", f"pcap:file={path}"]),
            ("l2fwd", [env("GNIO_L2FWD_BIN"), "--gpu", GPU, "--port",
                       f"pcap:file={path},tx={os.path.join(tmp, 'tx.pcap')}"]),
        ]
        for prog, base in progs:
            for expr, words in [("udp and and", "syntax error"), ("port 99999", "port"), ("frobnicate", "")]:
                r = subprocess.run(base + ["--filter", expr], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=LIMIT_S, text=True)
                ok = r.returncode == 2 and f"'{expr}'" in r.stdout and "libpcap" in r.stdout and words in r.stdout
                print(f"{'ok  ' if ok else 'FAIL'} {prog} --filter {expr!r}: exit {r.returncode}")
                if not ok:
                    failures += 1
                    print(r.stdout)
    return 1 if failures else 0


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode in ("pp", "flow_count", "l2fwd"):
        return check_counts(mode)
    if mode == "bad-input":
        return check_bad_input()
    if mode == "write":
        return check_write()
    if mode == "record" and len(sys.argv) == 3:
        return record(sys.argv[2])
    sys.exit("usage: filter_test.py pp|flow_count|l2fwd|bad-input|write|record OUT.json")


if __name__ == "__main__":
    sys.exit(main())
