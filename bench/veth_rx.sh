#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Receive rate over a veth pair: flow_count on the af_packet backend next to
# DPDK's testpmd (rxonly, AF_XDP PMD) on the same veth in the same run, at
# 64-byte and 1500-byte frames, with bench/veth_blast sending from the other
# namespace as fast as one thread can. A benchmark, not a test: it prints the
# commands, the machine and the inputs, and writes everything as JSON.
#
#   sudo bash bench/veth_rx.sh [--json FILE] [--seconds S] [--sizes "64 1500"]
#
# Environment: GNIO_BUILD_DIR (default build/), GNIO_BENCH_EXEC (flow_count
# --exec: auto, host or cuda; default auto), TESTPMD (default dpdk-testpmd).
# Needs root (namespaces, packet sockets, XDP). Traffic stays on the veth pair
# in the two namespaces the script creates and deletes (tests/integration/netns.sh).
#
# Both receivers are measured the same way: frames received while the
# sender ran, divided by the sender's run time. The sender's own rate is the
# offered load; on a small machine the sender and the receiver share the CPUs,
# so the numbers are relative, which is why the ratio is reported.
set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/integration/netns.sh
source "$REPO/tests/integration/netns.sh"

OUT=""
SECONDS_PER_RUN=5
SIZES="64 1500"
while (($#)); do
  case $1 in
    --json) OUT=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    -h | --help) sed -n '3,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "veth_rx: unknown argument $1" >&2; exit 2 ;;
  esac
done
BUILD=${GNIO_BUILD_DIR:-$REPO/build}
OUT=${OUT:-$BUILD/veth_rx.json}
FLOW_COUNT=${GNIO_FLOW_COUNT_BIN:-$BUILD/examples/flow_count/flow_count}
EXEC=${GNIO_BENCH_EXEC:-auto}
TESTPMD=${TESTPMD:-dpdk-testpmd}
BLAST=$BUILD/bench/veth_blast

command -v ip >/dev/null || { echo "veth_rx: needs iproute2" >&2; exit 1; }
{ netns_has_cap 12 && netns_has_cap 21; } || { echo "veth_rx: run as root (namespaces, veth, packet sockets)" >&2; exit 1; }
[[ -x $FLOW_COUNT ]] || { echo "veth_rx: $FLOW_COUNT is not built (ninja -C build flow_count)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "veth_rx: needs python3" >&2; exit 1; }

mkdir -p "$BUILD/bench"
if [[ ! -x $BLAST || $REPO/bench/veth_blast.cpp -nt $BLAST ]]; then
  echo "+ c++ -O2 -std=c++20 -o $BLAST bench/veth_blast.cpp"
  c++ -O2 -std=c++20 -Wall -o "$BLAST" "$REPO/bench/veth_blast.cpp" || exit 1
fi

echo "command: $0 --json $OUT --seconds $SECONDS_PER_RUN --sizes \"$SIZES\""
echo "machine: $(uname -srm), $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
echo "inputs: flow_count $FLOW_COUNT (--exec $EXEC), testpmd $(command -v "$TESTPMD" || echo "$TESTPMD: not installed"), sender $BLAST, $SECONDS_PER_RUN s per run, sizes $SIZES"

netns_setup pair
RES=$NETNS_WORK/results
mkdir -p "$RES"

if_counters() {  # if_counters NS IF: rx_packets rx_dropped tx_packets tx_dropped
  # Large counters run into the "name:" field, so split at the colon first.
  ip netns exec "$1" sed -n "s/^ *$2://p" /proc/net/dev | awk '{print $2, $4, $10, $12}'
}

blast() {  # blast SIZE OUTFILE
  echo "+ ip netns exec $NS_B $BLAST $IF_B $1 $SECONDS_PER_RUN 64"
  in_b "$BLAST" "$IF_B" "$1" "$SECONDS_PER_RUN" 64 >"$2" 2>"$2.err"
}

run_gnio() {  # run_gnio SIZE
  local size=$1
  local json=$RES/gnio-$size.json
  local cmd=("$FLOW_COUNT" --port "af_packet:if=$IF_A" --exec "$EXEC" --stats-interval 0.2 --json "$json")
  echo "+ ip netns exec $NS_A ${cmd[*]}"
  netns_bg "gnio-$size" ip netns exec "$NS_A" "${cmd[@]}"
  local pid=$NETNS_LAST_PID
  if ! netns_wait_log "$NETNS_WORK/gnio-$size.log" 'delivered' 60 "$pid"; then
    echo "veth_rx: flow_count did not start:" >&2
    cat "$NETNS_WORK/gnio-$size.log" >&2
    netns_stop "$pid" 10
    echo "{\"error\": \"flow_count did not start\"}" >"$RES/gnio-$size.run.json"
    return
  fi
  local before after
  before=$(if_counters "$NS_A" "$IF_A")
  blast "$size" "$RES/blast-gnio-$size.json"
  sleep 0.3  # the last ring blocks reach the port
  after=$(if_counters "$NS_A" "$IF_A")
  netns_stop "$pid" 30
  python3 - "$json" "$RES/blast-gnio-$size.json" "$before" "$after" "$NETNS_RC" "${cmd[*]}" >"$RES/gnio-$size.run.json" <<'EOF'
import json, sys
path, blast, before, after, rc, cmd = sys.argv[1:7]
b = json.load(open(blast))
r = {"command": cmd, "rc": int(rc), "sender": b}
try:
    j = json.load(open(path))
    r.update({k: j.get(k) for k in ("packets", "received", "missed", "source_errors", "unaccounted", "seconds", "executor", "device", "engine_error")})
    # rx_pps: what the kernel processed (flow_count's count); port_rx_pps: what
    # the backend took from the socket (the rest found the RX ring full: missed).
    r["rx_pps"] = round(j["packets"] / b["seconds"], 1) if b["seconds"] else 0
    r["port_rx_pps"] = round(j["received"] / b["seconds"], 1) if b["seconds"] else 0
except (OSError, ValueError) as e:
    r["error"] = f"no JSON from flow_count: {e}"
b4, af = [list(map(int, x.split())) for x in (before, after)]
r["veth_a_rx_packets"], r["veth_a_rx_dropped"] = af[0] - b4[0], af[1] - b4[1]
print(json.dumps(r))
EOF
}

run_testpmd() {  # run_testpmd SIZE
  local size=$1
  local log=$NETNS_WORK/testpmd-$size.log
  if ! command -v "$TESTPMD" >/dev/null; then
    echo "{\"error\": \"$TESTPMD not found: apt-get install dpdk-dev (dpdk-testpmd) and librte-net-af-xdp23\"}" >"$RES/testpmd-$size.run.json"
    return
  fi
  # --no-huge: no hugepages needed (nothing to set up on the machine);
  # --no-shconf: no runtime files (--in-memory is refused with --no-huge).
  # Non-interactive testpmd forwards until a line arrives on stdin, which a
  # FIFO held open here delivers on cue.
  # shellcheck disable=SC2054 # "-l 0,1" is one argument
  local cmd=("$TESTPMD" --no-huge -m 512 --no-shconf --file-prefix "gnio-veth-rx-$$" --no-pci -l 0,1
    --log-level=pmd.net.af_xdp:info
    --vdev "net_af_xdp0,iface=$IF_A,start_queue=0,queue_count=1" -- --forward-mode=rxonly --nb-cores=1
    --rxq=1 --txq=1 --total-num-mbufs=16384)
  echo "+ ip netns exec $NS_A ${cmd[*]}"
  local fifo=$NETNS_WORK/testpmd-$size.in
  mkfifo "$fifo"
  # Read-write, so opening never blocks (testpmd may already have exited)
  # and the later newline never raises SIGPIPE.
  exec 9<>"$fifo"
  # Line-buffered, so "Press enter to exit" shows in the log when printed.
  ip netns exec "$NS_A" stdbuf -oL "${cmd[@]}" <"$fifo" >"$log" 2>&1 &
  local pid=$!
  NETNS_PIDS+=("$pid")
  local ready=1
  netns_wait_log "$log" 'Press enter to exit' 60 "$pid" || ready=0
  local before after
  before=$(if_counters "$NS_A" "$IF_A")
  if ((ready)); then
    blast "$size" "$RES/blast-testpmd-$size.json"
    sleep 0.3
  fi
  after=$(if_counters "$NS_A" "$IF_A")
  echo >&9
  exec 9>&-
  netns_wait "$pid" 30
  python3 - "$log" "$RES/blast-testpmd-$size.json" "$ready" "$NETNS_RC" "${cmd[*]}" "$before" "$after" >"$RES/testpmd-$size.run.json" <<'EOF'
import json, re, sys
log, blast, ready, rc, cmd, before, after = sys.argv[1:8]
text = open(log, errors="replace").read()
r = {"command": cmd, "rc": int(rc)}
if ready != "1":
    tail = [l for l in text.splitlines() if l.strip()][-15:]
    r["error"] = "testpmd did not start forwarding: " + " | ".join(tail)
else:
    b = json.load(open(blast))
    r["sender"] = b
    m = re.search(r"Accumulated forward statistics for all ports.*?RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+)", text, re.S)
    if not m:
        m = re.search(r"RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+)", text)
    if m:
        r["packets"], r["rx_dropped"] = int(m.group(1)), int(m.group(2))
        r["rx_pps"] = round(r["packets"] / b["seconds"], 1) if b["seconds"] else 0
    else:
        r["error"] = "no forward statistics in testpmd's output: " + " | ".join(text.splitlines()[-10:])
b4, af = [list(map(int, x.split())) for x in (before, after)]
r["veth_a_rx_packets"], r["veth_a_rx_dropped"] = af[0] - b4[0], af[1] - b4[1]
print(json.dumps(r))
EOF
}

for size in $SIZES; do
  run_gnio "$size"
  run_testpmd "$size"
done

python3 - "$OUT" "$RES" "$SIZES" "$0 --json $OUT --seconds $SECONDS_PER_RUN --sizes \"$SIZES\"" "$SECONDS_PER_RUN" <<'EOF'
import json, os, platform, sys, time
out, res, sizes, command, secs = sys.argv[1:6]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError) as e:
        return {"error": str(e)}
cpu = ""
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip(); break
doc = {"command": command, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
       "machine": {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu},
       "inputs": {"seconds_per_run": float(secs), "sizes": [int(s) for s in sizes.split()], "flows": 64,
                  "sender": "bench/veth_blast (sendmmsg, 256 frames per call, PACKET_QDISC_BYPASS) in the peer namespace",
                  "gnio": "flow_count --port af_packet:if=veth-a (TPACKET_V3, 1 socket)",
                  "dpdk": "dpdk-testpmd rxonly, --vdev net_af_xdp0,iface=veth-a, --no-huge -m 512"},
       "notes": ["gnio rx pps = frames flow_count's kernel processed / sender seconds; gnio port pps = frames the "
                 "af_packet backend took from the kernel (processed + missed on a full RX ring); testpmd rx pps = "
                 "RX-packets / sender seconds",
                 "sender, receiver and softirq share the machine's CPUs: the offered load differs between the two "
                 "receivers (testpmd busy-polls a core), so compare on the same machine only"],
       "runs": []}
print(f"{'size':>6} {'offered pps':>12} {'gnio port pps':>14} {'gnio rx pps':>12} {'testpmd rx pps':>15} {'gnio/testpmd':>13}")
for s in sizes.split():
    g = load(f"{res}/gnio-{s}.run.json")
    t = load(f"{res}/testpmd-{s}.run.json")
    row = {"size": int(s), "gnio_af_packet": g, "testpmd_af_xdp": t}
    ratio = None
    if g.get("rx_pps") and t.get("rx_pps"):
        ratio = round(g["rx_pps"] / t["rx_pps"], 3)
    row["ratio_gnio_over_testpmd"] = ratio
    doc["runs"].append(row)
    off = g.get("sender", {}).get("pps", 0)
    print(f"{s:>6} {off:>12.0f} {g.get('port_rx_pps', 0) or 0:>14.0f} {g.get('rx_pps', 0) or 0:>12.0f} {t.get('rx_pps', 0) or 0:>15.0f} "
          f"{ratio if ratio is not None else '-':>13}")
    for name, r in (("gnio", g), ("testpmd", t)):
        if r.get("error"):
            print(f"       {name}: {r['error']}")
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
print(f"JSON: {out}")
EOF
