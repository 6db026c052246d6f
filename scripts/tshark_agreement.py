#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How often gnio pp counts what tshark counts, over sets of captures.

    scripts/tshark_agreement.py [--gnio PATH] [--json OUT] [--min PCT] TARGET...

A TARGET is a manifest (MANIFEST.tsv, as scripts/tshark_counts.py writes it;
paths relative to its folder) or a folder: its MANIFEST.tsv when it has one,
else every capture under it (*.pcap, *.pcapng, *.cap, *.pcap.gz, ...), with
tshark's counts computed on the fly by scripts/tshark_counts.py.

Every capture is run through `gnio pp --port pcap:file=F --gpu host --json J`
and each counted field of the JSON is compared with its manifest column (the
fields of tests/integration/pp_test.cpp, plus the tunnel and reassembly
counters when pp's JSON has them). Captures pp refuses (a link type it does
not read, .gz, a broken file header) and runs that fail or time out are
reported as skipped and not counted.

Prints the files, fields compared, fields equal and the agreement in percent,
then the mismatches per field and per file (tshark vs pp). --json OUT writes
all of it. Exit status 0: it measures, it does not judge; with --min PCT it
exits 1 when the agreement is below PCT.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tshark_counts  # noqa: E402

# (pp JSON key, manifest column), as pp_test.cpp's k_fields, then the new ones.
FIELDS = [
    ("packets", "packets"), ("ipv4", "ipv4"), ("ipv6", "ipv6"), ("tcp", "tcp"),
    ("udp", "udp"), ("icmp", "icmp"), ("icmpv6", "icmpv6"), ("arp", "arp"),
    ("vlan", "vlan"), ("dns_queries", "dns_queries"),
    ("dns_responses", "dns_responses"), ("http_requests", "http_requests"),
    ("http_responses", "http_responses"), ("icmp_echo_req", "icmp_echo_req"),
    ("icmp_echo_reply", "icmp_echo_reply"), ("tcp_flows", "tcp_streams"),
    ("udp_flows", "udp_streams"),
    ("gre", "gre"), ("vxlan", "vxlan"), ("geneve", "geneve"), ("gtpu", "gtpu"),
    ("ipip", "ipip"), ("mpls", "mpls"), ("pppoe", "pppoe"),
    ("frag_reassembled", "fragments_reassembled"),
]

CAPTURE_ENDINGS = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")


def default_gnio():
    root = os.path.dirname(HERE)
    for b in ("build", "build-host"):
        p = os.path.join(root, b, "tools", "gnio", "gnio")
        if os.path.exists(p):
            return p
    return os.path.join(root, "build", "tools", "gnio", "gnio")


def read_manifest(path):
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    header = lines[0].split("\t")
    base = os.path.dirname(os.path.abspath(path))
    rows = []
    for l in lines[1:]:
        r = dict(zip(header, l.split("\t")))
        r["_file"] = os.path.join(base, r["path"])
        rows.append(r)
    return rows


def rows_of(target):
    """(label, rows) for a manifest or a folder."""
    if os.path.isfile(target):
        return target, read_manifest(target)
    m = os.path.join(target, "MANIFEST.tsv")
    if os.path.isfile(m):
        return target, read_manifest(m)
    files = []
    for d, _, names in os.walk(target):
        for n in sorted(names):
            if n.lower().endswith(CAPTURE_ENDINGS):
                files.append(os.path.join(d, n))
    files.sort()
    pairs = [(f, os.path.relpath(f, target)) for f in files]
    rows = []
    for f, r in zip(files, tshark_counts.rows(pairs)):
        r["_file"] = f
        rows.append(r)
    return target, rows


def run_pp(gnio, path, timeout):
    """(json or None, why skipped or None)."""
    if path.endswith(".gz"):
        return None, "gzip-compressed (pp reads plain pcap/pcapng)"
    with tempfile.TemporaryDirectory(prefix="agree") as tmp:
        out = os.path.join(tmp, "pp.json")
        cmd = [gnio, "pp", "--port", "pcap:file=" + path, "--gpu", "host", "--json", out]
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "timed out after %d s" % timeout
        j = None
        if os.path.exists(out):
            try:
                with open(out) as f:
                    j = json.load(f)
            except ValueError:
                j = None
        if p.returncode != 0 or j is None:
            why = (j or {}).get("error") or p.stderr.strip().split("\n")[-1] or "exit %d" % p.returncode
            return None, "refused: " + why
        return j, None


def compare(row, j):
    """[(field, tshark, pp)] for every field both sides have."""
    out = []
    for key, col in FIELDS:
        if key not in j or col not in row or row[col] in ("", "-"):
            continue
        try:
            want = int(row[col])
        except ValueError:
            continue
        got = j[key]
        if not isinstance(got, int):
            continue
        out.append((key, want, got))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("targets", nargs="+", metavar="TARGET")
    ap.add_argument("--gnio", default=default_gnio(), help="the gnio tool (default: %(default)s)")
    ap.add_argument("--json", metavar="OUT", help="write every figure and mismatch here")
    ap.add_argument("--min", type=float, metavar="PCT", help="exit 1 below this agreement")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per pp run")
    ap.add_argument("-j", "--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                    help="pp runs at a time (default: %(default)s)")
    ap.add_argument("--list", type=int, default=10, metavar="N",
                    help="print the N worst fields and files (default 10; 0 prints all)")
    a = ap.parse_args()
    if not os.access(a.gnio, os.X_OK):
        print("no gnio tool at %s (--gnio PATH)" % a.gnio, file=sys.stderr)
        return 2
    tshark_counts.JOBS = max(1, a.jobs)

    result = {"gnio": a.gnio, "targets": []}
    total = {"files": 0, "skipped": 0, "compared": 0, "equal": 0}
    for t in a.targets:
        label, rows = rows_of(t)
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
            runs = list(ex.map(lambda r: run_pp(a.gnio, r["_file"], a.timeout), rows))
        tr = {"target": label, "files": 0, "skipped": [], "compared": 0, "equal": 0,
              "per_field": {}, "per_file": {}}
        for row, (j, why) in zip(rows, runs):
            if j is None:
                tr["skipped"].append({"path": row["path"], "why": why})
                continue
            tr["files"] += 1
            for key, want, got in compare(row, j):
                pf = tr["per_field"].setdefault(key, {"compared": 0, "equal": 0, "mismatches": []})
                pf["compared"] += 1
                tr["compared"] += 1
                if want == got:
                    pf["equal"] += 1
                    tr["equal"] += 1
                else:
                    pf["mismatches"].append({"path": row["path"], "tshark": want, "pp": got})
                    tr["per_file"].setdefault(row["path"], []).append(
                        {"field": key, "tshark": want, "pp": got})
        tr["agreement_pct"] = round(100.0 * tr["equal"] / tr["compared"], 2) if tr["compared"] else None
        result["targets"].append(tr)
        for k in ("files", "compared", "equal"):
            total[k] += tr[k]
        total["skipped"] += len(tr["skipped"])
        report(tr, a.list)
    total["agreement_pct"] = (round(100.0 * total["equal"] / total["compared"], 2)
                              if total["compared"] else None)
    result["total"] = total
    if len(a.targets) > 1:
        print("== all: %d files (%d skipped), %d fields compared, %d equal, agreement %s%%" % (
            total["files"], total["skipped"], total["compared"], total["equal"],
            total["agreement_pct"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    if a.min is not None and (total["agreement_pct"] or 0.0) < a.min:
        return 1
    return 0


def report(tr, n):
    print("== %s: %d files (%d skipped), %d fields compared, %d equal, agreement %s%%" % (
        tr["target"], tr["files"], len(tr["skipped"]), tr["compared"], tr["equal"],
        tr["agreement_pct"]))
    fields = sorted(tr["per_field"].items(), key=lambda kv: (-len(kv[1]["mismatches"]), kv[0]))
    fields = [kv for kv in fields if kv[1]["mismatches"]]
    if fields:
        print("mismatches per field (files differing / files compared):")
        for key, pf in fields[:n or None]:
            ex = ", ".join("%s %d vs %d" % (m["path"], m["tshark"], m["pp"])
                           for m in pf["mismatches"][:3])
            print("  %-22s %4d / %-4d e.g. %s" % (key, len(pf["mismatches"]), pf["compared"], ex))
    files = sorted(tr["per_file"].items(), key=lambda kv: (-len(kv[1]), kv[0]))
    if files:
        print("mismatches per file (field: tshark vs pp):")
        for path, ms in files[:n or None]:
            print("  %s: %s" % (path, ", ".join("%s %d vs %d" % (m["field"], m["tshark"], m["pp"])
                                                for m in ms)))
        if n and len(files) > n:
            print("  ... and %d more files (--list 0 prints all)" % (len(files) - n))
    if tr["skipped"]:
        print("skipped: %d (%s)" % (len(tr["skipped"]), "; ".join(
            "%s: %s" % (s["path"], s["why"]) for s in tr["skipped"][:n or None])))


if __name__ == "__main__":
    sys.exit(main())
