#!/usr/bin/env python3
"""The same traffic (the gen backend, 64-byte frames) through flow_count, and
l2fwd with --l2fwd-bin, in each launch mode (--launch persistent, per-burst,
graph) for bursts of 16, 32, 64, 256 and 1024, on the CUDA executor next to
the host executor, in one run. Prints the commands, the machine and the
inputs; writes every run and the ratios as JSON:

  persistent / per-burst   at each burst (the persistent kernel's advantage), against the
                           persistent kernel with its default batch and with --batch = the burst
                           (the same batches, so only the launch differs)
  graph / per-burst        at each burst (what a CUDA graph saves per launch)
  cuda / host              for each mode and burst

Per row: Mpps, launches, launches/s, packets per launch, the mean time from a
launch until its kernel finished (launch_us), and the per-launch overhead
against the persistent kernel on the same executor taking the same batches:
overhead_us = (1/Mpps(mode) - 1/Mpps(persistent, --batch = burst)) * packets per launch
(overhead_vs_default_batch_us: the same against the persistent kernel's default batch).

  bench/launch_modes.py --flow-count-bin build/examples/flow_count/flow_count --json out.json
  bench/launch_modes.py --flow-count-bin ... --l2fwd-bin build/examples/l2fwd/l2fwd --executors host --count 2000000
  bench/launch_modes.py --l2fwd-bin build/examples/l2fwd/l2fwd --json l2fwd.json

The published anchor: l2fwd-nv measured 97 Gb/s with a persistent kernel and
49 Gb/s with a kernel launched per burst of 32 packets (2x). gnio's target is
persistent >= 3x per-burst at burst 32 on the GPU.
"""
import argparse, json, os, shlex, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from result_schema import stamped  # noqa: E402


from flow_count_rate import machine as rate_machine  # noqa: E402  (this script's own folder is on sys.path)

TARGET_BURST = 32
TARGET_RATIO = 3.0


def machine():
    # flow_count_rate's description of the machine, with the load average:
    # other work on it skews the rates.
    m = rate_machine()
    m["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return m


def run(app, binary, execu, mode, burst, args):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as t:
        path = t.name
    port = f"gen:size=64,flows=4096,count={args.count}" + (f",lanes={args.lanes}" if args.lanes > 1 else "")
    where = ["--exec", execu] if app == "flow_count" else ["--gpu", "0" if execu == "cuda" else execu]
    cmd = [binary, "--port", port] + where + ["--queues", str(args.queues), "--stats-interval", "0", "--json", path,
                                              "--launch", mode]
    if app == "flow_count":
        cmd += ["--top", "0"]
    if mode != "persistent":
        cmd += ["--burst", str(burst), "--burst-timeout-us", str(args.burst_timeout_us)]
    elif burst:
        cmd += ["--batch", str(burst)]  # the persistent kernel taking the same batches as a launch per burst
    cmd += shlex.split(args.extra)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout)
    except subprocess.TimeoutExpired as e:
        # Kept as a failed row: the other runs' results still get written.
        p = subprocess.CompletedProcess(cmd, 124, "", f"timed out after {args.run_timeout} s: "
                                        + (e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")))
    row = {"app": app, "executor": execu, "mode": mode, "burst": burst,
           "command": " ".join(cmd), "rc": p.returncode, "wall_s": round(time.time() - t0, 3)}
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        j = {}
    if os.path.exists(path):
        os.unlink(path)
    if p.returncode == 0 and j:
        row.update({k: j.get(k) for k in ("packets", "missed", "seconds", "mpps", "device", "launches",
                                          "launches_per_s", "packets_per_launch", "launch_us_mean")})
    else:
        row["error"] = j.get("error") or p.stderr[-2000:]
    return row


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flow-count-bin", help="the flow_count binary: flow_count runs")
    ap.add_argument("--l2fwd-bin", help="the l2fwd binary: l2fwd runs (too)")
    ap.add_argument("--json", required=True, help="output file")
    ap.add_argument("--bursts", default="16,32,64,256,1024", help="bursts for per-burst and graph")
    ap.add_argument("--executors", default="cuda,host", help="cuda, host or both; graph runs on cuda only")
    ap.add_argument("--count", type=int, default=10_000_000, help="64-byte frames per run")
    ap.add_argument("--queues", type=int, default=1, help="RX queues (one kernel block each)")
    ap.add_argument("--lanes", type=int, default=1, help="engine threads of the gen port")
    ap.add_argument("--burst-timeout-us", type=float, default=50, help="--burst-timeout-us of every per-burst run")
    ap.add_argument("--extra", default="", help="more arguments for every run, e.g. '--ring 4096'")
    ap.add_argument("--run-timeout", type=int, default=300,
                    help="seconds one run may take before it is killed and recorded as failed")
    args = ap.parse_args()
    bursts = [int(b) for b in args.bursts.split(",")]
    execs = args.executors.split(",")
    apps = [(a, b) for a, b in (("flow_count", args.flow_count_bin), ("l2fwd", args.l2fwd_bin)) if b]
    if not apps:
        ap.error("give --flow-count-bin, --l2fwd-bin or both")

    m = machine()
    print(f"bench: {' '.join(shlex.quote(a) for a in sys.argv)}")
    print(f"bench: launch modes, gen backend, 64 B, {args.count} frames per run, {args.queues} queue(s), "
          f"{args.lanes} lane(s), burst timeout {args.burst_timeout_us} us; machine {json.dumps(m)}")
    plan = []
    for app, binary in apps:
        for ex in execs:
            plan.append((app, binary, ex, "persistent", None))
            plan += [(app, binary, ex, "persistent", b) for b in bursts]
            for mode in ["per-burst", "graph"]:
                if mode == "graph" and ex != "cuda":
                    continue
                plan += [(app, binary, ex, mode, b) for b in bursts]
    rows = []
    for app, binary, ex, mode, burst in plan:
        r = run(app, binary, ex, mode, burst, args)
        rows.append(r)
        status = (f"{r['mpps']:.3f} Mpps, {r['launches']} launches ({fmt(r.get('launches_per_s'), '.0f')}/s), "
                  f"{fmt(r.get('packets_per_launch'), '.1f')} packets per launch, "
                  f"{fmt(r.get('launch_us_mean'), '.2f')} us per launch" if r["rc"] == 0
                  else f"rc={r['rc']}: {str(r.get('error', '')).strip()[-300:]}")
        print(f"bench: {r['command']}\n       -> {status}", flush=True)

    def find(app, ex, mode, burst):
        return next((x for x in rows if x["app"] == app and x["executor"] == ex and x["mode"] == mode
                     and x["burst"] == burst and x["rc"] == 0 and x.get("mpps")), None)

    # Per-launch overhead against the persistent kernel on the same executor
    # taking the same batches (--batch = the burst), so that only the launch
    # differs; against the default batch too.
    for r in rows:
        if r["mode"] == "persistent" or r["rc"] != 0 or not r.get("mpps") or not r.get("packets_per_launch"):
            continue
        for key, p in (("overhead_us", find(r["app"], r["executor"], "persistent", r["burst"])),
                       ("overhead_vs_default_batch_us", find(r["app"], r["executor"], "persistent", None))):
            if p:
                r[key] = round((1 / r["mpps"] - 1 / p["mpps"]) * r["packets_per_launch"], 3)

    ratios = []
    for app, _ in apps:
        for ex in execs:
            p = find(app, ex, "persistent", None)
            for b in bursts:
                pb, g = find(app, ex, "per-burst", b), find(app, ex, "graph", b)
                ps = find(app, ex, "persistent", b)
                x = {"app": app, "executor": ex, "burst": b,
                     "persistent_mpps": p and p["mpps"], "persistent_batch_mpps": ps and ps["mpps"],
                     "per_burst_mpps": pb and pb["mpps"],
                     "graph_mpps": g and g["mpps"],
                     "per_burst_launch_us": pb and pb.get("launch_us_mean"), "graph_launch_us": g and g.get("launch_us_mean"),
                     "per_burst_overhead_us": pb and pb.get("overhead_us"), "graph_overhead_us": g and g.get("overhead_us")}
                x["persistent_over_per_burst"] = round(p["mpps"] / pb["mpps"], 3) if p and pb else None
                x["persistent_batch_over_per_burst"] = round(ps["mpps"] / pb["mpps"], 3) if ps and pb else None
                x["graph_over_per_burst"] = round(g["mpps"] / pb["mpps"], 3) if g and pb else None
                ratios.append(x)
    cuda_over_host = []
    if "cuda" in execs and "host" in execs:
        for app, _ in apps:
            for mode, bs in [("persistent", [None] + bursts), ("per-burst", bursts)]:
                for b in bs:
                    c, h = find(app, "cuda", mode, b), find(app, "host", mode, b)
                    if c and h:
                        cuda_over_host.append({"app": app, "mode": mode, "burst": b, "cuda_mpps": c["mpps"],
                                               "host_mpps": h["mpps"], "cuda_over_host": round(c["mpps"] / h["mpps"], 3)})

    print("\nMpps; 'pers b' is the persistent kernel with --batch = the burst, 'pers' with the default batch")
    print("app         executor  burst    pers  pers b  per-burst   graph  pers/pb  pers b/pb  graph/pb  "
          "launch us pb,graph  overhead us pb,graph")
    for x in ratios:
        print(f"{x['app']:<11} {x['executor']:<8} {x['burst']:>6}  {fmt(x['persistent_mpps'], '6.2f')}  "
              f"{fmt(x['persistent_batch_mpps'], '6.2f')}  {fmt(x['per_burst_mpps'], '9.3f')} {fmt(x['graph_mpps'], '7.3f')}  "
              f"{fmt(x['persistent_over_per_burst'], '7.2f')}  {fmt(x['persistent_batch_over_per_burst'], '9.2f')}  "
              f"{fmt(x['graph_over_per_burst'], '8.2f')}  "
              f"{fmt(x['per_burst_launch_us'], '8.2f')},{fmt(x['graph_launch_us'], '<8.2f')}  "
              f"{fmt(x['per_burst_overhead_us'], '8.2f')},{fmt(x['graph_overhead_us'], '<8.2f')}")
    if cuda_over_host:
        print("\napp         mode        burst  cuda Mpps  host Mpps  cuda/host")
        for x in cuda_over_host:
            print(f"{x['app']:<11} {x['mode']:<10} {format(x['burst'], '>6') if x['burst'] else '     -'}  "
                  f"{x['cuda_mpps']:>9.3f}  {x['host_mpps']:>9.3f}  {x['cuda_over_host']:>9.2f}")
    target = None
    t = next((x for x in ratios if x["executor"] == "cuda" and x["burst"] == TARGET_BURST
              and x["persistent_over_per_burst"]), None)
    if t:
        target = {"burst": TARGET_BURST, "want": TARGET_RATIO, "persistent_over_per_burst": t["persistent_over_per_burst"],
                  "met": t["persistent_over_per_burst"] >= TARGET_RATIO}
        target["app"] = t["app"]
        print(f"\ntarget ({t['app']}, CUDA, burst {TARGET_BURST}): persistent / per-burst = "
              f"{t['persistent_over_per_burst']:.2f}, want >= {TARGET_RATIO} ({'met' if target['met'] else 'missed'}); "
              f"anchor: l2fwd-nv 97 vs 49 Gb/s (1.98x)")
    m["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"bench: load average before {m['load_average']}, after {m['load_average_after']} (other work on the machine "
          f"skews the rates)")
    out = {"machine": m, "command": " ".join(sys.argv),
           "inputs": {"size": 64, "count": args.count, "queues": args.queues, "lanes": args.lanes,
                      "bursts": bursts, "burst_timeout_us": args.burst_timeout_us, "executors": execs,
                      "extra": args.extra},
           "anchor": {"source": "l2fwd-nv", "persistent_gbps": 97, "per_burst_32_gbps": 49},
           "target": target, "runs": rows, "ratios": ratios, "cuda_over_host": cuda_over_host}
    with open(args.json, "w") as f:
        json.dump(stamped("launch_modes", out), f, indent=2)
    failed = [r for r in rows if r["rc"] != 0]
    if failed:
        print(f"bench: {len(failed)} run(s) failed (see 'error' in the JSON)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
