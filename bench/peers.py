#!/usr/bin/env python3
"""gnio next to DPDK's testpmd on the same virtual device, the same cores and
the same duration. testpmd runs --forward-mode=rxonly (receive and free) and
--forward-mode=io (receive and send back out); gnio runs flow_count on the
dpdk backend (receive by reference, parse, count flows on the host executor)
and, when it is built, l2fwd (receive by reference, swap MACs, send from the
RX buffers). Prints the commands, the machine and the inputs, a side-by-side
table with Mpps and gnio/testpmd, and writes everything as JSON with --out.

  bench/peers.py --gnio-bin build/examples/flow_count/flow_count --out peers.json
  bench/peers.py --cores 2,3 --seconds 10 --vdevs net_null --testpmd ./dpdk-testpmd

Pairs: rxonly <-> flow_count (by_ref=1 and by_ref=0), io <-> l2fwd. On
net_ring a port receives only what it sent itself, so testpmd's io runs with
--tx-first (32 frames circulating per queue) and rxonly has nothing to
receive; gnio's apps send nothing first, so net_ring has testpmd rows only.
testpmd is --testpmd PATH, else dpdk-testpmd next to this script, else on
PATH; without one the testpmd runs are skipped with a message. Needs root
(EAL). Rates: testpmd's RX-packets (its forward statistics, port 0) over the
time from "Press enter to exit" to the Enter that stops it; gnio's packets
processed by the kernel (io: frames sent) over its own measured seconds.
"""
import argparse, json, os, pty, re, shutil, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from result_schema import stamped  # noqa: E402


EAL = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "--no-telemetry", "--log-level=4"]
PMD_ARGS = []  # ["-d", DIR] with --pmd-dir

# The machine description every bench script writes (host, kernel, CPUs, GPUs).
from flow_count_rate import machine  # noqa: E402  (this script's own folder is on sys.path)


def find_testpmd(arg):
    if arg:
        return arg if os.access(arg, os.X_OK) else None
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dpdk-testpmd")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("dpdk-testpmd")


def run_testpmd(testpmd, cores, vdev, mode, seconds):
    """testpmd non-interactive: forwarding starts, it prints "Press enter to
    exit", and Enter stops it and prints the forward statistics."""
    cmd = [testpmd, "-l", cores] + EAL + PMD_ARGS + [f"--vdev={vdev}0", "--", f"--forward-mode={mode}", "--port-topology=loop",
                                          "--nb-cores=1", "--rxq=1", "--txq=1", "--burst=32",
                                          "--total-num-mbufs=16384"]
    if mode == "io" and vdev == "net_ring":
        cmd.append("--tx-first")
    row = {"tool": "testpmd", "vdev": vdev, "mode": mode, "command": " ".join(cmd)}
    # A terminal for its output: through a pipe, stdio would hold "Press enter
    # to exit" back until testpmd exits.
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=slave, stderr=slave, text=True)
    os.close(slave)
    lines, started = [], threading.Event()
    t = {}

    def reader():
        buf = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            buf += chunk
            *done, buf = buf.split(b"\n")
            for raw in done:
                line = raw.decode(errors="replace") + "\n"
                lines.append(line)
                if "Press enter to exit" in line and not started.is_set():
                    t["start"] = time.monotonic()
                    started.set()
        if buf:
            lines.append(buf.decode(errors="replace"))
        os.close(master)
        started.set()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    if not started.wait(120) or "start" not in t:
        p.kill()
        p.wait()
        th.join(5)
        row.update({"rc": p.returncode, "error": "testpmd did not start forwarding", "output": "".join(lines)[-3000:]})
        return row
    time.sleep(seconds)
    t["stop"] = time.monotonic()
    try:
        p.stdin.write("\n")
        p.stdin.flush()
    except OSError:
        pass
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    th.join(5)
    out = "".join(lines)
    block = out.split("Forward statistics for port 0", 1)
    rx = re.search(r"RX-packets:\s*(\d+)", block[1]) if len(block) > 1 else None
    tx = re.search(r"TX-packets:\s*(\d+)", block[1]) if len(block) > 1 else None
    secs = t["stop"] - t["start"]
    row.update({"rc": p.returncode, "seconds": round(secs, 3)})
    if not rx:
        row.update({"error": "no RX-packets in testpmd's output", "output": out[-3000:]})
        return row
    row.update({"rx_packets": int(rx.group(1)), "tx_packets": int(tx.group(1)) if tx else None,
                "mpps": round(int(rx.group(1)) / secs / 1e6, 3)})
    return row


def run_gnio(binary, app, cores, vdev, by_ref, seconds):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    # overflow=wait: the engine takes from the device only what the rings have
    # room for, as testpmd takes only what it can free; with drop, on two
    # cores it would spend a core receiving frames only to drop them.
    port = f"dpdk:vdev={vdev}0,by_ref={by_ref},overflow=wait"
    if PMD_ARGS:  # gnio's eal= replaces its default EAL arguments, which EAL here repeats
        linked = os.path.join(PMD_ARGS[1], "linked")
        port += ",eal=" + " ".join(EAL + PMD_ARGS + (["-d", linked] if os.path.isdir(linked) else []))
    cmd = ["taskset", "-c", cores, binary, "--port", port, "--duration", str(seconds), "--stats-interval", "0",
           "--json", path]
    cmd += ["--gpu", "host"] if app == "l2fwd" else ["--exec", "host", "--queues", "1"]
    row = {"tool": f"gnio {app}", "vdev": vdev, "by_ref": by_ref, "command": " ".join(cmd)}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120,
                       env=dict(os.environ, GNIO_LOG_LEVEL="info"))
    row["rc"] = p.returncode
    row["log"] = [l for l in p.stderr.splitlines() if "dpdk:" in l][-4:]
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        j = None
    os.unlink(path)
    if p.returncode != 0 or not j:
        row["error"] = p.stderr[-2000:]
        return row
    done = j["forwarded"] if app == "l2fwd" else j["packets"]
    row.update({"packets": done, "received": j["received"], "missed": j["missed"], "seconds": j["seconds"],
                "mpps": round(done / j["seconds"] / 1e6, 3) if j["seconds"] else 0.0,
                "engine_ns_per_frame": j.get("engine", {}).get("ns_per_frame")})
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gnio-bin", default="build/examples/flow_count/flow_count", help="flow_count binary")
    ap.add_argument("--l2fwd-bin", help="l2fwd binary (default: examples/l2fwd/l2fwd of --gnio-bin's build)")
    ap.add_argument("--testpmd", help="dpdk-testpmd (default: next to this script, else on PATH)")
    ap.add_argument("--cores", help="CPU list for both, e.g. 0,1 (default: the first two this process may use)")
    ap.add_argument("--seconds", type=float, default=5.0, help="measured time per run")
    ap.add_argument("--vdevs", default="net_null,net_ring", help="DPDK virtual device drivers")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--pmd-dir", help="load DPDK drivers from this directory (EAL -d) on both sides, for a machine "
                    "without DPDK installed (bench/stage-peers.sh copies them; DIR/linked, with drivers testpmd links itself, "
                    "is loaded by gnio only)")
    args = ap.parse_args()
    if args.pmd_dir:
        if not os.path.isdir(args.pmd_dir):
            print(f"peers: --pmd-dir {args.pmd_dir} is not a directory", file=sys.stderr)
            return 2
        PMD_ARGS[:] = ["-d", os.path.abspath(args.pmd_dir)]

    allowed = sorted(os.sched_getaffinity(0))
    cores = args.cores or ",".join(str(c) for c in allowed[:2])
    try:
        want = [int(c) for c in cores.split(",")]
    except ValueError:
        print(f"peers: --cores {cores}: give CPU numbers separated by commas, e.g. 0,1", file=sys.stderr)
        return 2
    if len(want) < 2 or any(c not in allowed for c in want):
        print(f"peers: --cores {cores}: give two or more CPUs of {allowed} (testpmd needs a main and a forwarding lcore)",
              file=sys.stderr)
        return 2
    vdevs = [v for v in args.vdevs.split(",") if v]
    bad = [v for v in vdevs if v not in ("net_null", "net_ring")]
    if bad:
        print(f"peers: --vdevs {','.join(bad)}: net_null and net_ring are the ones that need no input", file=sys.stderr)
        return 2
    if args.seconds <= 0:
        print("peers: --seconds must be positive", file=sys.stderr)
        return 2
    if not shutil.which("taskset"):
        print("peers: taskset (util-linux) is not installed: gnio could not be held to --cores", file=sys.stderr)
        return 2
    if not (os.path.isfile(args.gnio_bin) and os.access(args.gnio_bin, os.X_OK)):
        print(f"peers: --gnio-bin {args.gnio_bin} is not an executable (build flow_count first)", file=sys.stderr)
        return 2
    l2fwd = args.l2fwd_bin or os.path.join(os.path.dirname(os.path.dirname(args.gnio_bin)),
                                           "l2fwd", "l2fwd")
    if not os.access(l2fwd, os.X_OK):
        print(f"peers: no l2fwd at {l2fwd}: the io rows have testpmd only")
        l2fwd = None
    testpmd = find_testpmd(args.testpmd)
    m = machine()
    print(f"peers: {' '.join(sys.argv)}")
    print(f"peers: machine {json.dumps(m)}")
    print(f"peers: cores {cores}, {args.seconds} s per run, vdevs {','.join(vdevs)}, testpmd {testpmd or 'absent'}, "
          f"flow_count {args.gnio_bin}, l2fwd {l2fwd or 'absent'}")
    if not testpmd and args.testpmd:
        print(f"peers: --testpmd {args.testpmd} is not an executable: testpmd runs skipped")
    elif not testpmd:
        print("peers: dpdk-testpmd not found (give --testpmd PATH, put it next to this script, or install Debian's "
              "dpdk package): testpmd runs skipped")

    rows, pairs = [], []

    def show(r):
        what = f"{r['mpps']:.2f} Mpps" if "mpps" in r else f"failed (rc={r.get('rc')}): {r.get('error', '')[-300:]}"
        print(f"peers: {r['command']}\n       -> {what}", flush=True)
        rows.append(r)
        return r

    for vdev in vdevs:
        for mode, app, refs in (("rxonly", "flow_count", (1, 0)), ("io", "l2fwd", (1,))):
            t = show(run_testpmd(testpmd, cores, vdev, mode, args.seconds)) if testpmd else None
            for by_ref in refs if vdev != "net_ring" else refs[:1]:
                if vdev == "net_ring":
                    g = None  # nothing to receive: gnio's apps send no first frame
                elif app == "l2fwd" and not l2fwd:
                    g = None
                else:
                    g = show(run_gnio(args.gnio_bin if app == "flow_count" else l2fwd, app, cores, vdev, by_ref,
                                      args.seconds))
                tm = t.get("mpps") if t else None
                gm = g.get("mpps") if g else None
                pairs.append({"vdev": vdev, "testpmd_mode": mode, "testpmd_mpps": tm, "gnio_app": app if g else None,
                              "by_ref": by_ref if g else None, "gnio_mpps": gm,
                              "gnio_engine_ns_per_frame": g.get("engine_ns_per_frame") if g else None,
                              "gnio_over_testpmd": round(gm / tm, 3) if tm and gm is not None else None})

    def f(x, w, p=2):
        return f"{x:>{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"

    # ns/frame: testpmd's one forwarding core per frame; gnio's engine thread
    # alone (receive, ring, release), the rest of its time is the kernel's.
    print(f"\n{'vdev':<9} {'testpmd':<8} {'Mpps':>7} {'ns/frame':>8}   {'gnio':<18} {'Mpps':>7} {'engine ns/frame':>15}"
          f"  gnio/testpmd")
    for x in pairs:
        app = f"{x['gnio_app']} by_ref={x['by_ref']}" if x["gnio_app"] else "-"
        tns = 1e3 / x["testpmd_mpps"] if x["testpmd_mpps"] else None
        print(f"{x['vdev']:<9} {x['testpmd_mode']:<8} {f(x['testpmd_mpps'], 7)} {f(tns, 8, 1)}   {app:<18} "
              f"{f(x['gnio_mpps'], 7)} {f(x['gnio_engine_ns_per_frame'], 15, 1)}  {f(x['gnio_over_testpmd'], 12)}")
    if args.out:
        with open(args.out, "w") as fo:
            json.dump(stamped("peers", {"benchmark": "peers", "machine": m, "argv": sys.argv, "cores": cores,
                                        "seconds": args.seconds, "testpmd": testpmd, "runs": rows, "pairs": pairs}),
                      fo, indent=2)
        print(f"peers: wrote {args.out}")
    return 0 if all("mpps" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
