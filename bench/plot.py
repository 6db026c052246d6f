#!/usr/bin/env python3
"""Charts of gnio's benchmark results: reads the JSON that the benchmarks in
bench/ write and draws one PNG per chart (1000x600 px), with the machine and
the command of the run in the footer of each figure.

  bench/plot.py --out docs/img bench/results/h200-flow_count-2026-12-02.json
  bench/plot.py --out /tmp/charts bench/results          # every *.json in the folder

What it draws, by the benchmark that wrote the file:

  rate          bench/flow_count_rate.py (flow_count, gnio pp, l2fwd): Mpps for each
                queues/lanes (and packet memory) setting, CUDA executor next to the host
                executor, one panel per frame size
  capacity      bench/capacity: Mpps against the number of rings, per app and ring memory
  latency       bench/latency: the distribution (CDF) of the turnaround through the
                percentiles in the JSON (p50, p90, p99, p99.9), one panel per test and
                load, one line per executor, poll mode and setting
  launch_modes  bench/launch_modes.py: Mpps against the burst size per launch mode and
                executor (the persistent kernel's default batch as a level line), and the
                overhead per launch against the persistent kernel given the same batches
  peers         bench/peers.py: DPDK testpmd and gnio on the same virtual device

Each chart NAME.png (NAME is the input file's name without .json, a dash and
the kind, e.g. h200-flow_count-2026-12-02-rate.png) comes with NAME.json, the
exact numbers it plots: per panel and line, every point's x and y, and where
each came from in the input (a JSON pointer such as /runs/3/mpps). Runs that
failed, or have no value to plot, are listed there under "left_out".

A file of another shape (bench/engine_cost, bench/multi_gpu_rate.py, anything
else) is reported and skipped. Exit status: 0 when every input was read and
every chart written; 1 when an input is missing, unreadable or not JSON, the
output folder cannot be written, or nothing could be plotted (the other
inputs are still plotted); 2 for a usage error. Needs matplotlib (Debian:
python3-matplotlib); draws with the Agg backend, no display needed.
"""
import argparse, io, json, math, os, shlex, sys, tempfile, textwrap
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from result_schema import stamped  # noqa: E402


WIDTH_PX, HEIGHT_PX, DPI = 1000, 600, 100
PERCENTILES = [("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99), ("p99_9_us", 0.999)]
EXEC_COLOR = {"cuda": "#5a9e00", "host": "#3b6fb6"}
MODE_LINE = {"per-burst": "-", "graph": ":", "persistent": "-."}


class ShapeError(Exception):
    """The file looks like a known benchmark's but lacks what the chart needs."""


def machine_line(m):
    if not isinstance(m, dict):
        return "machine: not recorded"
    parts = []
    if m.get("cpu") or m.get("cpus"):
        parts.append(f"{m.get('cpu', 'CPU')}, {m.get('cpus', '?')} CPUs")
    gpus = m.get("gpus")
    if isinstance(gpus, list) and gpus:
        parts.append("; ".join(str(g) for g in gpus))
    elif m.get("gpu") or m.get("device"):
        g = str(m.get("gpu") or m.get("device"))
        parts.append("no GPU" if g == "none" else g)
    elif isinstance(gpus, list):
        parts.append("no GPU")
    if m.get("kernel"):
        parts.append(f"kernel {m['kernel']}")
    if m.get("host"):
        parts.append(f"host {m['host']}")
    return "machine: " + " | ".join(parts)


def command_line(doc):
    if isinstance(doc.get("argv"), list):
        return shlex.join(str(a) for a in doc["argv"])
    return str(doc.get("command", "not recorded"))


def kind_of(doc):
    """The chart kind for a document, or None with a description of what it is."""
    if not isinstance(doc, dict):
        return None, f"a JSON {type(doc).__name__}, not an object"
    b = doc.get("benchmark")
    runs = doc.get("runs")
    if isinstance(b, str) and b.endswith("_rate") and b != "multi_gpu_rate":
        return "rate", b
    if b == "capacity":
        return "capacity", b
    if b == "peers":
        return "peers", b
    if b is None and isinstance(runs, list) and runs and all(isinstance(r, dict) for r in runs):
        if "target" in doc and "ratios" in doc and all("mode" in r for r in runs):
            return "launch_modes", "launch_modes"
        if all("test" in r and "exec" in r for r in runs):
            return "latency", "latency"
    if b is not None:
        return None, f"benchmark '{b}'"
    return None, "keys " + ", ".join(sorted(doc)[:8])


def need(rec, key, where):
    if not isinstance(rec, dict) or key not in rec:
        raise ShapeError(f"no '{key}' in {where}")
    return rec[key]


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def ok_run(r):
    return r.get("rc", 0) == 0 and not r.get("error")


def point(x, y, x_from=None, y_from=None):
    p = {"x": x, "y": y}
    if x_from:
        p["x_from"] = x_from
    if y_from:
        p["y_from"] = y_from
    return p


# --- the kinds: each returns (title, panels, left_out) ------------------------
# panel: {"title", "x_label", "y_label", "x_scale", "y_scale", "style", "series": [...]};
# series: {"label", "match": {fields of the records it plots}, "points": [...]}.

def rate_panels(doc):
    runs = need(doc, "runs", "the file")
    app = doc.get("app") or doc["benchmark"][:-len("_rate")]
    left, good = [], []
    for i, r in enumerate(runs):
        if not ok_run(r) or not number(r.get("mpps")):
            left.append({"from": f"/runs/{i}", "why": f"rc={r.get('rc')}" if r.get("rc") else "no mpps"})
        else:
            for k in ("executor", "size", "queues"):
                need(r, k, f"/runs/{i}")
            good.append((i, r))
    mems = {r.get("pkt_mem", "auto") for _, r in good}
    panels = []
    for size in sorted({r["size"] for _, r in good}):
        rows = [(i, r) for i, r in good if r["size"] == size]
        keys = sorted({(r["queues"], r.get("lanes", 1), r.get("pkt_mem", "auto")) for _, r in rows},
                      key=lambda k: (k[2] != "auto", k[2], k[0], k[1]))
        cats = []
        for q, lanes, mem in keys:
            c = f"{q} q{'/class' if app == 'pp' else ''}\n{lanes} lane{'s' if lanes != 1 else ''}"
            cats.append(c + (f"\npkt_mem={mem}" if len(mems) > 1 else ""))
        execs = sorted({r["executor"] for _, r in rows}, key=lambda e: (e != "cuda", e != "host", e))
        series = []
        for e in execs:
            pts = []
            for (q, lanes, mem), cat in zip(keys, cats):
                for i, r in rows:
                    if (r["executor"], r["queues"], r.get("lanes", 1), r.get("pkt_mem", "auto")) == (e, q, lanes, mem):
                        pts.append(point(cat, r["mpps"], y_from=f"/runs/{i}/mpps"))
            series.append({"label": f"{e} executor", "match": {"executor": e}, "color": EXEC_COLOR.get(e),
                           "points": pts})
        panels.append({"title": f"{size} B frames", "match": {"size": size}, "x_label": "", "y_label": "Mpps",
                       "style": "bars", "categories": cats, "series": series})
    return f"{app}: rate on the gen backend, CUDA executor and host executor", panels, left


def capacity_panels(doc):
    runs = need(doc, "runs", "the file")
    left, series = [], {}
    for i, r in enumerate(runs):
        if not number(r.get("mpps")):
            left.append({"from": f"/runs/{i}", "why": "no mpps"})
            continue
        app, mem, rings = need(r, "app", f"/runs/{i}"), need(r, "mem", f"/runs/{i}"), need(r, "rings", f"/runs/{i}")
        s = series.setdefault((app, mem), {"label": f"{app}, rings in {'GPU' if mem == 'gpu' else 'host'} memory",
                                           "match": {"app": app, "mem": mem}, "points": [],
                                           "line": "-" if mem == "gpu" else "--"})
        s["points"].append(point(rings, r["mpps"], x_from=f"/runs/{i}/rings", y_from=f"/runs/{i}/mpps"))
    apps = sorted({a for a, _ in series})
    for (app, _), s in series.items():
        s["points"].sort(key=lambda p: p["x"])
        s["color"] = f"C{apps.index(app) % 10}"
    inp = doc.get("inputs", {})
    sizes = ", ".join(f"{k} {inp[k]}" for k in ("threads", "batch", "ring") if k in inp)
    panel = {"title": f"consumers' rate, a producer that costs nothing ({sizes})", "x_label": "rings",
             "y_label": "Mpps (all rings)", "x_scale": "log2", "y_scale": "log", "style": "lines",
             "series": sorted(series.values(), key=lambda s: s["label"])}
    return "bench/capacity: what the kernels take from rings", [panel], left


def latency_panels(doc):
    runs = need(doc, "runs", "the file")
    left, panels = [], {}
    for i, r in enumerate(runs):
        if not all(number(r.get(k)) for k, _ in PERCENTILES):
            left.append({"from": f"/runs/{i}", "why": r.get("error") or "no percentiles"})
            continue
        test, load = need(r, "test", f"/runs/{i}"), bool(r.get("load"))
        p = panels.setdefault((test, load), {"title": f"{test}, {'under load' if load else 'idle'}",
                                             "match": {"test": test, "load": r.get("load")},
                                             "x_label": "turnaround (µs)", "y_label": "fraction of samples ≤ x",
                                             "x_scale": "log", "y_scale": "logit", "style": "cdf", "series": []})
        label = " ".join(str(v) for v in (r.get("exec"), r.get("setting"), f"poll {r.get('poll')}") if v)
        extra = [f"{r['lost']} lost" for _ in [0] if r.get("lost")]
        match = {k: r[k] for k in ("exec", "poll", "setting") if k in r}
        p["series"].append({"label": label + (f" ({', '.join(extra)})" if extra else ""), "match": match,
                            "line": "--" if r.get("poll") == "adaptive" else "-",
                            "points": [point(r[k], q, x_from=f"/runs/{i}/{k}") for k, q in PERCENTILES]})
    order = {"flag": 0, "ring": 1, "echo": 2, "veth": 3}
    panels = [panels[k] for k in sorted(panels, key=lambda k: (order.get(k[0], 9), k[0], k[1]))]
    # One colour per executor (and setting, where the runs have one), the same in every panel.
    keys = sorted({(s["match"].get("exec"), s["match"].get("setting")) for p in panels for s in p["series"]},
                  key=lambda k: (str(k[0]) != "cuda", str(k[0]), str(k[1])))
    by_exec = all(k[1] is None for k in keys)
    for p in panels:
        for s in p["series"]:
            k = (s["match"].get("exec"), s["match"].get("setting"))
            s["color"] = EXEC_COLOR.get(k[0]) if by_exec and k[0] in EXEC_COLOR else f"C{keys.index(k) % 10}"
    inp = doc.get("inputs", {})
    title = (f"bench/latency: turnaround distribution, {inp.get('samples', '?')} samples per line, "
             f"one every {inp.get('interval_us', '?')} µs")
    return title, panels, left


def launch_modes_panels(doc):
    runs = need(doc, "runs", "the file")
    left, panels = [], []
    apps = list(dict.fromkeys(need(r, "app", f"/runs/{i}") for i, r in enumerate(runs)))
    for i, r in enumerate(runs):
        if not ok_run(r) or not number(r.get("mpps")):
            left.append({"from": f"/runs/{i}", "why": f"rc={r.get('rc')}" if r.get("rc") else "no mpps"})
    for app in apps:
        rate, over = {}, {}
        for i, r in enumerate(runs):
            if r["app"] != app or not ok_run(r) or not number(r.get("mpps")):
                continue
            ex, mode, burst = need(r, "executor", f"/runs/{i}"), need(r, "mode", f"/runs/{i}"), r.get("burst")
            if mode == "persistent" and burst is None:
                rate[(ex, "default")] = {"label": f"{ex}, persistent (default batch)", "style": "level",
                                         "color": EXEC_COLOR.get(ex), "line": "--",
                                         "match": {"executor": ex, "mode": mode, "burst": None},
                                         "points": [point(None, r["mpps"], y_from=f"/runs/{i}/mpps")]}
                continue
            name = "persistent, batch = burst" if mode == "persistent" else mode
            s = rate.setdefault((ex, name), {"label": f"{ex}, {name}", "match": {"executor": ex, "mode": mode},
                                             "color": EXEC_COLOR.get(ex), "line": MODE_LINE.get(mode, "-"),
                                             "points": []})
            s["points"].append(point(burst, r["mpps"], x_from=f"/runs/{i}/burst", y_from=f"/runs/{i}/mpps"))
            if mode != "persistent" and number(r.get("overhead_us")):
                o = over.setdefault((ex, mode), {"label": f"{ex}, {mode}", "match": {"executor": ex, "mode": mode},
                                                 "color": EXEC_COLOR.get(ex), "line": MODE_LINE.get(mode, "-"),
                                                 "points": []})
                o["points"].append(point(burst, r["overhead_us"], x_from=f"/runs/{i}/burst",
                                         y_from=f"/runs/{i}/overhead_us"))
        for d in (rate, over):
            for s in d.values():
                s["points"].sort(key=lambda p: p["x"] if p["x"] is not None else 0)
        panels.append({"title": f"{app}: rate", "match": {"app": app}, "x_label": "burst (frames per launch)",
                       "y_label": "Mpps", "x_scale": "log2", "y_scale": "log", "style": "lines",
                       "series": [rate[k] for k in sorted(rate)]})
        panels.append({"title": f"{app}: overhead per launch vs persistent, same batch", "match": {"app": app},
                       "x_label": "burst (frames per launch)", "y_label": "µs per launch", "x_scale": "log2",
                       "style": "lines", "series": [over[k] for k in sorted(over)]})
    inp = doc.get("inputs", {})
    title = (f"bench/launch_modes.py: {inp.get('size', '?')} B frames, {inp.get('queues', '?')} queue(s), "
             f"{inp.get('lanes', '?')} lane(s), {inp.get('count', '?')} frames per run")
    return title, panels, left


def peers_panels(doc):
    pairs = need(doc, "pairs", "the file")
    left, cats, tp, gn = [], [], [], []
    for i, p in enumerate(pairs):
        if not number(p.get("gnio_mpps")) or not number(p.get("testpmd_mpps")):
            left.append({"from": f"/pairs/{i}", "why": "no gnio run next to it" if p.get("gnio_app") is None
                         else "no rate"})
            continue
        cat = (f"{need(p, 'vdev', f'/pairs/{i}')}\ntestpmd {p.get('testpmd_mode')}\n"
               f"{p.get('gnio_app')} by_ref={p.get('by_ref')}")
        cats.append(cat)
        tp.append(point(cat, p["testpmd_mpps"], y_from=f"/pairs/{i}/testpmd_mpps"))
        gn.append(point(cat, p["gnio_mpps"], y_from=f"/pairs/{i}/gnio_mpps"))
    panel = {"title": f"same virtual device, cores {doc.get('cores', '?')}, {doc.get('seconds', '?')} s each",
             "x_label": "", "y_label": "Mpps", "style": "bars", "categories": cats,
             "series": [{"label": "DPDK testpmd", "match": {}, "color": "#b04a3b", "points": tp},
                        {"label": "gnio", "match": {}, "color": EXEC_COLOR["host"], "points": gn}]}
    return "bench/peers.py: DPDK testpmd and gnio", [panel], left


def settle_scales(panels):
    """A log y axis only where the values span more than 20x (ticks at 1, 2 and 5
    of each decade); a narrower range is drawn, and recorded, as linear."""
    for p in panels:
        ys = [pt["y"] for s in p["series"] for pt in s["points"] if number(pt["y"])]
        if p.get("y_scale") == "log" and not (ys and min(ys) > 0 and max(ys) / min(ys) > 20):
            p["y_scale"] = "linear"
    return panels


KINDS = {"rate": rate_panels, "capacity": capacity_panels, "latency": latency_panels,
         "launch_modes": launch_modes_panels, "peers": peers_panels}


# --- drawing ------------------------------------------------------------------

def draw_panel(ax, panel):
    from matplotlib import ticker
    series = panel["series"]
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    if panel["style"] == "bars":
        cats = panel["categories"]
        width = 0.8 / max(1, len(series))
        for k, s in enumerate(series):
            xs = [cats.index(p["x"]) - 0.4 + width * (k + 0.5) for p in s["points"]]
            ys = [p["y"] for p in s["points"]]
            bars = ax.bar(xs, ys, width * 0.95, label=s["label"], color=s.get("color") or f"C{k}")
            ax.bar_label(bars, labels=[f"{y:.3g}" for y in ys], fontsize=7, padding=1)
        ax.set_xticks(range(len(cats)), cats, fontsize=7)
        ax.margins(y=0.12)
    else:
        for k, s in enumerate(series):
            color, ls = s.get("color") or f"C{k % 10}", s.get("line", "-")
            if s.get("style") == "level":
                ax.axhline(s["points"][0]["y"], color=color, lw=1.1, ls=ls, label=s["label"])
                continue
            xs, ys = [p["x"] for p in s["points"]], [p["y"] for p in s["points"]]
            ax.plot(xs, ys, marker="o", ms=3.5, lw=1.3, color=color, ls=ls, label=s["label"])
            if panel.get("values"):
                for x, y in zip(xs, ys):
                    ax.annotate(f"{y:.3g}", (x, y), textcoords="offset points", xytext=(0, 4), ha="center",
                                fontsize=6.5, color=color)
        if panel.get("x_scale") == "log2":
            ax.set_xscale("log", base=2)
            xs = sorted({p["x"] for s in series for p in s["points"] if p["x"] is not None})
            if xs:
                ax.set_xticks(xs, [f"{x:g}" for x in xs])
                ax.xaxis.set_minor_locator(ticker.NullLocator())
        elif panel.get("x_scale") == "log":
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(plain)
        if panel.get("y_scale") == "logit":
            ax.set_yscale("logit")
            ax.set_ylim(0.3, 0.9995)
            ax.set_yticks([q for _, q in PERCENTILES], ["p50", "p90", "p99", "p99.9"])
            ax.yaxis.set_minor_locator(ticker.NullLocator())
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        elif panel.get("y_scale") == "log":
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        if panel.get("values"):
            ax.margins(y=0.08)
    ax.set_title(panel["title"], fontsize=9)
    ax.set_xlabel(panel["x_label"], fontsize=8)
    ax.set_ylabel(panel["y_label"], fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", alpha=0.3)
    if any(s["points"] for s in series):
        ax.legend(fontsize=6.5 if len(series) > 4 else 7.5, loc="best")
    else:
        ax.text(0.5, 0.5, "nothing to plot", transform=ax.transAxes, ha="center", va="center")


def render(path, title, panels, footer, plt):
    n = len(panels)
    cols = 2 if n in (2, 4) else min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        draw_panel(ax, panel)
    for ax in list(axes.flat)[n:]:
        ax.remove()
    fig.suptitle(title, fontsize=10)
    lines = [l for part in footer for l in textwrap.wrap(part, 190, break_on_hyphens=False)]
    fig.text(0.005, 0.005, "\n".join(lines), fontsize=6, family="monospace", va="bottom", ha="left", color="#333333")
    fig.tight_layout(rect=(0, (len(lines) * 8.5 + 6) / HEIGHT_PX, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    try:
        # 64 colours hold every line, bar and anti-aliased letter of these
        # charts, in a third of the bytes (Pillow comes with matplotlib).
        from PIL import Image
        buf.seek(0)
        small = io.BytesIO()
        Image.open(buf).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT,
                                                dither=Image.Dither.NONE).save(small, format="png", optimize=True)
        buf = small
    except ImportError:
        pass
    write_atomic(path, buf.getvalue())


def write_atomic(path, data):
    """Written beside the target and renamed over it: an interrupted run leaves
    the previous file, never half a file."""
    fd, tmp = tempfile.mkstemp(prefix=".plot-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path, obj):
    write_atomic(path, (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode())


def inputs_of(paths):
    """The files to read, in order (a folder gives its *.json), and the errors."""
    files, errors = [], []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
            if not found:
                errors.append(f"{p}: a folder with no .json file in it")
            files += found
        elif os.path.exists(p):
            files.append(p)
        else:
            errors.append(f"{p}: no such file or folder")
    return files, errors


def check_out_dir(out):
    """Creates --out when missing; an error message when it cannot hold the charts."""
    if os.path.exists(out) and not os.path.isdir(out):
        return f"--out {out}: not a folder"
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        return f"--out {out}: cannot create the folder: {e.strerror}"
    if not os.path.isdir(out):
        return f"--out {out}: not a folder"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".plot-check-", dir=out)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        return f"--out {out}: cannot write in the folder: {e.strerror}"
    return None


def main():
    ap = argparse.ArgumentParser(prog="bench/plot.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="JSON_OR_FOLDER",
                    help="benchmark JSON files, or folders whose *.json files are all read")
    ap.add_argument("--out", required=True, metavar="FOLDER",
                    help="where the charts (NAME.png) and their numbers (NAME.json) go; created when missing")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"draw only these kinds, comma-separated (default: all: {','.join(KINDS)})")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        ap.error(f"--kinds: unknown kind '{bad[0] if bad else args.kinds}' (known: {', '.join(KINDS)})")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"plot: matplotlib is missing ({e}); on Debian: apt-get install python3-matplotlib "
              f"(scripts/setup.sh installs it)", file=sys.stderr)
        return 1

    failed = False
    files, errors = inputs_of(args.inputs)
    err = check_out_dir(args.out)
    if err:
        errors.append(err)
    for e in errors:
        print(f"plot: {e}", file=sys.stderr)
    if err:
        return 1
    failed = bool(errors)
    written = 0
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            print(f"plot: {path}: cannot read: {e.strerror}", file=sys.stderr)
            failed = True
            continue
        except (ValueError, UnicodeDecodeError) as e:
            print(f"plot: {path}: not valid JSON: {e}", file=sys.stderr)
            failed = True
            continue
        kind, what = kind_of(doc)
        if kind is None:
            print(f"plot: {path}: skipped: no chart for this shape ({what})")
            continue
        if kind not in kinds:
            continue
        try:
            title, panels, left = KINDS[kind](doc)
            settle_scales(panels)
        except (ShapeError, KeyError, TypeError, ValueError, AttributeError) as e:
            print(f"plot: {path}: skipped: looks like {kind} output but {e}")
            continue
        if not any(s["points"] for p in panels for s in p["series"]):
            print(f"plot: {path}: skipped: {kind} output with nothing to plot ({len(left)} run(s) left out)")
            continue
        name = os.path.splitext(os.path.basename(path))[0] + "-" + kind
        png, side = os.path.join(args.out, name + ".png"), os.path.join(args.out, name + ".json")
        source = os.path.basename(path)
        footer = [machine_line(doc.get("machine")), "command: " + command_line(doc), f"from {source}; bench/plot.py"]
        sidecar = stamped("chart", {"chart": name + ".png", "kind": kind, "source": path, "title": title,
                                    "machine": footer[0], "command": command_line(doc), "width_px": WIDTH_PX,
                                    "height_px": HEIGHT_PX, "panels": panels, "left_out": left})
        try:
            render(png, title, panels, footer, plt)
            write_json(side, sidecar)
        except OSError as e:
            print(f"plot: --out {args.out}: cannot write {name}: {e.strerror or e}", file=sys.stderr)
            failed = True
            continue
        npts = sum(len(s["points"]) for p in panels for s in p["series"])
        print(f"plot: {path}: wrote {png} ({len(panels)} panel(s), {npts} points"
              f"{f', {len(left)} left out' if left else ''}) and {side}")
        written += 1
    if written == 0 and not failed:
        print("plot: nothing to plot in the inputs given", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
