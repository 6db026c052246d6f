#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two builds side by side: bench/flow_count_rate.py run with the same
arguments on build A and build B, alternating (A, B, A, B, ...) for --rounds
rounds, so that both see the same machine at the same time. Prints every run
and, per row (executor, size, queues, lanes), the median rate of each build
and B/A; writes all of it as JSON.

  bench/ab_rate.py --a old/tools/gnio/gnio --b build/tools/gnio/gnio --json ab.json \\
      -- --app pp --mix tcp --sizes 64 --queues 1 --lanes 1 --count 4000000 --executors host

Everything after -- goes to flow_count_rate.py, except --bin and --json,
which this script sets for each run. Two staged builds (scripts/gpu-check.sh
stage) each need their own lib/ first on LD_LIBRARY_PATH: --lib-a, --lib-b.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def row_key(run):
    return (run.get("executor"), run.get("size"), run.get("queues"), run.get("lanes"), run.get("pkt_mem"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="binary of build A (the baseline)")
    ap.add_argument("--b", required=True, help="binary of build B")
    ap.add_argument("--lib-a", help="put this folder first on LD_LIBRARY_PATH for build A's runs (a staged build's lib/)")
    ap.add_argument("--lib-b", help="the same for build B")
    ap.add_argument("--label-a", default="a")
    ap.add_argument("--label-b", default="b")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each build (default 3)")
    ap.add_argument("--json", required=True, help="output file")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- then flow_count_rate.py's arguments")
    args = ap.parse_args()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if any(a in ("--bin", "--json") or a.startswith(("--bin=", "--json=")) for a in rest):
        ap.error("--bin and --json are set by this script; give the builds with --a and --b")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    for b in (args.a, args.b):
        if not os.access(b, os.X_OK):
            ap.error(f"{b}: not an executable file")

    for d in (args.lib_a, args.lib_b):
        if d is not None and not os.path.isdir(d):
            ap.error(f"{d}: not a folder")
    builds = [(args.label_a, args.a), (args.label_b, args.b)]
    libs = {args.label_a: args.lib_a, args.label_b: args.lib_b}
    out = {"schema": "gnio.bench.ab_rate", "version": "1.0", "argv": sys.argv, "rate_args": rest,
           "builds": {lbl: {"bin": path, "lib": libs[lbl]} for lbl, path in builds}, "rounds": args.rounds,
           "runs": [], "rows": []}
    machine = None
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gnio-ab-") as tmp:
        for rnd in range(1, args.rounds + 1):
            for lbl, path in builds:
                j = os.path.join(tmp, f"{lbl}-{rnd}.json")
                cmd = [sys.executable, os.path.join(HERE, "flow_count_rate.py"), "--bin", path, "--json", j] + rest
                print(f"ab: round {rnd} {lbl}: {' '.join(cmd)}", flush=True)
                env = dict(os.environ)
                if libs[lbl]:
                    env["LD_LIBRARY_PATH"] = os.path.abspath(libs[lbl]) + (
                        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
                if p.returncode != 0:
                    # flow_count_rate.py exits 1 when any of its runs failed and
                    # still writes the others (each with its rc): those are kept.
                    failed += 1
                    print(p.stdout[-2000:], file=sys.stderr)
                    print(f"ab: round {rnd} {lbl} failed (exit {p.returncode})", file=sys.stderr)
                if not os.path.exists(j):
                    continue
                with open(j) as f:
                    d = json.load(f)
                machine = machine or d.get("machine")
                for r in d.get("runs", []):
                    r = dict(r, build=lbl, round=rnd)
                    out["runs"].append(r)
                    print(f"ab:   {lbl} {r.get('executor')} {r.get('size')} B q{r.get('queues')} l{r.get('lanes')}: "
                          f"{r.get('mpps', 0):.2f} Mpps (engine busy {r.get('engine_ns_per_frame')}, "
                          f"full-wait {r.get('engine_full_ns_per_frame')} ns/frame)", flush=True)
    out["machine"] = machine
    keys = []
    for r in out["runs"]:
        if row_key(r) not in keys:
            keys.append(row_key(r))
    print(f"\n{'executor':8} {'size':>5} {'queues':>6} {'lanes':>5}  {args.label_a + ' Mpps':>14}  "
          f"{args.label_b + ' Mpps':>14}  b/a")
    for k in keys:
        med = {}
        for lbl, _ in builds:
            v = [r["mpps"] for r in out["runs"] if row_key(r) == k and r["build"] == lbl and r.get("rc") == 0]
            med[lbl] = statistics.median(v) if v else None
        a, b = med[args.label_a], med[args.label_b]
        ratio = b / a if a and b else None
        out["rows"].append({"executor": k[0], "size": k[1], "queues": k[2], "lanes": k[3], "pkt_mem": k[4],
                            "median_mpps": med, "ratio_b_over_a": ratio})
        fa = f"{a:.2f}" if a else "-"
        fb = f"{b:.2f}" if b else "-"
        fr = f"{ratio:.2f}" if ratio else "-"
        print(f"{k[0]:8} {k[1]:>5} {k[2]:>6} {k[3]:>5}  {fa:>14}  {fb:>14}  {fr}")
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"ab: wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
