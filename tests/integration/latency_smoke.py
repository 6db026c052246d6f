#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/latency on the host executor, briefly: every timed packet answered,
# every echo reply's bytes right (the benchmark checks them and counts bad
# ones), the percentiles ordered, the load accounted for and the JSON
# complete. No timing threshold: how fast is the benchmark's business.
#
#   latency_smoke.py LATENCY_BIN
import json
import os
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) != 2:
        print("usage: latency_smoke.py LATENCY_BIN", file=sys.stderr)
        return 2
    bench = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "latency.json")
        cmd = [bench, "--test", "flag,ring,echo", "--exec", "host", "--samples", "300", "--warmup", "20",
               "--poll", "busy,adaptive", "--load", "off,on", "--load-pps", "20000", "--timeout", "10",
               "--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        sys.stdout.write(p.stdout)
        sys.stderr.write(p.stderr)
        check(p.returncode == 0, f"exit status {p.returncode}")
        check(p.stdout.startswith("latency: " + bench), "the command line is printed first")
        check("machine" in p.stdout, "the machine is printed")
        with open(out) as f:
            j = json.load(f)
        for k in ("command", "machine", "inputs", "load", "runs"):
            check(k in j, f"JSON lacks {k}")
        for k in ("cpu", "cpus", "kernel", "gpu"):
            check(k in j.get("machine", {}), f"machine lacks {k}")
        check(j.get("load", {}).get("what"), "the load is described")
        runs = j.get("runs", [])
        want = {("flag", "busy", False)}
        for t in ("ring", "echo"):
            for poll in ("busy", "adaptive"):
                for load in (False, True):
                    want.add((t, poll, load))
        got = {(r["test"], r["poll"], r["load"]) for r in runs}
        check(got == want, f"runs {sorted(got)} instead of {sorted(want)}")
        for r in runs:
            name = f'{r["test"]} poll={r["poll"]} load={r["load"]}'
            check("error" not in r, f"{name}: {r.get('error')}")
            check(r["samples"] == 300, f"{name}: {r['samples']} samples, not 300")
            check(r["sent"] == 300 and r["lost"] == 0, f"{name}: sent {r['sent']}, lost {r['lost']}")
            check(r["bad_replies"] == 0, f"{name}: {r['bad_replies']} bad replies")
            ps = [r.get(k) for k in ("min_us", "p50_us", "p90_us", "p99_us", "p99_9_us", "max_us")]
            check(None not in ps and all(a <= b for a, b in zip(ps, ps[1:])) and ps[0] > 0,
                  f"{name}: percentiles not ordered: {ps}")
            if r["load"]:
                sent, seen = r.get("load_frames_sent", 0), r.get("load_frames_seen", 0)
                check(sent > 0, f"{name}: no load was sent")
                if r["test"] == "ring":
                    # Every load frame reached the kernel or was dropped on a full ring, and counted.
                    check(seen + r.get("rx_missed", 0) == sent,
                          f"{name}: load sent {sent}, kernel saw {seen}, missed {r.get('rx_missed')}")
                else:
                    check(0 < seen <= sent, f"{name}: load sent {sent}, replies seen {seen}")
            if r["test"] == "ring":
                check(r.get("kernel_timed", 0) >= 320, f"{name}: the kernel acknowledged {r.get('kernel_timed')}")
            if r["test"] == "echo":
                check(r.get("pp_exit_status") == 0, f"{name}: gnio pp exited with {r.get('pp_exit_status')}")

        # The step-by-step tests and the acknowledgement without a fence:
        # chain (each depth), cqe and ring, both acknowledgements; every
        # sequence number must come back (bad_replies counts a wrong one).
        out2 = os.path.join(tmp, "chain.json")
        cmd = [bench, "--test", "flag,chain,cqe,ring", "--exec", "host", "--samples", "300", "--warmup", "20",
               "--poll", "latency", "--load", "off", "--ack", "release,relaxed", "--timeout", "10", "--json", out2]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        sys.stdout.write(p.stdout)
        sys.stderr.write(p.stderr)
        check(p.returncode == 0, f"chain run: exit status {p.returncode}")
        with open(out2) as f:
            runs = json.load(f).get("runs", [])
        got = {(r["test"], r.get("setting", "")) for r in runs}
        want = {("flag", ""), ("flag", "ack=relaxed"), ("cqe", ""), ("cqe", "ack=relaxed"), ("ring", ""),
                ("ring", "ack=relaxed")}
        for depth in ("owner", "fence", "entry", "frame", "acquire"):
            want |= {("chain", f"depth={depth}"), ("chain", f"depth={depth} ack=relaxed")}
        check(got == want, f"chain run: runs {sorted(got)} instead of {sorted(want)}")
        for r in runs:
            name = f'{r["test"]} {r.get("setting", "")}'
            check("error" not in r, f"{name}: {r.get('error')}")
            check(r["samples"] == 300 and r["lost"] == 0 and r["bad_replies"] == 0,
                  f"{name}: {r['samples']} samples, {r['lost']} lost, {r['bad_replies']} bad")
            if r["test"] == "chain":
                steps = r.get("kernel_steps", {})
                for k in ("fence", "entry", "frame", "ack", "seen_to_acked"):
                    check(steps.get(k, {}).get("p50_ns", -1) >= 0, f"{name}: kernel_steps lacks {k}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
