#!/usr/bin/env python3
"""bench/plot.py on the results committed in bench/results.

  plot_test.py SOURCE_DIR

Checks that every chart is a PNG of 1000x600 pixels that matplotlib reads
back with something drawn on it; that every number a chart's sidecar says it
plots is the value at the place in the input JSON it names, and belongs to
the panel and line it is drawn in; that every run of every input is either
plotted or listed as left out; that the charts in docs/img plot what the
results in bench/results hold today; and that bad input (a malformed or
missing file, a file of another shape, an output folder that cannot be
written, bad options) gets a clear message and its exit status.
Needs matplotlib (Debian: python3-matplotlib, which scripts/setup.sh installs).
"""
import glob, json, os, shlex, shutil, stat, struct, subprocess, sys, tempfile, zlib

PERCENTILE = {"p50_us": 0.5, "p90_us": 0.9, "p99_us": 0.99, "p99_9_us": 0.999}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def plot(src, *args):
    p = subprocess.run([sys.executable, os.path.join(src, "bench", "plot.py"), *args], capture_output=True, text=True,
                       timeout=600)
    return p.returncode, p.stdout, p.stderr


def pointer(doc, ptr):
    """The value at a JSON pointer (RFC 6901) and the object holding it."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]
    parent, v = None, doc
    for p in parts:
        parent = v
        v = v[int(p)] if isinstance(v, list) else v[p]
    return v, parent


def png_size(path):
    """(width, height) from the IHDR chunk, after checking the signature and the chunk's CRC."""
    with open(path, "rb") as f:
        head = f.read(33)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    length, = struct.unpack(">I", head[8:12])
    crc, = struct.unpack(">I", head[29:33])
    if length != 13 or zlib.crc32(head[12:29]) != crc:
        return None
    return struct.unpack(">II", head[16:24])


def expected_kind(doc):
    """What the benchmarks in bench/ write, told apart by their own fields."""
    b = doc.get("benchmark") if isinstance(doc, dict) else None
    if b in ("flow_count_rate", "pp_rate", "l2fwd_rate"):
        return "rate"
    if b in ("capacity", "peers"):
        return b
    if b is None and isinstance(doc, dict) and "anchor" in doc and "cuda_over_host" in doc:
        return "launch_modes"
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if b is None and isinstance(runs, list) and runs and all(
            isinstance(r, dict) and ("p50_us" in r or "error" in r) for r in runs):
        return "latency"
    return None


def check_sidecar(side, doc, name):
    kind = side["kind"]
    used_x, used_y = set(), set()
    for panel in side["panels"]:
        for s in panel["series"]:
            for p in s["points"]:
                rec = None
                for axis, used in (("x", used_x), ("y", used_y)):
                    ptr = p.get(axis + "_from")
                    if not ptr:
                        continue
                    used.add(ptr)
                    v, rec = pointer(doc, ptr)
                    check(v == p[axis] and type(v) is type(p[axis]),
                          f"{name}: {axis} {p[axis]!r} is not {v!r}, the value at {ptr}")
                if not check(rec is not None, f"{name}: a point with no source in {panel['title']}"):
                    continue
                for k, want in {**panel.get("match", {}), **s["match"]}.items():
                    check(rec.get(k) == want, f"{name}: {k}={rec.get(k)!r} in the run of a point drawn as {k}={want!r}")
                if kind == "latency":
                    key = p["x_from"].rsplit("/", 1)[1]
                    check(PERCENTILE.get(key) == p["y"], f"{name}: {p['x_from']} drawn at fraction {p['y']}")
                if kind == "rate":
                    check(f"{rec['queues']} q" in p["x"] and f"{rec.get('lanes', 1)} lane" in p["x"],
                          f"{name}: the run of {p['y_from']} drawn at '{p['x']}'")
    left = {x["from"] for x in side["left_out"]}
    if kind in ("rate", "capacity", "launch_modes"):
        runs = [f"/runs/{i}" for i in range(len(doc["runs"]))]
        plotted = {y.rsplit("/", 1)[0] for y in used_y if y.endswith("/mpps")}
        check(plotted | left == set(runs) and not plotted & left,
              f"{name}: runs neither plotted nor left out: {sorted(set(runs) - plotted - left)}")
        for i, r in enumerate(doc["runs"]):
            good = r.get("rc", 0) == 0 and isinstance(r.get("mpps"), (int, float))
            check(good == (f"/runs/{i}" in plotted), f"{name}: /runs/{i} (rc {r.get('rc')}) plotted: {not good}")
    if kind == "launch_modes":
        want = {f"/runs/{i}/overhead_us" for i, r in enumerate(doc["runs"])
                if r["mode"] != "persistent" and r.get("rc") == 0 and isinstance(r.get("overhead_us"), (int, float))}
        check(want == {y for y in used_y if y.endswith("/overhead_us")}, f"{name}: overheads plotted are not all")
    if kind == "latency":
        want = {f"/runs/{i}/{k}" for i, r in enumerate(doc["runs"]) if "p50_us" in r for k in PERCENTILE}
        check(want == used_x, f"{name}: percentiles not plotted: {sorted(want - used_x)}")
        check(len(want) // 4 + len(left) == len(doc["runs"]), f"{name}: runs neither plotted nor left out")
    if kind == "peers":
        want = {f"/pairs/{i}/{k}" for i, p in enumerate(doc["pairs"]) if p.get("gnio_mpps") is not None
                for k in ("testpmd_mpps", "gnio_mpps")}
        check(want == used_y, f"{name}: pairs plotted {sorted(used_y)}, want {sorted(want)}")
        check(len(want) // 2 + len(left) == len(doc["pairs"]), f"{name}: pairs neither plotted nor left out")


def main():
    src = os.path.abspath(sys.argv[1])
    results = os.path.join(src, "bench", "results")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mpimg
    except ImportError as e:
        print(f"matplotlib is missing ({e}): apt-get install python3-matplotlib (scripts/setup.sh installs it)")
        return 1
    tmp = tempfile.mkdtemp(prefix="gnio_plot_test_")
    try:
        out = os.path.join(tmp, "charts")
        rc, so, se = plot(src, "--out", out, results)
        check(rc == 0, f"plot.py over bench/results: exit {rc}: {se}")
        inputs = sorted(glob.glob(os.path.join(results, "*.json")))
        check(len(inputs) >= 5, "bench/results has result files")
        seen = set()
        for path in inputs:
            base = os.path.basename(path)
            with open(path) as f:
                doc = json.load(f)
            kind = expected_kind(doc)
            png = os.path.join(out, f"{base[:-5]}-{kind}.png")
            if kind is None:
                check(f"{path}: skipped: no chart for this shape" in so, f"{base}: not reported as skipped")
                check(not glob.glob(os.path.join(out, base[:-5] + "-*")), f"{base}: a chart for a file of no kind")
                continue
            seen.add(kind)
            if not check(os.path.exists(png), f"{base}: no {os.path.basename(png)}"):
                continue
            check(png_size(png) == (1000, 600), f"{png}: IHDR says {png_size(png)}, want 1000x600")
            img = mpimg.imread(png)
            check(img.shape[:2] == (600, 1000), f"{png}: read back as {img.shape}")
            check(img.reshape(-1, img.shape[2]).std(axis=0).max() > 0.05, f"{png}: nothing drawn")
            with open(png[:-4] + ".json") as f:
                side = json.load(f)
            check(side["kind"] == kind and side["source"] == path, f"{png}: sidecar names {side['source']}")
            want = shlex.join(doc["argv"]) if "argv" in doc else doc["command"]
            check(side["command"] == want, f"{base}: the sidecar's command is {side['command']!r}, want {want!r}")
            check_sidecar(side, doc, base)
        check(seen == {"rate", "capacity", "latency", "launch_modes", "peers"}, f"kinds drawn: {sorted(seen)}")

        # The same inputs give the same files, byte for byte.
        again = os.path.join(tmp, "again")
        plot(src, "--out", again, results)
        names = sorted(os.listdir(out))
        check(names == sorted(os.listdir(again)), "a second run names its files differently")
        for n in names:
            with open(os.path.join(out, n), "rb") as a, open(os.path.join(again, n), "rb") as b:
                check(a.read() == b.read(), f"{n} differs between two runs on the same input")

        # docs/img shows what bench/results holds.
        for side_path in sorted(glob.glob(os.path.join(src, "docs", "img", "*.json"))):
            n = os.path.basename(side_path)
            with open(side_path) as f:
                committed = json.load(f)
            fresh_path = os.path.join(out, n)
            if check(os.path.exists(fresh_path), f"docs/img/{n}: no such chart from bench/results"):
                with open(fresh_path) as f:
                    fresh = json.load(f)
                for k in ("panels", "left_out", "machine", "command", "title"):
                    check(committed[k] == fresh[k], f"docs/img/{n}: '{k}' differs from bench/results (regenerate it)")
                check(os.path.exists(side_path[:-5] + ".png"), f"docs/img/{n} without its PNG")

        good = os.path.join(results, "2cpu-peers-2026-12-02.json")
        # A malformed file: a real result cut in half. The other input is still plotted.
        bad = os.path.join(tmp, "cut.json")
        with open(os.path.join(results, "h200-flow_count-2026-12-02.json")) as f:
            text = f.read()
        with open(bad, "w") as f:
            f.write(text[:len(text) // 2])
        o2 = os.path.join(tmp, "o2")
        rc, so, se = plot(src, "--out", o2, bad, good)
        check(rc == 1, f"malformed JSON: exit {rc}, want 1")
        check(f"{bad}: not valid JSON" in se, f"malformed JSON: message: {se!r}")
        check(os.path.exists(os.path.join(o2, "2cpu-peers-2026-12-02-peers.png")), "malformed JSON: the good input "
              "was not plotted")
        check(not glob.glob(os.path.join(o2, "cut*")), "malformed JSON: a chart was written for it")

        missing = os.path.join(tmp, "no-such.json")
        rc, so, se = plot(src, "--out", o2, missing)
        check(rc == 1 and f"{missing}: no such file or folder" in se, f"missing input: exit {rc}, {se!r}")

        # Shapes plot.py does not know, and a known shape lacking a field: reported, skipped, no crash.
        odd = {"list.json": [1, 2, 3], "other.json": {"benchmark": "engine_cost", "runs": []},
               "rate-no-executor.json": {"benchmark": "flow_count_rate", "runs": [{"rc": 0, "mpps": 1.0}]}}
        for n, d in odd.items():
            with open(os.path.join(tmp, n), "w") as f:
                json.dump(d, f)
        rc, so, se = plot(src, "--out", o2, *[os.path.join(tmp, n) for n in odd], good)
        check(rc == 0, f"unknown shapes: exit {rc}, want 0: {se}")
        check("list.json: skipped: no chart for this shape (a JSON list" in so, f"unknown shapes: {so!r}")
        check("other.json: skipped: no chart for this shape (benchmark 'engine_cost')" in so, f"engine_cost: {so!r}")
        check("rate-no-executor.json: skipped: looks like rate output but no 'executor' in /runs/0" in so,
              f"rate lacking executor: {so!r}")
        check("Traceback" not in se + so, "a traceback")
        rc, so, se = plot(src, "--out", o2, os.path.join(tmp, "list.json"))
        check(rc == 1 and "nothing to plot" in se, f"only unknown shapes: exit {rc}, {se!r}")

        # Output folders that cannot be written: nothing written, exit 1, the message names --out.
        a_file = os.path.join(tmp, "a-file")
        open(a_file, "w").close()
        ro = os.path.join(tmp, "read-only")
        os.mkdir(ro)
        os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
        # root writes in a 0500 folder; nobody writes in /proc.
        ro_dir = "/proc" if os.geteuid() == 0 else ro
        for out_dir, why in ((a_file, "not a folder"), (os.path.join(a_file, "sub"), "cannot create the folder"),
                             (ro_dir, "cannot write in the folder")):
            rc, so, se = plot(src, "--out", out_dir, good)
            check(rc == 1, f"--out {out_dir}: exit {rc}, want 1")
            check(f"--out {out_dir}: {why}" in se, f"--out {out_dir}: message {se!r}, want '{why}'")
            check("wrote" not in so, f"--out {out_dir}: something was written")
        os.chmod(ro, stat.S_IRWXU)

        # Usage errors: exit 2, naming what is wrong.
        rc, so, se = plot(src, good)
        check(rc == 2 and "--out" in se, f"no --out: exit {rc}, {se!r}")
        rc, so, se = plot(src, "--out", o2)
        check(rc == 2 and "JSON_OR_FOLDER" in se, f"no input: exit {rc}, {se!r}")
        rc, so, se = plot(src, "--out", o2, "--kinds", "rate,pie", good)
        check(rc == 2 and "--kinds: unknown kind 'pie'" in se, f"--kinds pie: exit {rc}, {se!r}")
        rc, so, se = plot(src, "--help")
        check(rc == 0 and "left_out" in so and "Exit status" in so and "--kinds" in so, f"--help: exit {rc}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"plot_test: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
