#!/usr/bin/env python3
"""GPU receive-rate scaling: an app with a gen port per GPU, one GPU alone
next to every GPU at once (one process per GPU, started together), in one run;
plus one process spreading its queues over all GPUs (--gpu 0,1,...). Prints the
commands, the machine and the inputs, writes JSON with the scaling ratio.
The app is flow_count (--app flow_count, the default) or gnio pp (--app pp,
--bin pointing at the gnio tool; the generator sends its udp/tcp/icmp mix and
--queues is per traffic class).

  bench/multi_gpu_rate.py --bin build-gpu/examples/flow_count/flow_count --json out.json
  bench/multi_gpu_rate.py --app pp --bin build-gpu/tools/gnio/gnio --json pp.json --count 20000000
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flow_count_rate import machine  # noqa: E402
from result_schema import stamped  # noqa: E402


def cmd_for(app, binary, gpu, port, queues, path):
    sub = ["pp"] if app == "pp" else []
    return [binary, *sub, "--port", port, "--gpu", gpu, "--queues", str(queues), "--stats-interval", "0", "--json", path]


def run_many(cmds):
    procs, paths = [], []
    for c in cmds:
        paths.append(c[-1])
        procs.append(subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = []
    for p, path in zip(procs, paths):
        so, se = p.communicate(timeout=600)
        row = {"command": " ".join(p.args), "rc": p.returncode}
        if p.returncode == 0:
            with open(path) as f:
                j = json.load(f)
            row.update({k: j[k] for k in ("packets", "missed", "seconds", "mpps", "per_gpu")})
        else:
            row["stderr"] = se[-2000:]
        out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="flow_count, or the gnio tool with --app pp")
    ap.add_argument("--app", choices=["flow_count", "pp"], default="flow_count")
    ap.add_argument("--json", required=True)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--count", type=int, default=40_000_000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--queues", type=int, default=4, help="RX queues per GPU (per traffic class for pp)")
    ap.add_argument("--lanes", type=int, default=4, help="engine threads per gen port")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    ap.add_argument("--host", action="store_true", help="host executors instead of GPUs (to try the script)")
    a = ap.parse_args()
    m = machine()
    print(f"bench: multi-GPU receive rate of {a.app}, machine {json.dumps(m)}")
    tmp = tempfile.mkdtemp()
    mix = ",mix=all" if a.app == "pp" else ""
    lanes = lambda n: f",lanes={n}" if n > 1 else ""
    port = f"gen:size={a.size},flows=4096,count={a.count}{lanes(a.lanes)}{mix}"
    sel = (lambda g: "host") if a.host else str
    gpus = ",".join(sel(g) for g in range(a.gpus))
    port_all = f"gen:size={a.size},flows=4096,count={a.count}{lanes(a.lanes * a.gpus)}{mix}"
    # Rounds interleave the three setups so that drift hits them alike; the
    # ratio is taken between medians.
    rounds = []
    for k in range(a.repeat):
        single = run_many([cmd_for(a.app, a.bin, sel(0), port, a.queues, f"{tmp}/single.json")])[0]
        together = run_many([cmd_for(a.app, a.bin, sel(g), port, a.queues, f"{tmp}/g{g}.json") for g in range(a.gpus)])
        spread = run_many([cmd_for(a.app, a.bin, gpus, port_all, a.queues * a.gpus, f"{tmp}/spread.json")])[0]
        total = sum(r.get("mpps", 0) for r in together)
        for r in [single, *together, spread]:
            print(f"bench: round {k + 1}: {r['command']}\n       -> {r.get('mpps', 0):.2f} Mpps (rc {r['rc']})")
        rounds.append({"single": single, "together": together, "total_mpps": total, "spread": spread})
    med = lambda xs: statistics.median(xs) if xs else 0
    single_m = med([r["single"].get("mpps", 0) for r in rounds])
    total_m = med([r["total_mpps"] for r in rounds])
    spread_m = med([r["spread"].get("mpps", 0) for r in rounds])
    ratio = total_m / single_m if single_m else 0
    print(f"\nbench: medians of {a.repeat} round(s): one GPU {single_m:.2f} Mpps; {a.gpus} GPUs, a gen port each: "
          f"{total_m:.2f} Mpps = {ratio:.2f}x; one process over {a.gpus} GPUs: {spread_m:.2f} Mpps "
          f"({spread_m / single_m if single_m else 0:.2f}x)")
    with open(a.json, "w") as f:
        json.dump(stamped("multi_gpu_rate", {"benchmark": "multi_gpu_rate", "app": a.app, "machine": m, "argv": sys.argv,
                                             "rounds": rounds, "single_mpps": single_m, "total_mpps": total_m,
                                             "scaling": ratio, "spread_mpps": spread_m,
                                             "spread_scaling": spread_m / single_m if single_m else 0}), f, indent=2)
    ok = all(r["single"]["rc"] == 0 and all(t["rc"] == 0 for t in r["together"]) and r["spread"]["rc"] == 0
             for r in rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
