#!/usr/bin/env bash
# The README's first command without its setup step: scripts/run-demo.sh on
# the default capture must run gnio pp and write JSON whose counts equal
# tshark's (tests/data/MANIFEST.tsv).
#
#   demo_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
out=$(GNIO_DEMO_NO_SETUP=1 GNIO_BUILD_DIR="$build" bash "$src/scripts/run-demo.sh" 2>&1) || {
  echo "$out"
  echo "demo_test: run-demo.sh failed" >&2
  exit 1
}
echo "$out"
python3 - "$build/pp.json" "$src/tests/data/MANIFEST.tsv" <<'PY'
import csv, json, sys
j = json.load(open(sys.argv[1]))
row = next(r for r in csv.DictReader(open(sys.argv[2]), delimiter="\t") if r["path"] == "http.pcap")
# Every count as tshark's; frame 36 (a spurious retransmission of the response
# in frame 26) is not read again, as tshark does not.
want = {k: int(row[k]) for k in ("packets", "ipv4", "tcp", "udp", "dns_queries", "dns_responses", "http_requests",
                                 "http_responses")}
bad = [f"{k}: pp {j[k]}, expected {v}" for k, v in want.items() if j[k] != v]
if j["tcp_flows"] != int(row["tcp_streams"]):
    bad.append(f"tcp_flows: pp {j['tcp_flows']}, tshark {row['tcp_streams']}")
if j["unaccounted"] != 0 or j["missed"] != 0:
    bad.append(f"accounting: missed {j['missed']}, unaccounted {j['unaccounted']}")
if bad:
    sys.exit("demo_test: " + "; ".join(bad))
print(f"demo_test: {j['packets']} packets on the {j['executor']} executor, counts equal tshark's")
PY
