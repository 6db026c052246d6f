#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Network-namespace harness for the interface backends (af_packet, ...): real
# programs talking across a veth pair, with no traffic reaching any other
# interface. Two namespaces, gnio-a-PID and gnio-b-PID, are joined by the veth
# pair veth-a (A: the gnio side, no kernel IP address, because the application
# itself answers for 10.200.0.1) and veth-b (B: the clients, 10.200.0.2/24).
# IPv6 is off in both, so the kernels add no router solicitations or neighbour
# discovery to what the tests count. Everything is deleted on exit, whatever
# the exit path (trap).
#
#   netns.sh pp-clients BACKEND   `gnio pp --port BACKEND:if=veth-a --ip 10.200.0.1 --http-server` in A answers
#                                 (for dpdk: --port dpdk:vdev=net_af_packet0;iface=veth-a)
#                                 ping, dig and curl from B; then, one pp run per capture, tcpreplay from B
#                                 must give the counts of tests/data/MANIFEST.tsv with nothing missed; the first
#                                 run is scraped on --metrics and exports to a real nfcapd (--ipfix)
#   netns.sh conformance          the ring conformance suite's af_packet cases, on a veth whose two ends are
#                                 both in A (the test process feeds the peer end itself)
#   netns.sh replay BACKEND       the capture replays with flow_count instead of pp (packets, missed)
#
# Exit status: 0 passed, 1 failed, 77 skipped (no CAP_NET_ADMIN/CAP_SYS_ADMIN,
# no `ip`, a client tool missing, or the program under test not built).
#
# Environment: GNIO_BUILD_DIR (default: build/ of this checkout), GNIO_BIN,
# GNIO_FLOW_COUNT_BIN, GNIO_CONFORMANCE_BIN (the programs; default: under the
# build directory), GNIO_TEST_DATA_DIR, GNIO_TEST_GPU (default host),
# GNIO_TEST_EXEC (conformance executor, default host), GNIO_TEST_LAUNCH (its
# launch mode, default persistent), GNIO_NETNS_REPLAY
# (captures to replay, space-separated, default "http.pcap dns_icmp.pcap
# QinQpacket.pcap test.pcap"), GNIO_NETNS_KEEP=1 (keep the work directory with
# the logs and JSON).
#
# Client packages (Debian): iproute2 iputils-ping dnsutils curl tcpreplay python3.
#
# As a library (`source tests/integration/netns.sh`), it only defines the
# netns_* functions; bench/veth_rx.sh uses them.

NETNS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NETNS_BUILD=${GNIO_BUILD_DIR:-$NETNS_REPO/build}
NETNS_DATA=${GNIO_TEST_DATA_DIR:-$NETNS_REPO/tests/data}
NS_A=gnio-a-$$
NS_B=gnio-b-$$
IF_A=veth-a
IF_B=veth-b
APP_IP=10.200.0.1
PEER_IP=10.200.0.2
NETNS_WORK=""
NETNS_PIDS=()
NETNS_CREATED=()
NETNS_CLEANUP_HOOKS=()

netns_log() { printf 'netns: %s\n' "$*" >&2; }
netns_skip() {
  netns_log "SKIP: $*"
  exit 77
}

# Effective capability bit from /proc (no libcap tools needed).
netns_has_cap() {
  local eff
  eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status 2>/dev/null) || return 1
  [[ -n $eff ]] || return 1
  (( (16#$eff >> $1) & 1 ))
}

# Creating namespaces and interfaces needs CAP_NET_ADMIN; `ip netns add`
# also mounts, which needs CAP_SYS_ADMIN.
netns_require() {
  command -v ip >/dev/null 2>&1 || netns_skip "needs the ip command (Debian package iproute2)"
  netns_has_cap 12 || netns_skip "needs CAP_NET_ADMIN (run as root) to create namespaces and veth pairs"
  netns_has_cap 21 || netns_skip "needs CAP_SYS_ADMIN (run as root): ip netns add mounts the namespace"
}

netns_require_tools() {
  local missing=() t pkg
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 && continue
    case $t in
      ping) pkg=iputils-ping ;; dig) pkg=dnsutils ;; *) pkg=$t ;;
    esac
    missing+=("$t (Debian package $pkg)")
  done
  ((${#missing[@]} == 0)) || netns_skip "missing client tools: ${missing[*]}"
}

in_a() { ip netns exec "$NS_A" "$@"; }
in_b() { ip netns exec "$NS_B" "$@"; }

netns_cleanup() {
  local rc=$? pid i hook
  trap - EXIT INT TERM
  for hook in "${NETNS_CLEANUP_HOOKS[@]}"; do "$hook" || true; done
  # Only the processes this script started, by pid.
  for pid in "${NETNS_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || continue
    kill -INT "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Deleting a namespace deletes the veth end in it, and with it the peer.
  for ns in "${NETNS_CREATED[@]}"; do ip netns del "$ns" 2>/dev/null || netns_log "could not delete namespace $ns"; done
  if [[ -n $NETNS_WORK && -d $NETNS_WORK ]]; then
    if [[ ${GNIO_NETNS_KEEP:-0} == 1 ]]; then netns_log "logs kept in $NETNS_WORK"; else rm -rf "$NETNS_WORK"; fi
  fi
  exit "$rc"
}

netns_sysctl() {  # NS KEY VALUE, quietly absent when the kernel lacks the key (no IPv6)
  local path=/proc/sys/${2//.//}
  ip netns exec "$1" sh -c "[ ! -e $path ] || echo $3 > $path"
}

# netns_setup pair|single: pair puts veth-a in A and veth-b in B; single puts
# both ends in A (one process can then reach both).
netns_setup() {
  local mode=${1:-pair} i
  trap netns_cleanup EXIT
  trap 'exit 130' INT TERM
  NETNS_WORK=$(mktemp -d "${TMPDIR:-/tmp}/gnio-netns.XXXXXX") || { netns_log "mktemp failed"; exit 1; }
  local spaces=("$NS_A")
  [[ $mode == pair ]] && spaces+=("$NS_B")
  for ns in "${spaces[@]}"; do
    ip netns add "$ns" || { netns_log "ip netns add $ns failed"; exit 1; }
    NETNS_CREATED+=("$ns")
    ip -n "$ns" link set lo up || exit 1
    # Before the veth exists, so its ends inherit "default" and never start IPv6.
    netns_sysctl "$ns" net.ipv6.conf.all.disable_ipv6 1
    netns_sysctl "$ns" net.ipv6.conf.default.disable_ipv6 1
  done
  local peer_ns=$NS_B
  [[ $mode == single ]] && peer_ns=$NS_A
  ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$peer_ns" ||
    { netns_log "ip link add veth failed"; exit 1; }
  netns_sysctl "$NS_A" "net.ipv6.conf.$IF_A.disable_ipv6" 1
  netns_sysctl "$peer_ns" "net.ipv6.conf.$IF_B.disable_ipv6" 1
  if [[ $mode == pair ]]; then
    ip -n "$NS_B" addr add "$PEER_IP/24" dev "$IF_B" || exit 1
  fi
  ip -n "$NS_A" link set "$IF_A" up || exit 1
  ip -n "$peer_ns" link set "$IF_B" up || exit 1
  for ((i = 0; i < 100; i++)); do
    ip -n "$NS_A" link show "$IF_A" | grep -q LOWER_UP && break
    sleep 0.05
  done
  netns_log "namespaces ${spaces[*]}: $IF_A in $NS_A (no address), $IF_B in $peer_ns$([[ $mode == pair ]] && echo " ($PEER_IP/24)")"
}

# netns_bg NAME CMD...: runs CMD in the background, output in WORK/NAME.log;
# sets NETNS_LAST_PID. CMD must be a program, not a shell function, so the pid
# is the program's own (`ip netns exec` execs its command) and signals reach it.
netns_bg() {
  local name=$1
  shift
  "$@" >"$NETNS_WORK/$name.log" 2>&1 &
  NETNS_LAST_PID=$!
  NETNS_PIDS+=("$NETNS_LAST_PID")
}

# netns_wait_log FILE REGEX SECONDS [PID]: true once FILE has a matching line;
# false on timeout or when PID exits first.
netns_wait_log() {
  local file=$1 re=$2 limit=$3 pid=${4:-} i
  for ((i = 0; i < limit * 10; i++)); do
    grep -Eq "$re" "$file" 2>/dev/null && return 0
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

# netns_stop PID SECONDS: SIGINT, then wait up to SECONDS; sets NETNS_RC to the
# exit status (124 after SIGKILL on timeout).
netns_stop() {
  local pid=$1 limit=$2 i
  kill -INT "$pid" 2>/dev/null
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    NETNS_RC=124
    return
  fi
  wait "$pid"
  NETNS_RC=$?
}

# netns_wait PID SECONDS: waits for a process that ends by itself.
netns_wait() {
  local pid=$1 limit=$2 i
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    NETNS_RC=124
    return
  fi
  wait "$pid"
  NETNS_RC=$?
}

# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

NETNS_FAILS=0
check() {  # check DESCRIPTION COMMAND...: runs COMMAND, records pass/fail
  local what=$1
  shift
  if "$@"; then
    printf 'netns: ok    %s\n' "$what" >&2
  else
    printf 'netns: FAIL  %s\n' "$what" >&2
    NETNS_FAILS=$((NETNS_FAILS + 1))
  fi
}

# The index page gnio pp serves, from its source: the C string literals of
# index_page()'s body argument, joined and unescaped.
expected_index_body() {
  python3 - "$NETNS_REPO/apps/pp/pp_ctrl.cpp" <<'EOF'
import re, sys
src = open(sys.argv[1]).read()
m = re.search(r'index_page\(\)\s*\{.*?response\(\s*"200 OK",(.*?)\);', src, re.S)
if not m:
    sys.exit(1)
lits = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
sys.stdout.write(bytes("".join(lits), "utf-8").decode("unicode_escape"))
EOF
}

# manifest_row FILE: the MANIFEST.tsv row of a capture as "column=value" lines.
manifest_row() {
  awk -F'\t' -v f="$1" 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
                        $1 == f { for (i = 6; i <= NF; i++) print h[i] "=" $i }' "$NETNS_DATA/MANIFEST.tsv"
}

# compare_counts LIVE_JSON REF_JSON CAPTURE: the live run's counters must equal
# MANIFEST.tsv's and the file run's (same frames, so the same counts), with
# nothing missed or unaccounted and no engine error.
compare_counts() {
  python3 - "$1" "$2" "$NETNS_DATA/MANIFEST.tsv" "$3" <<'EOF'
import csv, json, sys
live, ref, manifest, cap = sys.argv[1:5]
live = json.load(open(live))
ref = json.load(open(ref)) if ref != "-" else None
rows = {r["path"]: r for r in csv.DictReader(open(manifest), delimiter="\t")}
row = rows[cap]
# Where pp counts differently from tshark by design: the same list, reasons
# and values as k_count_exceptions in tests/integration/pp_test.cpp (keep in
# step). The live run must still equal the file run exactly.
known = {("http.pcap", "http_responses"): (3, "frame 36 is a spurious retransmission of frame 26; pp has no TCP state")}
cols = ["packets", "ipv4", "ipv6", "tcp", "udp", "icmp", "icmpv6", "arp", "vlan", "dns_queries", "dns_responses",
        "http_requests", "http_responses", "icmp_echo_req", "icmp_echo_reply"]
bad = []
for c in cols:
    if c not in live:
        continue
    want = int(row[c])
    if (cap, c) in known and live[c] == known[(cap, c)][0] and live[c] != want:
        print(f"  known difference {c}: {live[c]} (tshark {want}): {known[(cap, c)][1]}")
        continue
    if live[c] != want:
        bad.append(f"{c}: live {live[c]} != MANIFEST {want}" + (f" (file run {ref.get(c)})" if ref else ""))
if ref:
    for k, v in ref.items():
        if isinstance(v, int) and k in live and k not in ("reports",) and live[k] != v and k in cols + ["malformed", "fragments", "other", "tcp_flows", "udp_flows"]:
            bad.append(f"{k}: live {live[k]} != file run {v}")
for k in ("missed", "unaccounted"):
    if live.get(k, 0) != 0:
        bad.append(f"{k} = {live[k]}")
if live.get("received", live.get("packets")) != int(row["packets"]):
    bad.append(f"received {live.get('received')} != {row['packets']} replayed")
if live.get("engine_error"):
    bad.append(f"engine_error: {live['engine_error']}")
print(f"  {cap}: packets {live.get('packets')} received {live.get('received')} missed {live.get('missed')} "
      + " ".join(f"{c}={live[c]}" for c in cols[1:] if c in live and live[c]))
for b in bad:
    print("  MISMATCH " + b)
sys.exit(1 if bad else 0)
EOF
}

# A program's output without its periodic stats lines.
show_log() { grep -Ev '^pp: [0-9.]+ s |^flow_count: [0-9.]+ s:' "$1" | tail -40 | sed 's/^/    | /' >&2; }

metric_sum() {  # metric_sum FILE NAME [LABEL="VALUE"]: the sum of NAME's samples (with that label) in a Prometheus text scrape
  python3 -c 'import sys; print(sum(int(float(l.split()[-1])) for l in open(sys.argv[1]) if l.split("{")[0].split(" ")[0] == sys.argv[2] and sys.argv[3] in l))' "$1" "$2" "${3:-}"
}

json_get() {  # json_get FILE EXPR (python expression over j)
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# ---------------------------------------------------------------------------
# pp-clients
# ---------------------------------------------------------------------------

pp_start() {  # pp_start NAME ARGS...: gnio pp in A, waits until its kernel runs
  local name=$1
  shift
  netns_bg "$name" ip netns exec "$NS_A" "$GNIO_BIN" pp "$@" --stats-interval 0.2
  PP_PID=$NETNS_LAST_PID
  # The first stats line comes after start and launch.
  if ! netns_wait_log "$NETNS_WORK/$name.log" '^pp: [0-9.]+ s ' 60 "$PP_PID"; then
    netns_log "gnio pp did not start; its output:"
    show_log "$NETNS_WORK/$name.log"
    return 1
  fi
}

# The device string for a backend on the namespace's interface: dpdk reaches
# it through DPDK's own AF_PACKET driver (net_af_packet).
port_for() {  # port_for BACKEND
  case $1 in
    dpdk) echo "dpdk:vdev=net_af_packet0;iface=$IF_A" ;;
    *) echo "$1:if=$IF_A" ;;
  esac
}

replay_captures() {  # replay_captures BACKEND APP(pp|flow_count)
  local backend=$1 app=$2 cap file n pid
  in_b ip neigh flush dev "$IF_B" 2>/dev/null
  for cap in ${GNIO_NETNS_REPLAY:-http.pcap dns_icmp.pcap QinQpacket.pcap test.pcap}; do
    file=$NETNS_DATA/$cap
    [[ -f $file ]] || { check "replay $cap: file exists" false; continue; }
    n=$(manifest_row "$cap" | awk -F= '$1 == "packets" {print $2}')
    [[ -n $n ]] || { check "replay $cap: listed in MANIFEST.tsv" false; continue; }
    local live=$NETNS_WORK/replay-$cap.json ref=-
    if [[ $app == pp ]]; then
      # The same capture from the file: what the live run must match.
      ref=$NETNS_WORK/file-$cap.json
      netns_bg "file-$cap" "$GNIO_BIN" pp --port "pcap:file=$file" --gpu "${GNIO_TEST_GPU:-host}" --stats-interval 0 --json "$ref"
      netns_wait "$NETNS_LAST_PID" 120
      [[ $NETNS_RC == 0 ]] || { check "replay $cap: pp on the file (rc $NETNS_RC)" false; show_log "$NETNS_WORK/file-$cap.log"; continue; }
      # No --ip and no --reply-all: nothing is answered onto the wire.
      pp_start "replay-$cap" --port "$(port_for "$backend")" --gpu "${GNIO_TEST_GPU:-host}" --json "$live" || {
        check "replay $cap: pp started" false
        continue
      }
      pid=$PP_PID
    else
      netns_bg "replay-$cap" ip netns exec "$NS_A" "$FLOW_COUNT_BIN" --port "$(port_for "$backend")" --gpu "${GNIO_TEST_GPU:-host}" \
        --stats-interval 0.2 --json "$live"
      pid=$NETNS_LAST_PID
      # flow_count prints a progress line once its kernel runs.
      netns_wait_log "$NETNS_WORK/replay-$cap.log" 'delivered' 60 "$pid" || {
        check "replay $cap: flow_count started" false
        show_log "$NETNS_WORK/replay-$cap.log"
        continue
      }
    fi
    in_b tcpreplay -q -i "$IF_B" --pps 2000 "$file" >"$NETNS_WORK/tcpreplay-$cap.log" 2>&1
    local trc=$?
    sleep 0.5  # the last ring block reaches the port ~1 ms after its first frame; leave margin
    netns_stop "$pid" 30
    check "replay $cap: tcpreplay sent $n packets" [ "$trc" = 0 ]
    [[ $trc == 0 ]] || cat "$NETNS_WORK/tcpreplay-$cap.log" >&2
    check "replay $cap: $app exited cleanly (rc $NETNS_RC)" [ "$NETNS_RC" = 0 ]
    [[ $NETNS_RC == 0 ]] || show_log "$NETNS_WORK/replay-$cap.log"
    if [[ -f $live ]]; then
      check "replay $cap: counts equal MANIFEST.tsv$([[ $ref != - ]] && echo ' and the file run'), nothing missed" \
        compare_counts "$live" "$ref" "$cap"
    else
      check "replay $cap: JSON written" false
      show_log "$NETNS_WORK/replay-$cap.log"
    fi
  done
}

cmd_pp_clients() {
  local backend=${1:-}
  [[ -n $backend ]] || { netns_log "usage: netns.sh pp-clients BACKEND"; exit 2; }
  netns_require
  netns_require_tools ping dig curl tcpreplay python3 nfcapd nfdump
  GNIO_BIN=${GNIO_BIN:-$NETNS_BUILD/tools/gnio/gnio}
  [[ -x $GNIO_BIN ]] || netns_skip "$GNIO_BIN is not built (ninja -C build gnio_tool)"
  "$GNIO_BIN" pp --help >/dev/null 2>&1 || netns_skip "$GNIO_BIN has no pp command yet"
  grep -q "^$backend:" <<<"$("$GNIO_BIN" backends 2>/dev/null)" || netns_skip "$GNIO_BIN was built without the $backend backend"
  netns_setup pair

  local json=$NETNS_WORK/clients.json
  local mac
  mac=$(printf '02:00:%02x:%02x:%02x:%02x' ${APP_IP//./ })  # gnio pp's default: 02:00 + the IPv4 address
  # --metrics and --ipfix on this backend: a scrape while it runs and a real
  # nfcapd in A, both on A's loopback.
  in_a ip link set lo up
  mkdir -p "$NETNS_WORK/flows"
  netns_bg nfcapd ip netns exec "$NS_A" nfcapd -b 127.0.0.1 -p 4739 -w "$NETNS_WORK/flows"
  local nfcapd=$NETNS_LAST_PID
  sleep 0.5
  pp_start pp --port "$(port_for "$backend")" --ip "$APP_IP" --http-server --gpu "${GNIO_TEST_GPU:-host}" --json "$json" \
    --metrics 127.0.0.1:9464 --ipfix 127.0.0.1:4739 || exit 1
  local pp=$PP_PID

  # The first ping also resolves the app's MAC (its ARP reply).
  local i
  for ((i = 0; i < 20; i++)); do in_b ping -c 1 -W 1 -q "$APP_IP" >/dev/null 2>&1 && break; done
  local out
  out=$(in_b ping -c 20 -i 0.05 -W 2 "$APP_IP" 2>&1)
  printf '%s\n' "$out" | tail -2 | sed 's/^/netns: ping: /' >&2
  check "ping: 20 of 20 replies" grep -q '20 packets transmitted, 20 received' <<<"$out"

  out=$(in_b ip neigh show "$APP_IP" dev "$IF_B")
  netns_log "neigh in B: $out"
  check "ip neigh in B has the app's MAC $mac (learned from its ARP reply)" grep -qi "lladdr $mac" <<<"$out"

  in_b dig +tries=1 +time=1 "@$APP_IP" example.test >"$NETNS_WORK/dig.log" 2>&1  # no answer expected

  local body want
  body=$(in_b curl -s --max-time 5 "http://$APP_IP/"; printf x)
  body=${body%x}
  if want=$(expected_index_body; printf x); then
    want=${want%x}
    check "curl /: the app's index page (${#body} bytes)" [ "$body" = "$want" ]
    [[ $body == "$want" ]] || { netns_log "got:"; printf '%s\n' "$body" | head -20 >&2; }
  else
    check "curl /: an HTML page from gnio pp" grep -q 'gnio pp' <<<"$body"
  fi
  local code
  code=$(in_b curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$APP_IP/missing")
  check "curl /missing: 404 (got $code)" [ "$code" = 404 ]

  # Past the next semaphore reports (every 0.2 s), the live metrics hold the clients' counts.
  sleep 1
  in_a curl -s --max-time 5 http://127.0.0.1:9464/metrics >"$NETNS_WORK/metrics.txt"
  check "metrics: a live scrape (gnio_run_finished 0)" grep -qx 'gnio_run_finished 0' "$NETNS_WORK/metrics.txt"

  netns_stop "$pp" 30
  check "pp exited cleanly (rc $NETNS_RC)" [ "$NETNS_RC" = 0 ]
  [[ $NETNS_RC == 0 ]] || show_log "$NETNS_WORK/pp.log"
  if [[ -f $json ]]; then
    local expr
    for expr in "j['icmp_echo_reply_sent'] >= 20" "j['arp_replies_sent'] >= 1" "j['dns_queries'] >= 1" \
      "any(d['name'].rstrip('.') == 'example.test' for d in j['top_dns'])" "j['http_pages_sent'] >= 1" \
      "j['http_404_sent'] >= 1" "j['missed'] == 0" "j['unaccounted'] == 0" "j['engine_error'] == ''" \
      "j['mac'].lower() == '$mac'"; do
      check "pp JSON: $expr" [ "$(json_get "$json" "$expr")" = True ]
    done
    local m key name label
    for m in "icmp_echo_req gnio_pp_icmp_packets_total type=\"echo_request\"" \
      "icmp_echo_reply_sent gnio_pp_replies_sent_total reply=\"icmp_echo_reply\"" \
      "dns_queries gnio_pp_dns_packets_total kind=\"query\"" \
      "http_pages_sent gnio_pp_replies_sent_total reply=\"http_page\""; do
      read -r key name label <<<"$m"
      check "metrics: $name{$label} equals the JSON's $key" [ "$(metric_sum "$NETNS_WORK/metrics.txt" "$name" "$label")" = "$(json_get "$json" "j['$key']")" ]
    done
    netns_stop "$nfcapd" 30
    # With --http-server a connection the CPU thread answered has a record in
    # its domain too: distinct conversations are counted.
    local flows
    flows=$(nfdump -R "$NETNS_WORK/flows" -q -o 'fmt:%pr %sap %dap' 2>/dev/null | sort -u | grep -c .)
    check "ipfix: nfcapd stored $flows conversations, the JSON's tcp_flows + udp_flows, 0 send errors" \
      [ "$flows" = "$(json_get "$json" "j['tcp_flows'] + j['udp_flows']")" -a "$(json_get "$json" "j['ipfix']['send_errors']")" = 0 ]
    json_get "$json" "'pp: packets %d, icmp echo req/sent %d/%d, arp replies sent %d, dns queries %d %s, http pages/404 %d/%d, tx_frames %d' % (j['packets'], j['icmp_echo_req'], j['icmp_echo_reply_sent'], j['arp_replies_sent'], j['dns_queries'], [d['name'] for d in j['top_dns']], j['http_pages_sent'], j['http_404_sent'], j['tx_frames'])" >&2
  else
    check "pp wrote $json" false
    show_log "$NETNS_WORK/pp.log"
  fi

  replay_captures "$backend" pp
  ((NETNS_FAILS == 0)) || { netns_log "$NETNS_FAILS check(s) failed"; GNIO_NETNS_KEEP=1; exit 1; }
  netns_log "pp-clients $backend: all checks passed"
}

cmd_replay() {
  local backend=${1:-}
  [[ -n $backend ]] || { netns_log "usage: netns.sh replay BACKEND"; exit 2; }
  netns_require
  netns_require_tools tcpreplay python3
  FLOW_COUNT_BIN=${GNIO_FLOW_COUNT_BIN:-$NETNS_BUILD/examples/flow_count/flow_count}
  [[ -x $FLOW_COUNT_BIN ]] || netns_skip "$FLOW_COUNT_BIN is not built"
  netns_setup pair
  replay_captures "$backend" flow_count
  ((NETNS_FAILS == 0)) || { netns_log "$NETNS_FAILS check(s) failed"; GNIO_NETNS_KEEP=1; exit 1; }
  netns_log "replay $backend: all checks passed"
}

cmd_conformance() {
  netns_require
  local bin=${GNIO_CONFORMANCE_BIN:-$NETNS_BUILD/tests/conformance_test}
  [[ -x $bin ]] || netns_skip "$bin is not built"
  netns_setup single
  in_a env GNIO_CONF_IF="$IF_A" GNIO_CONF_PEER="$IF_B" GNIO_TEST_EXEC="${GNIO_TEST_EXEC:-host}" \
    "$bin" --gtest_filter='*/ring_conformance.*/af_packet:*/ring_conformance.*/af_xdp' "$@"
  exit $?  # 77 from the suite's main: GNIO_TEST_EXEC=cuda without a GPU
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -u -o pipefail
  case ${1:-} in
    pp-clients) shift; cmd_pp_clients "$@" ;;
    conformance) shift; cmd_conformance "$@" ;;
    replay) shift; cmd_replay "$@" ;;
    *)
      sed -n '3,/^$/p' "$0" | sed 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
fi
