#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts what tshark sees in captures, as the rows of tests/data/MANIFEST.tsv.

    scripts/tshark_counts.py [--root DIR] [--no-header] CAPTURE...
    scripts/tshark_counts.py --update tests/data/MANIFEST.tsv [--root DIR]
    scripts/tshark_counts.py --check tests/data/MANIFEST.tsv [--root DIR]

The first form prints a header and one row per capture; `path` is relative to
--root (default: the path as given). The second rewrites a manifest in place:
same rows in the same order, every count recomputed, the columns below added.
The third recomputes a manifest and prints every cell that differs (exit 1).
Paths in a manifest are relative to its folder unless --root says otherwise.

Needs tshark and capinfos (Debian package tshark); Python standard library
only. tshark runs once per file (-T fields, every occurrence of every field);
the columns come from its output:

  format, linktype   capinfos -T -r -t -E  ("-" when capinfos cannot read it)
  packets            frames tshark reads (up to a read error, as tshark does)
  ipv4 ipv6 tcp udp icmp icmpv6 arp vlan
                     frames whose frame.protocols has the token ip, ipv6, tcp,
                     udp, icmp, icmpv6, arp or vlan (the frame count of the
                     display filter of the same name: quoted packets inside an
                     ICMP error count too); vlan also counts frames with
                     ieee8021ad (802.1ad S-tags)
  dns_queries        frames with a dns.flags.response value 0
  dns_responses      frames with a dns.flags.response value 1
  http_requests      frames with http.request
  http_responses     frames with http.response
  icmp_echo_req      frames whose first icmp.type is 8 (an echo request
                     quoted inside an ICMP error does not count)
  icmp_echo_reply    frames whose first icmp.type is 0
  tcp_streams        distinct tcp.stream values
  udp_streams        distinct udp.stream values
  gre vxlan geneve mpls pppoe
                     frames whose frame.protocols has gre, vxlan, geneve, mpls
                     or pppoes
  gtpu               frames with a gtp.message value 255 (G-PDU)
  ipip               frames where an ip or ipv6 token of frame.protocols is
                     followed directly (IPv6 extension headers skipped) by ip
                     or ipv6
  fragments_reassembled
                     frames with ip.reassembled.length or
                     ipv6.reassembled.length (the frame that completes a
                     datagram and shows it reassembled)

tshark runs in one pass with its default preferences (no -2, no -o).
"""
import argparse
import concurrent.futures
import hashlib
import os
import subprocess
import sys

COLUMNS = [
    "path", "bytes", "sha256", "format", "linktype", "packets", "ipv4", "ipv6",
    "tcp", "udp", "icmp", "icmpv6", "arp", "vlan", "dns_queries",
    "dns_responses", "http_requests", "http_responses", "icmp_echo_req",
    "icmp_echo_reply", "tcp_streams", "udp_streams",
    "gre", "vxlan", "geneve", "gtpu", "ipip", "mpls", "pppoe",
    "fragments_reassembled",
]

FIELDS = [
    "frame.protocols", "dns.flags.response", "http.request", "http.response",
    "icmp.type", "tcp.stream", "udp.stream", "gtp.message",
    "ip.reassembled.length", "ipv6.reassembled.length",
]

PROTO_COLUMNS = {
    "ipv4": "ip", "ipv6": "ipv6", "tcp": "tcp", "udp": "udp", "icmp": "icmp",
    "icmpv6": "icmpv6", "arp": "arp", "vlan": "vlan", "gre": "gre",
    "vxlan": "vxlan", "geneve": "geneve", "mpls": "mpls", "pppoe": "pppoes",
}


def capinfos(path):
    r = subprocess.run(["capinfos", "-T", "-r", "-t", "-E", path],
                       capture_output=True, text=True)
    line = r.stdout.strip().split("\n")[-1] if r.stdout.strip() else ""
    parts = line.split("\t")
    if len(parts) < 3 or parts[0] != path:
        return "-", "-"
    return parts[-2], parts[-1]


def num(text):
    """An integer field as tshark prints it (decimal, or 0x... for hex ones)."""
    try:
        return int(text, 0)
    except ValueError:
        return None


def has_ipip(tokens):
    for i, t in enumerate(tokens):
        if t not in ("ip", "ipv6"):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].startswith("ipv6."):
            j += 1
        if j < len(tokens) and tokens[j] in ("ip", "ipv6"):
            return True
    return False


def tshark_counts(path):
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=,", "-E", "separator=/t", "-E", "quote=n"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    c = {k: 0 for k in COLUMNS[5:]}
    tcp_streams, udp_streams = set(), set()
    for line in r.stdout.split("\n"):
        if not line:
            continue
        v = line.split("\t")
        v += [""] * (len(FIELDS) - len(v))
        vals = {f: (v[i].split(",") if v[i] else []) for i, f in enumerate(FIELDS)}
        c["packets"] += 1
        tokens = v[0].split(":") if v[0] else []
        tset = set(tokens)
        for col, tok in PROTO_COLUMNS.items():
            if tok in tset:
                c[col] += 1
        c["vlan"] += "vlan" not in tset and "ieee8021ad" in tset
        resp = vals["dns.flags.response"]
        c["dns_queries"] += any(x in ("0", "False") for x in resp)
        c["dns_responses"] += any(x in ("1", "True") for x in resp)
        c["http_requests"] += bool(vals["http.request"])
        c["http_responses"] += bool(vals["http.response"])
        outer_icmp = vals["icmp.type"][:1]
        c["icmp_echo_req"] += outer_icmp == ["8"]
        c["icmp_echo_reply"] += outer_icmp == ["0"]
        tcp_streams.update(vals["tcp.stream"])
        udp_streams.update(vals["udp.stream"])
        c["gtpu"] += any(num(x) == 255 for x in vals["gtp.message"])
        c["ipip"] += has_ipip(tokens)
        c["fragments_reassembled"] += bool(vals["ip.reassembled.length"] or
                                           vals["ipv6.reassembled.length"])
    c["tcp_streams"] = len(tcp_streams)
    c["udp_streams"] = len(udp_streams)
    return c


def row(path, shown):
    with open(path, "rb") as f:
        data = f.read()
    fmt, link = capinfos(path)
    out = {"path": shown, "bytes": str(len(data)),
           "sha256": hashlib.sha256(data).hexdigest()[:16],
           "format": fmt, "linktype": link}
    out.update({k: str(v) for k, v in tshark_counts(path).items()})
    return out


JOBS = os.cpu_count() or 1


def rows(pairs):
    """row() for each (path, shown) pair, JOBS at a time, in order."""
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        yield from ex.map(lambda p: row(*p), pairs)


def read_rows(manifest, root):
    base = root or os.path.dirname(os.path.abspath(manifest))
    with open(manifest) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    header = lines[0].split("\t")
    old = [dict(zip(header, l.split("\t"))) for l in lines[1:]]
    new = rows((os.path.join(base, o["path"]), o["path"]) for o in old)
    return header, old, new


def shown_path(path, root):
    return os.path.relpath(path, root) if root else path


def update(manifest, root):
    header, olds, news = read_rows(manifest, root)
    extra = [h for h in header if h not in COLUMNS]
    cols = COLUMNS + extra
    out = ["\t".join(cols)]
    for old, new in zip(olds, news):
        out.append("\t".join(new.get(k, old.get(k, "")) for k in cols))
    with open(manifest, "w") as f:
        f.write("\n".join(out) + "\n")


def check(manifest, root):
    """Recomputes every row; prints each cell that differs. Returns the count."""
    header, olds, news = read_rows(manifest, root)
    bad = 0
    for old, new in zip(olds, news):
        diff = [f"{k} {old[k]} -> {new[k]}" for k in header
                if k in new and old.get(k) != new[k]]
        if diff:
            bad += 1
            print(f"{old['path']}: " + ", ".join(diff))
    print(f"{len(olds)} rows, {bad} differ")
    return bad


def main():
    global JOBS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("captures", nargs="*")
    ap.add_argument("--root", help="make the path column relative to DIR")
    ap.add_argument("--update", metavar="FILE", help="rewrite a manifest in place")
    ap.add_argument("--check", metavar="FILE",
                    help="recompute a manifest; exit 1 if any cell differs")
    ap.add_argument("--no-header", action="store_true")
    ap.add_argument("-j", "--jobs", type=int, default=JOBS,
                    help="tshark runs at a time (default: the number of CPUs)")
    a = ap.parse_args()
    JOBS = max(1, a.jobs)
    if a.check:
        return 1 if check(a.check, a.root) else 0
    if a.update:
        update(a.update, a.root)
        return 0
    if not a.captures:
        ap.error("no captures given")
    if not a.no_header:
        print("\t".join(COLUMNS))
    for r in rows((p, shown_path(p, a.root)) for p in a.captures):
        print("\t".join(r[k] for k in COLUMNS), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
