#!/usr/bin/env python3
"""Rate of flow_count (or of gnio pp, --app pp, or of l2fwd, --app l2fwd) on
the gen backend, CUDA executor next to the host executor, in one run. Prints
the commands, the machine and the inputs, and writes every run plus the
cuda/host ratios as JSON. For pp the generator sends its UDP/TCP/ICMP mix and
--queues is per class; for l2fwd the rate is frames sent back out.

  bench/flow_count_rate.py --bin build/examples/flow_count/flow_count --json out.json
  bench/flow_count_rate.py --app pp --bin build/tools/gnio/gnio --json pp.json --queues 4 --lanes 1,4
  bench/flow_count_rate.py --app l2fwd --bin build/examples/l2fwd/l2fwd --json l2fwd.json --queues 4 --lanes 1,4

Each run also records the engine's CPU time per frame (the app's JSON
engine.ns_per_frame) and its time per frame waiting for full queues
(engine.full_ns_per_frame: high when the consumer sets the pace). With --capacity-bin (bench/capacity) the host-to-device
copy bandwidth is measured in the same run and every row gets its Gb/s as a
fraction of it (pcie_fraction).
"""
import argparse, json, os, platform, shlex, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from result_schema import stamped  # noqa: E402



def machine():
    m = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            m["cpu"] = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        m["gpus"] = subprocess.run(["nvidia-smi", "--query-gpu=name,pci.bus_id,driver_version", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        m["gpus"] = []
    return m


RUN_TIMEOUT_S = 600


def run(binary, execu, size, queues, count, extra, lanes=1, app="flow_count", pkt_mem=None, mix="all"):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as t:
        path = t.name
    port = f"gen:size={size},flows=4096,count={count}" + (f",lanes={lanes}" if lanes > 1 else "")
    if app == "l2fwd":
        cmd = [binary, "--port", port, "--gpu", "0" if execu == "cuda" else execu, "--queues", str(queues),
               "--stats-interval", "0", "--json", path] + extra
    elif app == "pp":
        cmd = [binary, "pp", "--port", port + f",mix={mix}", "--gpu", "0" if execu == "cuda" else execu, "--queues",
               str(queues), "--stats-interval", "0", "--json", path] + extra
    else:
        cmd = [binary, "--port", port, "--exec", execu, "--queues", str(queues), "--stats-interval", "0", "--json",
               path] + (["--pkt-mem", pkt_mem] if pkt_mem else []) + extra
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        # Kept as a failed row: the other runs' results still get written.
        p = subprocess.CompletedProcess(cmd, 124, "", f"timed out after {RUN_TIMEOUT_S} s: "
                                        + (e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")))
    wall = time.time() - t0
    row = {"command": " ".join(cmd), "executor": execu, "size": size, "queues": queues, "lanes": lanes, "count": count,
           "pkt_mem": pkt_mem or "auto", "rc": p.returncode, **({"mix": mix} if app == "pp" else {}),
           "wall_s": round(wall, 3)}
    if p.returncode == 0:
        with open(path) as f:
            j = json.load(f)
        row.update({k: j[k] for k in ("packets", "missed", "seconds", "mpps", "device")})
        row["gbps"] = round(j["bytes"] * 8 / j["seconds"] / 1e9, 3) if j["seconds"] else 0
        if "engine" in j:
            row["engine_ns_per_frame"] = j["engine"].get("ns_per_frame")
            if "full_ns_per_frame" in j["engine"]:
                row["engine_full_ns_per_frame"] = j["engine"]["full_ns_per_frame"]
    else:
        row["stderr"] = p.stderr[-2000:]
    if os.path.exists(path):
        os.unlink(path)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="flow_count binary, or the gnio tool with --app pp")
    ap.add_argument("--app", choices=["flow_count", "pp", "l2fwd"], default="flow_count")
    ap.add_argument("--json", required=True, help="output file")
    ap.add_argument("--sizes", default="64,1500")
    ap.add_argument("--queues", default="1,2,4")
    ap.add_argument("--count", type=int, default=10_000_000, help="packets per run at 64 B (fewer for larger frames)")
    ap.add_argument("--executors", default="cuda,host")
    ap.add_argument("--lanes", default="1", help="engine threads per port to try (each <= queues), e.g. 1,4")
    ap.add_argument("--pkt-mem", default="auto", help="flow_count only: packet memory to try, e.g. auto,gpu")
    ap.add_argument("--mix", default="all", help="pp only: the gen backend's traffic mix (all, udp, tcp, ...)")
    ap.add_argument("--capacity-bin", help="bench/capacity binary: measure the host-to-device bandwidth in this run")
    ap.add_argument("--extra", default="", help="more arguments for every run, e.g. '--ring 4096 --batch 1024'")
    ap.add_argument("--run-timeout", type=int, default=600,
                    help="seconds one run may take before it is killed and recorded as failed")
    args = ap.parse_args()
    global RUN_TIMEOUT_S
    RUN_TIMEOUT_S = args.run_timeout

    m = machine()
    print(f"bench: {args.app} receive rate, gen backend, machine {json.dumps(m)}")
    h2d = None
    if args.capacity_bin:
        p = subprocess.run([args.capacity_bin, "--rings", "0", "--h2d", "--gpu", "0"], capture_output=True, text=True,
                           timeout=300)
        line = next((l for l in p.stdout.splitlines() if "host-to-device" in l), "")
        print(f"bench: {args.capacity_bin} --rings 0 --h2d --gpu 0\n       -> {line or p.stderr.strip()}")
        try:
            h2d = float(line.split(":")[-1].split("Gb/s")[0])
        except ValueError:
            h2d = None
    rows = []
    mems = args.pkt_mem.split(",") if args.app == "flow_count" else ["auto"]
    plan = []
    for size in [int(s) for s in args.sizes.split(",")]:
        count = args.count if size <= 128 else max(args.count // 5, 100_000)
        for q in [int(x) for x in args.queues.split(",")]:
            rx_queues = 3 * q + 1 if args.app == "pp" else q
            for lanes in sorted({min(int(l), rx_queues) for l in args.lanes.split(",")}):
                plan += [(size, count, q, lanes, mem, ex) for mem in mems for ex in args.executors.split(",")]
    for size, count, q, lanes, mem, ex in plan:
        r = run(args.bin, ex, size, q, count, shlex.split(args.extra), lanes, args.app, None if mem == "auto" else mem,
                args.mix)
        if h2d and r["rc"] == 0:
            r["pcie_fraction"] = round(r["gbps"] / h2d, 3)
        rows.append(r)
        status = (f"{r['mpps']:.2f} Mpps {r['gbps']:.2f} Gb/s missed {r['missed']} "
                  f"engine {r.get('engine_ns_per_frame') or 0:.1f} ns/frame busy, "
                  f"{r.get('engine_full_ns_per_frame') or 0:.1f} waiting for full queues" if r["rc"] == 0 else f"rc={r['rc']}")
        print(f"bench: {r['command']}\n       -> {status}", flush=True)
    ratios = []
    for r in rows:
        if r["executor"] != "cuda" or r["rc"] != 0:
            continue
        h = next((x for x in rows if x["executor"] == "host" and x["size"] == r["size"] and x["queues"] == r["queues"]
                  and x["lanes"] == r["lanes"] and x["pkt_mem"] == r["pkt_mem"] and x["rc"] == 0), None)
        if h and h["mpps"]:
            ratios.append({"size": r["size"], "queues": r["queues"], "lanes": r["lanes"], "pkt_mem": r["pkt_mem"],
                           "cuda_mpps": r["mpps"], "cuda_engine_ns": r.get("engine_ns_per_frame"),
                           "host_engine_ns": h.get("engine_ns_per_frame"), "cuda_pcie_fraction": r.get("pcie_fraction"),
                           "host_mpps": h["mpps"],
                           "cuda_over_host": round(r["mpps"] / h["mpps"], 3)})
    print("\nsize  queues  lanes  pkt_mem  cuda Mpps  host Mpps  cuda/host  engine ns/frame cuda,host  of PCIe")
    for x in ratios:
        pcie = f"{x['cuda_pcie_fraction']:.2f}" if x.get("cuda_pcie_fraction") is not None else "-"
        print(f"{x['size']:>4}  {x['queues']:>6}  {x['lanes']:>5}  {x['pkt_mem']:>7}  {x['cuda_mpps']:>9.2f}  "
              f"{x['host_mpps']:>9.2f}  {x['cuda_over_host']:>9.2f}  {x['cuda_engine_ns'] or 0:>10.1f},{x['host_engine_ns'] or 0:<10.1f}  {pcie}")
    with open(args.json, "w") as f:
        json.dump(stamped("rate", {"benchmark": f"{args.app}_rate", "app": args.app, "machine": m, "argv": sys.argv,
                                   "h2d_gbps": h2d, "runs": rows, "ratios": ratios}), f, indent=2)
    print(f"bench: wrote {args.json}")
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
