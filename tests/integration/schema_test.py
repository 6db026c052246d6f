#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Every JSON document and JSON Lines object gnio's programs write, validated
# against its schema in docs/schema by python3-jsonschema (an independent
# validator), and the `schema`/`version` each carries checked against the
# schema file's.
#
#   schema_test.py json     gnio doctor/caps/explain/backends --json, and
#                           pp, flow_count, l2fwd --json after a run that
#                           worked and one that failed
#   schema_test.py jsonl    --jsonl of pp, flow_count and l2fwd: every line
#                           valid, the line types in order, the final line
#                           equal to the --json document
#
# Exits 77 (skipped) without python3-jsonschema. The programs come from
# GNIO_TOOL_BIN, GNIO_FLOW_COUNT_BIN and GNIO_L2FWD_BIN, the captures from
# GNIO_TEST_DATA_DIR, the schemas from GNIO_SOURCE_DIR (ctest sets them).
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed: skipped (apt-get install python3-jsonschema)")
    sys.exit(77)

LIMIT_S = 60  # a guard against hangs, never a measure of speed
EXEC = "cuda" if os.environ.get("GNIO_TEST_EXEC") == "cuda" else "host"
GPU = "0" if EXEC == "cuda" else "host"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from testenv import env  # noqa: E402


SCHEMA_DIR = pathlib.Path(env("GNIO_SOURCE_DIR", "dir")) / "docs" / "schema"
DATA = env("GNIO_TEST_DATA_DIR", "dir")
STORE = {}
for p in SCHEMA_DIR.glob("*.schema.json"):
    s = json.loads(p.read_text())
    STORE[p.name] = s
    STORE[s.get("$id", p.name)] = s

failures = 0


def check(what, ok, detail=""):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures += 1


def validate(what, doc, schema_file):
    """doc against docs/schema/schema_file, and its schema/version against the file's."""
    schema = STORE[schema_file]
    resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store=STORE)
    try:
        jsonschema.validate(doc, schema, resolver=resolver, cls=jsonschema.Draft202012Validator)
        err = ""
    except jsonschema.ValidationError as e:
        err = f"{e.message} at {list(e.absolute_path)}"
    check(f"{what} valid against {schema_file}", not err, err)
    # The schema's const names the document; every document has a version.
    want = schema["properties"]["schema"].get("const") or schema["properties"]["schema"]["enum"]
    ok = doc.get("schema") == want if isinstance(want, str) else doc.get("schema") in want
    check(f"{what} carries schema {doc.get('schema')!r} and a version", isinstance(doc, dict) and ok and
          isinstance(doc.get("version"), str), f"schema {doc.get('schema')!r}, version {doc.get('version')!r}")


def run(cmd, expect_rc=(0,)):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=LIMIT_S, text=True)
    if r.returncode not in expect_rc:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def programs(tmp, capture, tx):
    """(name, schema file, command line without --json) for each program on capture."""
    return [
        ("pp", "pp.schema.json", [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--port", f"pcap:file={capture}"]),
        ("flow_count", "flow_count.schema.json",
         [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC, "--port", f"pcap:file={capture}"]),
        ("l2fwd", "l2fwd.schema.json", [env("GNIO_L2FWD_BIN"), "--gpu", GPU, "--port", f"pcap:file={capture},tx={tx}"]),
    ]


def check_json():
    tool = env("GNIO_TOOL_BIN")
    cap = os.path.join(DATA, "dns_icmp.pcap")
    # doctor exits 1 when the machine cannot run the path; its JSON is written either way.
    for what, cmd, schema, rcs in [
        ("gnio doctor --json", [tool, "doctor", "--json"], "doctor.schema.json", (0, 1)),
        ("gnio doctor --for pcap --json", [tool, "doctor", "--for", "pcap", "--json"], "doctor.schema.json", (0, 1)),
        ("gnio caps --json", [tool, "caps", "--gpu", GPU, "--port", f"pcap:file={cap}", "--json"], "caps.schema.json",
         (0,)),
        ("gnio explain --json", [tool, "explain", "--json", "bad_state"], "explain.schema.json", (0,)),
        ("gnio explain --all --json", [tool, "explain", "--all", "--json"], "explain-all.schema.json", (0,)),
        ("gnio backends --json", [tool, "backends", "--json"], "backends.schema.json", (0,)),
    ]:
        validate(what, json.loads(run(cmd, rcs).stdout), schema)
    # The validator is awake: a document without its version is refused.
    doc = json.loads(run([tool, "explain", "--json", "bad_state"]).stdout)
    del doc["version"]
    try:
        jsonschema.validate(doc, STORE["explain.schema.json"], cls=jsonschema.Draft202012Validator,
                            resolver=jsonschema.RefResolver(base_uri="", referrer=STORE["explain.schema.json"],
                                                            store=STORE))
        refused = False
    except jsonschema.ValidationError:
        refused = True
    check("a document without version is refused", refused)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        tx = os.path.join(tmp, "tx.pcap")
        for capture, rcs, kind in [(os.path.join(DATA, "http.pcap"), (0,), "a run"),
                                   (os.path.join(tmp, "missing.pcap"), (1,), "a failed run")]:
            for name, schema, cmd in programs(tmp, capture, tx):
                run(cmd + ["--stats-interval", "0", "--json", out], rcs)
                with open(out) as f:
                    doc = json.load(f)
                validate(f"{name} --json after {kind}", doc, schema)
                if rcs == (1,):
                    check(f"{name} --json after {kind} names the error", "error" in doc)
        # --write -, whose reader leaves: written and write_error.
        for name, schema, cmd in programs(tmp, os.path.join(DATA, "http.pcap") + ",loop=0", tx):
            prog = subprocess.Popen(cmd + ["--stats-interval", "0", "--write", "-", "--json", out],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            prog.stdout.read(100)
            prog.stdout.close()
            prog.wait(timeout=LIMIT_S)
            with open(out) as f:
                doc = json.load(f)
            validate(f"{name} --json after --write - lost its reader", doc, schema)
            check(f"{name} --json after --write - lost its reader has written and write_error",
                  isinstance(doc.get("written"), int) and doc.get("write_error") == "Broken pipe", str(doc)[:300])
        # The benchmarks, briefly, on the host (GNIO_BENCH_DIR: where they were built).
        bench = os.environ.get("GNIO_BENCH_DIR", "")
        if not os.path.isdir(bench):
            print("GNIO_BENCH_DIR not set: the benchmarks' JSON is not checked (a build without GNIO_BUILD_BENCH)")
        else:
            for name, args in [
                ("engine_cost", ["--port", "gen:size=64,count=100000"]),
                ("tx_timing", ["--backends", "pcap", "--frames", "50", "--interval-us", "100"]),
                ("capacity", ["--app", "flow_count", "--mem", "host", "--rings", "1", "--gpu", "host", "--frames",
                              "20000"]),
                ("latency", ["--test", "flag", "--exec", "host", "--samples", "100", "--warmup", "10", "--load",
                             "off", "--poll", "busy"]),
            ]:
                run([os.path.join(bench, name)] + args + ["--json", out])
                with open(out) as f:
                    validate(f"bench/{name} --json", json.load(f), "bench.schema.json")
        check_bench_scripts(tmp)
    return 1 if failures else 0


def check_bench_scripts(tmp):
    """The Python benchmarks' JSON, from short host runs: bench/flow_count_rate.py, ab_rate.py, launch_modes.py,
    ipfix_vs_softflowd.py (with softflowd and nfcapd), and bench/plot.py's numbers beside the charts it draws
    of the first two. multi_gpu_rate.py needs GPUs and peers.py DPDK's testpmd: not run here."""
    bench = pathlib.Path(env("GNIO_SOURCE_DIR", "dir")) / "bench"
    fc = env("GNIO_FLOW_COUNT_BIN")
    small = ["--count", "20000"]
    docs = []
    for script, args, schema in [
        ("flow_count_rate.py", ["--bin", fc, "--sizes", "64", "--queues", "1", "--executors", "host"] + small,
         "bench-rate.schema.json"),
        ("launch_modes.py", ["--flow-count-bin", fc, "--executors", "host", "--bursts", "16"] + small,
         "bench-launch_modes.schema.json"),
        ("ipfix_vs_softflowd.py", ["--flow-count", fc, "--synthetic", "0", "--captures",
                                   os.path.join(DATA, "http.pcap")], "bench-ipfix_vs_softflowd.schema.json"),
    ]:
        if script.startswith("ipfix") and not (shutil.which("softflowd") and shutil.which("nfcapd")):
            print(f"softflowd or nfcapd not found: bench/{script}'s JSON is not checked")
            continue
        out = os.path.join(tmp, script.replace(".py", ".json"))
        run([sys.executable, str(bench / script), "--json", out] + args)
        with open(out) as f:
            validate(f"bench/{script} --json", json.load(f), schema)
        docs.append(out)
    # bench/ab_rate.py with the same build on both sides: two rounds, A then B
    # in each, one row with both medians and their ratio.
    out = os.path.join(tmp, "ab_rate.json")
    run([sys.executable, str(bench / "ab_rate.py"), "--a", fc, "--b", fc, "--rounds", "2", "--json", out, "--",
         "--sizes", "64", "--queues", "1", "--executors", "host"] + small)
    with open(out) as f:
        ab = json.load(f)
    validate("bench/ab_rate.py --json", ab, "bench-ab_rate.schema.json")
    order = [(r["build"], r["round"]) for r in ab["runs"]]
    check("bench/ab_rate.py alternates the builds", order == [("a", 1), ("b", 1), ("a", 2), ("b", 2)], str(order))
    row = ab["rows"][0] if len(ab["rows"]) == 1 else {}
    check("bench/ab_rate.py gives one row with both medians and their ratio",
          isinstance(row.get("ratio_b_over_a"), float) and all(v > 0 for v in row.get("median_mpps", {}).values()),
          str(ab["rows"]))
    # The two that are not run here: their schema files against the results
    # committed in bench/results from GPU and testpmd runs, stamped as the
    # scripts now stamp them (bench/result_schema.py).
    sys.path.insert(0, str(bench))
    from result_schema import stamped  # noqa: E402
    for pattern, kind in (("*multi_gpu-*.json", "multi_gpu_rate"), ("*peers*.json", "peers")):
        for f in sorted((bench / "results").glob(pattern)):
            doc = json.loads(f.read_text())
            if kind == "multi_gpu_rate" and "rounds" not in doc:
                continue  # written before the script had rounds
            validate(f"bench/results/{f.name}", stamped(kind, doc), f"bench-{kind}.schema.json")
    plot_python = os.environ.get("GNIO_PLOT_PYTHON") or sys.executable
    if subprocess.run([plot_python, "-c", "import matplotlib"], capture_output=True).returncode != 0:
        print(f"{plot_python} has no matplotlib: bench/plot.py's JSON is not checked")
        return
    charts = os.path.join(tmp, "charts")
    run([plot_python, str(bench / "plot.py"), "--out", charts] + docs[:2])
    sides = sorted(pathlib.Path(charts).glob("*.json"))
    check("bench/plot.py drew a chart of each", len(sides) == 2, str(sides))
    for side in sides:
        validate(f"bench/plot.py's {side.name}", json.loads(side.read_text()), "bench-chart.schema.json")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "json":
        return check_json()
    if mode == "jsonl":
        return check_jsonl()
    sys.exit("usage: schema_test.py json | jsonl")


def read_lines(path_or_text, what, schema_file):
    """Every line of a --jsonl stream, each validated; the parsed objects."""
    text = path_or_text
    objs = []
    bad = 0
    schema = STORE[schema_file]
    resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store=STORE)
    want = schema["properties"]["schema"]["const"]
    for n, line in enumerate(text.splitlines()):
        try:
            o = json.loads(line)
            jsonschema.validate(o, schema, resolver=resolver, cls=jsonschema.Draft202012Validator)
            if o["schema"] != want or not isinstance(o.get("version"), str):
                raise ValueError(f"schema {o.get('schema')!r}")
            objs.append(o)
        except (ValueError, jsonschema.ValidationError) as e:
            bad += 1
            if bad <= 3:
                print(f"  line {n + 1}: {getattr(e, 'message', e)}: {line[:200]}")
    check(f"{what}: all {len(objs) + bad} lines valid against {schema_file}", bad == 0 and objs)
    return objs


def check_stream(what, objs, doc, flows_expected=None):
    types = [o["type"] for o in objs]
    check(f"{what}: the last line is the only final one", types and types[-1] == "final" and
          types.count("final") == 1, str(types[-3:]))
    # The final line's result is the --json document, less how the stream went.
    file_doc = {k: v for k, v in doc.items() if not k.startswith("jsonl_")}
    check(f"{what}: the final line's result equals the --json document", objs[-1]["result"] == file_doc,
          str(set(objs[-1]["result"]) ^ set(file_doc)))
    check(f"{what}: --json counts the lines", doc.get("jsonl_lines") == len(objs), str(doc.get("jsonl_lines")))
    if flows_expected is not None:
        n = types.count("flow")
        check(f"{what}: one flow line per flow ({flows_expected})", n == flows_expected, str(n))
    return types


def check_jsonl():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        lines = os.path.join(tmp, "out.jsonl")
        tx = os.path.join(tmp, "tx.pcap")
        # A live source for a second and a half: interval lines, then the final one.
        gen = [
            ("pp", "pp-stream.schema.json", [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU]),
            ("flow_count", "flow_count-stream.schema.json", [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC]),
            ("l2fwd", "l2fwd-stream.schema.json", [env("GNIO_L2FWD_BIN"), "--gpu", GPU]),
        ]
        for name, schema, base in gen:
            cmd = base + ["--port", "gen:size=64,flows=64", "--duration", "1.5", "--stats-interval", "0.3",
                          "--jsonl", lines, "--json", out]
            run(cmd)
            with open(out) as f:
                doc = json.load(f)
            with open(lines) as f:
                objs = read_lines(f.read(), f"{name} --jsonl FILE", schema)
            types = check_stream(f"{name} --jsonl FILE", objs, doc, 64 if name == "flow_count" else None)
            check(f"{name} --jsonl FILE: interval lines come first, one per interval", types.count("interval") >= 3 and
                  types[:types.count("interval")] == ["interval"] * types.count("interval"), str(types[:6]))
            # "-": the lines alone on stdout, the text on stderr.
            r = run(base + ["--port", f"pcap:file={os.path.join(DATA, 'http.pcap')}" + (f",tx={tx}" if name == "l2fwd"
                                                                                           else ""),
                            "--stats-interval", "0", "--jsonl", "-", "--json", out])
            with open(out) as f:
                doc = json.load(f)
            objs = read_lines(r.stdout, f"{name} --jsonl -", schema)
            check_stream(f"{name} --jsonl -", objs, doc, doc.get("flows") if name == "flow_count" else None)
            check(f"{name} --jsonl -: the text went to stderr", f"{name}:" in r.stderr, r.stderr[:200])

            # A reader that goes away after the first line ends a run that would
            # last a minute, cleanly: exit 0, the --json written and saying so.
            p = subprocess.Popen(base + ["--port", "gen:size=64", "--duration", "60", "--stats-interval", "0.1",
                                         "--jsonl", "-", "--json", out],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            first = p.stdout.readline()
            p.stdout.close()
            try:
                rc = p.wait(timeout=LIMIT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = None
            err = p.stderr.read()
            with open(out) as f:
                doc = json.load(f)
            check(f"{name} --jsonl - | (a reader that leaves): exit 0 soon, results written",
                  rc == 0 and first.startswith("{") and doc.get("jsonl_error") == "Broken pipe" and
                  doc.get("stopped_early") is True and doc.get("seconds", 99) < 30 and "error" not in doc,
                  f"rc {rc}, {err[-300:]}")
            validate(f"{name} --json after the reader left", doc, schema.replace("-stream", ""))

            # Two outputs on stdout would be mixed: refused with status 2
            # before the run, nothing written to stdout.
            port = f"pcap:file={os.path.join(DATA, 'http.pcap')}" + (f",tx={tx}" if name == "l2fwd" else "")
            for pair in (["--jsonl", "-", "--json", "/dev/stdout"], ["--write", "-", "--jsonl", "-"],
                         ["--write", "-", "--json", "/dev/stdout"]):
                r = subprocess.run(base + ["--port", port] + pair, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=LIMIT_S)
                err = r.stderr.decode(errors="replace")
                check(f"{name} {' '.join(pair)}: refused with status 2, stdout empty",
                      r.returncode == 2 and r.stdout == b"" and "both write to stdout" in err and pair[0] in err and
                      pair[2] in err, f"rc {r.returncode}: {err[-300:]}")

            # --jsonl onto the capture the port reads is refused before it is touched.
            cap = os.path.join(tmp, "in.pcap")
            shutil.copy(os.path.join(DATA, "dns_udp.pcap"), cap)
            before = open(cap, "rb").read()
            r = subprocess.run(base + ["--port", f"pcap:file={cap}" + (f",tx={tx}" if name == "l2fwd" else ""),
                                       "--jsonl", cap], capture_output=True, text=True, timeout=LIMIT_S)
            check(f"{name} --jsonl onto the port's capture: refused with status 2, the capture intact",
                  r.returncode == 2 and "same file" in r.stderr and open(cap, "rb").read() == before,
                  f"rc {r.returncode}: {r.stderr[-200:]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
