#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The outputs of pp, flow_count and l2fwd run on a GPU (the CUDA executor),
# checked where the outside tools are: the GPU machine runs the programs and
# keeps what they write, this machine checks it.
#
#   gpu_outputs.py produce DIR   (GPU machine) run the programs with --filter,
#                                --write, --json and --jsonl on bundled
#                                captures, flow_count on captures whose flows
#                                tshark lists, and pp with --metrics (one
#                                scrape); everything goes to DIR with
#                                DIR/runs.json saying what ran
#   gpu_outputs.py check DIR     (here) the --write files against tcpdump -w
#                                of the same expression (records, bytes,
#                                lengths, times), every JSON document and
#                                JSON line against docs/schema (python3-
#                                jsonschema), flow rows' first/last seen and
#                                packets against tshark, the metrics page
#                                with promtool
#
# produce takes the programs from GNIO_TOOL_BIN, GNIO_FLOW_COUNT_BIN and
# GNIO_L2FWD_BIN and the captures from GNIO_TEST_DATA_DIR; check takes the
# captures from GNIO_TEST_DATA_DIR and the schemas from GNIO_SOURCE_DIR.
# GNIO_TEST_EXEC=host produces on the host executor (to try the script).
import ipaddress
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, HERE)
from testenv import env  # noqa: E402
import pcapfile  # noqa: E402

LIMIT_S = 120  # a guard against hangs, never a measure of speed
EXEC = "host" if os.environ.get("GNIO_TEST_EXEC") == "host" else "cuda"
GPU = "host" if EXEC == "host" else "0"

# (capture, expression) for --write; each program runs each.
WRITES = [("http.pcap", "tcp port 80"), ("dns_icmp.pcap", "udp or icmp"), ("QinQpacket.pcap", "vlan"),
          ("dns_tcp.pcap", "tcp and greater 100")]
FLOW_CAPTURES = ["http.pcap", "dns_icmp.pcap", "nb6-http.pcap", "dns_tcp.pcap", "QinQpacket.pcap", "dns_udp.pcap"]
SCHEMAS = {"pp": "pp.schema.json", "flow_count": "flow_count.schema.json", "l2fwd": "l2fwd.schema.json"}
STREAM_SCHEMAS = {"pp": "pp-stream.schema.json", "flow_count": "flow_count-stream.schema.json",
                  "l2fwd": "l2fwd-stream.schema.json"}


def command(prog, capture, out, tag):
    base = ["--stats-interval", "0", "--rx-slot", "65536", "--json", os.path.join(out, tag + ".json"),
            "--jsonl", os.path.join(out, tag + ".jsonl")]
    if prog == "pp":
        return [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--port", f"pcap:file={capture}"] + base
    if prog == "flow_count":
        return [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC, "--port", f"pcap:file={capture}"] + base
    return [env("GNIO_L2FWD_BIN"), "--gpu", GPU, "--port",
            f"pcap:file={capture},tx={os.path.join(out, tag + '.tx.pcap')}"] + base


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def produce(out):
    data = env("GNIO_TEST_DATA_DIR", "dir")
    os.makedirs(out, exist_ok=True)
    runs, failures = [], 0

    def run(kind, tag, cmd, **extra):
        nonlocal failures
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S)
        runs.append({"kind": kind, "tag": tag, "cmd": cmd, "rc": r.returncode, **extra})
        ok = r.returncode == 0
        print(f"{'ok  ' if ok else 'FAIL'} {tag}: {' '.join(cmd)}" + ("" if ok else f"\n{r.stdout}{r.stderr}"))
        failures += 0 if ok else 1

    for prog in ("pp", "flow_count", "l2fwd"):
        for cap, expr in WRITES:
            tag = f"write_{prog}_{cap.split('.')[0]}"
            cmd = command(prog, os.path.join(data, cap), out, tag) + [
                "--filter", expr, "--write", os.path.join(out, tag + ".pcap")]
            run("write", tag, cmd, prog=prog, capture=cap, expr=expr)
    for cap in FLOW_CAPTURES:
        tag = f"flows_{cap.split('.')[0]}"
        run("flows", tag, command("flow_count", os.path.join(data, cap), out, tag), prog="flow_count", capture=cap)
    # One scrape of pp's metrics while it runs on a generator.
    port = free_port()
    tag = "metrics_pp"
    cmd = [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--port", "gen:mix=all,rate=100000", "--duration", "4",
           "--stats-interval", "0", "--metrics", f"127.0.0.1:{port}", "--json", os.path.join(out, tag + ".json")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text, deadline = None, time.monotonic() + 30
    while text is None and time.monotonic() < deadline and p.poll() is None:
        time.sleep(1.5)  # past the first stats, so that every family has samples
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            pass
    rest = p.communicate(timeout=LIMIT_S)[0]
    if text is not None:
        pathlib.Path(out, tag + ".txt").write_text(text)
    ok = text is not None and p.returncode == 0
    runs.append({"kind": "metrics", "tag": tag, "cmd": cmd, "rc": p.returncode, "prog": "pp"})
    print(f"{'ok  ' if ok else 'FAIL'} {tag}: {' '.join(cmd)}" + ("" if ok else f"\n{rest}"))
    failures += 0 if ok else 1
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump({"exec": EXEC, "runs": runs}, f, indent=1)
    return 1 if failures else 0


def check(out):
    import flow_times_test  # noqa: E402  tshark_flows
    try:
        import jsonschema
    except ImportError:
        print("python3-jsonschema is not installed: skipped")
        return 77
    tcpdump, tshark, promtool = shutil.which("tcpdump"), shutil.which("tshark"), shutil.which("promtool")
    if not (tcpdump and tshark and promtool):
        print("tcpdump, tshark and promtool are needed: skipped")
        return 77
    data = env("GNIO_TEST_DATA_DIR", "dir")
    schema_dir = pathlib.Path(env("GNIO_SOURCE_DIR", "dir")) / "docs" / "schema"
    store = {}
    for p in schema_dir.glob("*.schema.json"):
        s = json.loads(p.read_text())
        store[p.name] = s
        store[s.get("$id", p.name)] = s
    failures = checked = 0

    def verdict(what, ok, detail=""):
        nonlocal failures, checked
        checked += 1
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + ("" if ok or not detail else f": {detail}"))

    def valid(doc, schema_file):
        schema = store[schema_file]
        try:
            jsonschema.validate(doc, schema, resolver=jsonschema.RefResolver("", schema, store=store),
                                cls=jsonschema.Draft202012Validator)
            return ""
        except jsonschema.ValidationError as e:
            return f"{e.message} at {list(e.absolute_path)}"

    manifest = json.loads(pathlib.Path(out, "runs.json").read_text())
    print(f"outputs of the {manifest['exec']} executor")
    for r in manifest["runs"]:
        tag = r["tag"]
        if r["rc"] != 0:
            verdict(f"{tag}: the run", False, f"exited {r['rc']}")
            continue
        if r["kind"] in ("write", "flows"):
            doc = json.loads(pathlib.Path(out, tag + ".json").read_text())
            why = valid(doc, SCHEMAS[r["prog"]])
            verdict(f"{tag}: --json valid against {SCHEMAS[r['prog']]}", not why, why)
            lines = [json.loads(x) for x in pathlib.Path(out, tag + ".jsonl").read_text().splitlines()]
            bad = [valid(x, STREAM_SCHEMAS[r["prog"]]) for x in lines]
            bad = [b for b in bad if b]
            final = lines[-1] if lines else {}
            # The final line's result is the --json document, less how the stream went.
            file_doc = {k: v for k, v in doc.items() if not k.startswith("jsonl_")}
            verdict(f"{tag}: {len(lines)} --jsonl lines valid, the last the --json document",
                    not bad and final.get("type") == "final" and final.get("result") == file_doc,
                    "; ".join(bad[:3]))
        if r["kind"] == "write":
            with tempfile.TemporaryDirectory() as tmp:
                want_path = os.path.join(tmp, "want.pcap")
                subprocess.run([tcpdump, "-r", os.path.join(data, r["capture"]), "-w", want_path, r["expr"]],
                               capture_output=True, check=True, timeout=LIMIT_S)
                want = pcapfile.records(want_path)
            got = pcapfile.records(os.path.join(out, tag + ".pcap"))
            # Queues are written as the engine hands them over: order across
            # queues may differ from the capture's.
            verdict(f"{tag}: --write '{r['expr']}' holds tcpdump's {len(want)} records (bytes, lengths, times)",
                    sorted(got) == sorted(want) and len(got) > 0, f"{len(got)} records, tcpdump {len(want)}")
        if r["kind"] == "flows":
            want, _ = flow_times_test.tshark_flows(tshark, os.path.join(data, r["capture"]))
            doc = json.loads(pathlib.Path(out, tag + ".json").read_text())
            got = {}
            for row in doc["flow_rows"]:
                if row.get("tunnel", "pppoe") != "pppoe" or row["proto"] not in ("tcp", "udp"):
                    continue
                key = (row["proto"], str(ipaddress.ip_address(row["src"])), row["src_port"],
                       str(ipaddress.ip_address(row["dst"])), row["dst_port"])
                got[key] = [row.get("first_seen_ns"), row.get("last_seen_ns"), row["packets"]]
            verdict(f"{tag}: {len(got)} flows' first/last seen and packets equal tshark's",
                    bool(got) and got == want, f"{len(got)} flows, tshark {len(want)}")
        if r["kind"] == "metrics":
            text = pathlib.Path(out, tag + ".txt").read_text()
            p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
            verdict(f"{tag}: promtool check metrics on a scrape ({len(text.splitlines())} lines)",
                    p.returncode == 0, p.stdout + p.stderr)
            # The label says whether the build has CUDA; a run on the CUDA
            # executor needs it, the host executor runs either way.
            want = ('cuda="yes"',) if manifest["exec"] == "cuda" else ('cuda="yes"', 'cuda="no"')
            info = [x for x in text.splitlines() if x.startswith("gnio_build_info{")]
            verdict(f"{tag}: gnio_build_info present, with {' or '.join(want)}",
                    len(info) == 1 and any(w in info[0] for w in want), str(info))
    print(f"{checked} checks, {failures} failed")
    return 1 if failures or checked == 0 else 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("produce", "check"):
        print(__doc__ or "usage: gpu_outputs.py produce|check DIR", file=sys.stderr)
        return 2
    return produce(sys.argv[2]) if sys.argv[1] == "produce" else check(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
