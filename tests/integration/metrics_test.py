#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# --metrics of gnio pp, flow_count and l2fwd, checked by Prometheus's own
# tools (docs/monitoring.md):
#
#   metrics_test.py promtool     scrape each program while it runs; promtool
#                                check metrics finds nothing to say; counters
#                                never go down from one scrape to the next
#   metrics_test.py prometheus   a real prometheus server scrapes all three
#                                every second; its query API returns the
#                                values of each program's final JSON
#   metrics_test.py bad-input    port in use, bad addresses and ports: exit 2
#                                before the run, with a message naming them
#   metrics_test.py slow-clients clients that send their request one byte a
#                                second (and reconnect when cut off) delay
#                                neither a SIGINT or SIGTERM, nor the end of a finite run,
#                                nor the end of --metrics-linger; the JSON is
#                                complete
#   metrics_test.py request-body a POST, and a GET with a body, that stream
#                                hundreds of MiB: refused from their head
#                                alone, the program's RSS stays flat; other
#                                requests the server refuses, with their status
#   metrics_test.py busy-clients 2 slow clients and 500 idle connections:
#                                curl and urllib still scrape the right text,
#                                and the server closes the idle ones
#   metrics_test.py link-local   a link-local IPv6 address without a scope id
#                                (%iface): exit 2, the message says so
#
# The programs come from GNIO_TOOL_BIN, GNIO_FLOW_COUNT_BIN and
# GNIO_L2FWD_BIN, the captures from GNIO_TEST_DATA_DIR, prometheus and
# promtool from GNIO_PROMETHEUS_BIN and GNIO_PROMTOOL_BIN (ctest sets them all).
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

LIMIT_S = 45  # a guard against hangs, never a measure of speed
# The executor the programs run on: GNIO_TEST_EXEC=cuda (scripts/gpu-check.sh) runs them on GPU 0.
EXEC = "cuda" if os.environ.get("GNIO_TEST_EXEC") == "cuda" else "host"
GPU = "0" if EXEC == "cuda" else "host"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from testenv import env  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_for(what, fn, procs=()):
    end = time.monotonic() + LIMIT_S
    while time.monotonic() < end:
        try:
            v = fn()
            if v is not None:
                return v
        except OSError:
            pass
        for p in procs:
            if p.poll() is not None and p.returncode not in (0, None):
                raise AssertionError(f"{what}: {p.args[0]} exited with {p.returncode}:\n{p.stderr_text()}")
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {LIMIT_S} s")


class program:
    """A program started in the background; stopped (SIGINT, then SIGKILL) on exit."""
    live = []

    def __init__(self, args, tmp, name):
        self.err_path = os.path.join(tmp, name + ".err")
        self.out_path = os.path.join(tmp, name + ".out")
        self.p = subprocess.Popen(args, stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"))
        self.args = args
        program.live.append(self)

    def poll(self):
        return self.p.poll()

    @property
    def returncode(self):
        return self.p.returncode

    def stderr_text(self):
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode

    @classmethod
    def stop_all(cls):
        for p in cls.live:
            p.stop()
        cls.live = []


def parse_text(text):
    """{(name, frozenset(labels)): value} of the samples in an exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def conventions_check(text, what):
    """What promtool does not check: one HELP and TYPE per family, HELP a sentence, no _us/_ms units, a port label
    of BACKEND or BACKEND:THING (no device settings, no path), and gnio_build_info."""
    helps = re.findall(r"^# HELP (\S+) (.*)$", text, re.M)
    types = re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
    names = [n for n, _ in types]
    assert len(names) == len(set(names)), f"{what}: a family has two TYPE lines: {sorted(names)}"
    assert [n for n, _ in helps] == names, f"{what}: HELP and TYPE lines differ"
    for name, h in helps:
        assert len(h.split()) >= 4 and h.endswith("."), f"{what}: {name}'s HELP is not a sentence: {h!r}"
        assert not re.search(r"_(us|ms|ns)(_|$)", name), f"{what}: {name} is not in base units"
    for name, typ in types:
        assert name.endswith("_total") == (typ == "counter"), f"{what}: {name} is a {typ}"
    samples = parse_text(text)
    ports = {v for (_, labels) in samples for k, v in labels if k == "port"}
    for v in ports:
        assert re.fullmatch(r"[a-z_]+(:[^,=/]+)?", v), f"{what}: port label {v!r} is more than BACKEND:THING"
    info = [labels for (n, labels) in samples if n == "gnio_build_info"]
    assert len(info) == 1 and {k for k, _ in info[0]} == {"version", "program", "cuda"} \
        and dict(info[0])["cuda"] in ("yes", "no"), f"{what}: gnio_build_info {info}"


def promtool_check(promtool, text, what):
    conventions_check(text, what)
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), \
        f"{what}: promtool check metrics (status {r.returncode}):\n{r.stdout}{r.stderr}"


def programs(tmp, data):
    """The three runs, each with --metrics on a free port and a long linger (the test ends it)."""
    pcap = os.path.join(data, "http.pcap")
    runs = {
        "pp": [env("GNIO_TOOL_BIN"), "pp", "--port", "pcap:file=" + pcap,
               "--gpu", GPU, "--stats-interval", "0.2"],
        "flow_count": [env("GNIO_FLOW_COUNT_BIN"), "--port", "pcap:file=" + pcap, "--exec", EXEC, "--queues", "2",
                       "--top", "0", "--filter", "tcp"],
        "l2fwd": [env("GNIO_L2FWD_BIN"), "--port", f"pcap:file={pcap},tx={os.path.join(tmp, 'l2fwd_out.pcap')}",
                  "--gpu", GPU],
    }
    out = {}
    for name, args in runs.items():
        port = free_port()
        j = os.path.join(tmp, name + ".json")
        out[name] = (args + ["--json", j, "--metrics", f"127.0.0.1:{port}", "--metrics-linger", "60"], port, j)
    return out


def scrape_finished(port):
    text = get(f"http://127.0.0.1:{port}/metrics")
    return text if "\ngnio_run_finished 1\n" in text else None


def test_promtool(tmp):
    promtool = env("GNIO_PROMTOOL_BIN")
    data = env("GNIO_TEST_DATA_DIR", "dir")
    # A run long enough to be scraped while it runs: the generator for 3 s.
    port = free_port()
    gen = program([env("GNIO_TOOL_BIN"), "pp", "--port", "gen:mix=all,flows=64", "--gpu", GPU, "--duration", "3",
                   "--stats-interval", "0.2", "--metrics", str(port), "--metrics-linger", "60"], tmp, "pp_gen")
    texts = []
    wait_for("pp's first scrape", lambda: texts.append(get(f"http://127.0.0.1:{port}/metrics")) or True, [gen])
    # Scrapes during the run, until the final values: each one clean, no counter lower than before.
    final = None
    while final is None:
        t = get(f"http://127.0.0.1:{port}/metrics")
        texts.append(t)
        if "\ngnio_run_finished 1\n" in t:
            final = t
        elif gen.poll() is not None:
            raise AssertionError(f"pp ended before its final metrics:\n{gen.stderr_text()}")
        time.sleep(0.3)
    assert gen.stop() == 0, gen.stderr_text()
    live = [t for t in texts if "\ngnio_run_finished 0\n" in t]
    assert live, "no scrape saw the run in progress"
    counter_families = set(re.findall(r"^# TYPE (\S+) counter$", final, re.M))
    prev = {}
    for i, t in enumerate(texts):
        promtool_check(promtool, t, f"pp scrape {i}")
        now = parse_text(t)
        for k, v in now.items():
            if k[0] in counter_families and k in prev:
                assert v >= prev[k], f"{k[0]}{dict(k[1])} went down from {prev[k]} to {v} (scrape {i})"
        prev.update(now)
    assert parse_text(final)[("gnio_pp_packets_total",
                              frozenset({("port", "gen"), ("class", "udp"), ("gpu", "0")}))] > 0
    # The three programs on captures, with --metrics-linger: their final text.
    for name, (args, port, _) in programs(tmp, data).items():
        p = program(args, tmp, name)
        text = wait_for(f"{name}'s final metrics", lambda: scrape_finished(port), [p])
        promtool_check(promtool, text, name)
        assert p.stop() == 0, p.stderr_text()
        print(f"{name}: promtool check metrics: clean ({len(parse_text(text))} samples)")


def test_prometheus(tmp):
    data = env("GNIO_TEST_DATA_DIR", "dir")
    runs = programs(tmp, data)
    web = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
        for name, (_, port, _) in runs.items():
            f.write(f"  - job_name: {name}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
    prom = program([env("GNIO_PROMETHEUS_BIN"), "--config.file", cfg, "--storage.tsdb.path", os.path.join(tmp, "tsdb"),
                    "--web.listen-address", f"127.0.0.1:{web}"], tmp, "prometheus")
    wait_for("prometheus ready", lambda: get(f"http://127.0.0.1:{web}/-/ready") or None, [prom])
    procs = {name: program(args, tmp, name) for name, (args, _, _) in runs.items()}

    def query(q):
        r = json.loads(get(f"http://127.0.0.1:{web}/api/v1/query?" + urllib.parse.urlencode({"query": q})))
        assert r["status"] == "success", r
        return r["data"]["result"]

    def one(q):
        res = query(q)
        assert len(res) == 1, f"{q}: {len(res)} series: {res}"
        return int(float(res[0]["value"][1]))

    # Prometheus has the final values once it has scraped gnio_run_finished 1.
    got = {}
    for name in runs:
        wait_for(f"prometheus scraping {name}'s final values",
                 lambda: query(f'gnio_run_finished{{job="{name}"}} == 1') or None, [prom, procs[name]])
        got[name] = {}
    # Read everything the checks need, then end the lingering programs.
    pq = {r["metric"]["queue"]: r for r in query('gnio_rx_packets_total{job="pp"}')}
    kq = {r["metric"]["queue"]: r for r in query('gnio_kernel_packets_total{job="pp"}')}
    ports = {name: {r["metric"]["port"] for r in query(f'gnio_rx_frames_total{{job="{name}"}}')} for name in runs}
    vals = {
        "pp": {k: one(q) for k, q in {
            "received": 'gnio_rx_frames_total{job="pp"}',
            "packets": 'sum(gnio_pp_packets_total{job="pp"})',
            "bytes": 'sum(gnio_pp_bytes_total{job="pp"})',
            "dns_queries": 'sum(gnio_pp_dns_packets_total{job="pp",kind="query"})',
            "dns_responses": 'sum(gnio_pp_dns_packets_total{job="pp",kind="response"})',
            "udp": 'sum(gnio_pp_protocol_packets_total{job="pp",protocol="udp"})',
            "tcp": 'sum(gnio_pp_protocol_packets_total{job="pp",protocol="tcp"})',
            "http_requests": 'sum(gnio_pp_http_request_packets_total{job="pp"})',
            "filtered": 'sum(gnio_pp_filtered_packets_total{job="pp"})',
            "missed": 'sum(gnio_rx_missed_total{job="pp"})',
            "tx_frames": 'gnio_tx_packets_total{job="pp"}',
            "udp_class_packets": 'sum(gnio_pp_packets_total{job="pp",class="udp"})',
        }.items()},
        "flow_count": {k: one(q) for k, q in {
            "packets": 'gnio_flow_count_packets_total{job="flow_count"}',
            "bytes": 'gnio_flow_count_bytes_total{job="flow_count"}',
            "flows": 'gnio_flow_count_flows{job="flow_count"}',
            "received": 'gnio_rx_frames_total{job="flow_count"}',
            "taken": 'sum(gnio_kernel_packets_total{job="flow_count"})',
            "filtered": 'sum(gnio_kernel_filtered_packets_total{job="flow_count"})',
            "malformed": 'gnio_flow_count_malformed_packets_total{job="flow_count"}',
        }.items()},
        "l2fwd": {k: one(q) for k, q in {
            "forwarded": 'gnio_l2fwd_forwarded_packets_total{job="l2fwd"}',
            "tx_frames": 'gnio_tx_packets_total{job="l2fwd"}',
            "received": 'gnio_rx_frames_total{job="l2fwd"}',
        }.items()},
    }
    fq = {r["metric"]["queue"]: int(float(r["value"][1]))
          for r in query('gnio_kernel_packets_total{job="flow_count"} - gnio_kernel_filtered_packets_total')}
    for name, p in procs.items():
        assert p.stop() == 0, f"{name}: {p.stderr_text()}"
    prom.stop()

    def load(name):
        with open(runs[name][2]) as f:
            j = json.load(f)
        assert j.get("executor") == EXEC, f"{name} ran on the {j.get('executor')} executor, not {EXEC}"
        return j

    j = load("pp")
    failures = []

    def eq(what, a, b):
        if a != b:
            failures.append(f"{what}: prometheus {a}, JSON {b}")

    for name in runs:
        eq(f"{name} port label", ports[name], {"pcap:http.pcap"})
    for k in ("received", "packets", "bytes", "dns_queries", "dns_responses", "udp", "tcp", "missed", "tx_frames",
              "http_requests", "filtered"):
        eq(f"pp {k}", vals["pp"][k], j[k])
    eq("pp udp class packets", vals["pp"]["udp_class_packets"], j["per_class"]["udp"]["counters"]["packets"])
    eq("pp queues", sorted(pq), sorted(str(q["queue"]) for q in j["per_queue"]))
    for q in j["per_queue"]:
        s = pq.get(str(q["queue"]))
        if s:
            eq(f"pp queue {q['queue']} class", s["metric"]["class"], q["class"])
            eq(f"pp queue {q['queue']} delivered", int(float(s["value"][1])), q["delivered"])
            eq(f"pp queue {q['queue']} processed", int(float(kq[str(q["queue"])]["value"][1])), q["processed"])
    if j["dns_queries"] == 0 or j["packets"] == 0:
        failures.append(f"pp's capture counted no DNS queries: {j['packets']} packets, {j['dns_queries']} queries")
    f = load("flow_count")
    for k in ("packets", "bytes", "flows", "received", "filtered", "malformed"):
        eq(f"flow_count {k}", vals["flow_count"][k], f[k])
    if f["filtered"] == 0:
        failures.append("flow_count's --filter tcp refused no frame of the capture")
    eq("flow_count taken", vals["flow_count"]["taken"], sum(q["processed"] + q["filtered"] for q in f["per_queue"]))
    eq("flow_count per queue", fq, {str(q["queue"]): q["processed"] for q in f["per_queue"]})
    lj = load("l2fwd")
    for k in ("forwarded", "tx_frames", "received"):
        eq(f"l2fwd {k}", vals["l2fwd"][k], lj[k])
    assert not failures, "\n".join(failures)
    print(f"prometheus: pp {j['packets']} packets ({j['dns_queries']} DNS queries) over {len(pq)} queues, "
          f"flow_count {f['packets']} packets in {f['flows']} flows, l2fwd {lj['forwarded']} forwarded: "
          "all equal to the JSON")


def short_runs(tmp):
    """The three programs on a small bundled capture, without --metrics: for option checks."""
    data = env("GNIO_TEST_DATA_DIR", "dir")
    pcap = "pcap:file=" + os.path.join(data, "dns_udp.pcap")
    return {
        "pp": [env("GNIO_TOOL_BIN"), "pp", "--port", pcap, "--gpu", GPU],
        "flow_count": [env("GNIO_FLOW_COUNT_BIN"), "--port", pcap, "--exec", EXEC],
        "l2fwd": [env("GNIO_L2FWD_BIN"), "--port", pcap + ",tx=" + os.path.join(tmp, "o.pcap"), "--gpu", GPU],
    }


def test_bad_input(tmp):
    cmds = short_runs(tmp)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [
            (f"127.0.0.1:{port}", f"--metrics 127.0.0.1:{port}: address in use"),
            (str(port), f"--metrics 127.0.0.1:{port}: address in use"),
            ("nosuchhost.invalid:9464", "--metrics nosuchhost.invalid:9464: cannot resolve address 'nosuchhost.invalid'"),
            ("192.0.2.1:9464", "--metrics 192.0.2.1:9464: address not available on this host"),
            ("70000", "--metrics 70000: port 70000 is outside 1..65535"),
            (":0", "--metrics :0: port 0 is outside 1..65535"),
            ("127.0.0.1:http", "--metrics 127.0.0.1:http: port 'http' is not a number"),
            ("::1:9464", "--metrics ::1:9464: an IPv6 address needs brackets"),
            ("127.0.0.1:", "--metrics 127.0.0.1:: no port after the address"),
        ]
        failures = []
        for name, cmd in cmds.items():
            for value, message in cases:
                r = subprocess.run(cmd + ["--metrics", value], capture_output=True, text=True, timeout=LIMIT_S)
                if r.returncode != 2 or message not in r.stderr or "received" in r.stdout:
                    failures.append(f"{name} --metrics {value}: status {r.returncode} (want 2, before the run), "
                                    f"stderr {r.stderr!r} (want {message!r})")
    assert not failures, "\n".join(failures)
    print(f"bad input: {len(cases)} cases for each of {', '.join(cmds)}: exit 2 with the message")


# ---------------------------------------------------------------------------
# Clients that misbehave (docs/monitoring.md, "What the server accepts")
# ---------------------------------------------------------------------------

HOLD_S = 60  # how long a slow client would hold a server that waits for it
EXIT_S = 10  # a guard against hangs, never a measure of speed: the programs exit at once


def slow_client(port, stop):
    """A thread that sends a request head one byte a second, for HOLD_S or until stop is set; when the server
    cuts it off, it connects again, so that no deadline of the server's ends it before then."""
    def body():
        end = time.monotonic() + HOLD_S
        while not stop.is_set() and time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(b"GET /metrics HTTP/1.1\r\n")
                    while not stop.is_set() and time.monotonic() < end:
                        s.sendall(b"X")
                        stop.wait(1)
            except OSError:
                stop.wait(0.2)  # cut off (what the server should do) or not listening (any more)
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t


def live_runs(tmp, tag, extra):
    """The three programs on the generator at a low rate, each with --metrics on a free port and extra options."""
    gen = "gen:rate=20kpps,flows=64"
    runs = {
        "pp": [env("GNIO_TOOL_BIN"), "pp", "--port", gen, "--gpu", GPU, "--stats-interval", "0"],
        "flow_count": [env("GNIO_FLOW_COUNT_BIN"), "--port", gen, "--exec", EXEC, "--top", "0"],
        "l2fwd": [env("GNIO_L2FWD_BIN"), "--port", gen, "--gpu", GPU, "--stats-interval", "0"],
    }
    out = {}
    for name, args in runs.items():
        port = free_port()
        j = os.path.join(tmp, f"{name}_{tag}.json")
        p = program(args + ["--json", j, "--metrics", f"127.0.0.1:{port}"] + extra, tmp, f"{name}_{tag}")
        out[name] = (p, port, j)
    return out


def server_start(port):
    """When the program's metrics server started (gnio_run_elapsed_seconds counts from then), on our clock: the
    reference for how late a program exits, which leaves out how long it took to be loaded."""
    t = time.monotonic()
    text = get(f"http://127.0.0.1:{port}/metrics")
    return t - parse_text(text)[("gnio_run_elapsed_seconds", frozenset())]


def check_exit(name, p, since, bound_s, what, j, failures):
    """p exits within bound_s of since (a hang guard) with status 0 and a complete JSON."""
    try:
        p.p.wait(max(0.1, since + bound_s - time.monotonic()))
    except subprocess.TimeoutExpired:
        failures.append(f"{name}: still running {bound_s} s after {what} (slow clients hold it)")
        p.p.kill()
        p.p.wait()
        return None
    took = time.monotonic() - since
    if p.returncode != 0:
        failures.append(f"{name}: status {p.returncode} after {what}:\n{p.stderr_text()}")
        return took
    try:
        with open(j) as f:
            r = json.load(f)
        if "received" not in r or "error" in r:
            failures.append(f"{name}: the JSON after {what} is not a complete result: {sorted(r)}")
    except (OSError, ValueError) as e:
        failures.append(f"{name}: no complete JSON after {what}: {e}")
    return took


def test_slow_clients(tmp):
    failures = []
    stop = threading.Event()
    try:
        # 1. A signal in the middle of a long run, while 2 slow clients send their heads: SIGINT, and SIGTERM for
        # flow_count (the programs stop the same way on both).
        runs = live_runs(tmp, "sigint", ["--duration", "600"])
        for name, (p, port, _) in runs.items():
            wait_for(f"{name}'s first scrape", lambda: get(f"http://127.0.0.1:{port}/metrics"), [p])
        for _, port, _ in runs.values():
            slow_client(port, stop), slow_client(port, stop)
        time.sleep(1.5)  # inside the request-head deadline of the server: the clients are mid-request
        sig = {name: signal.SIGTERM if name == "flow_count" else signal.SIGINT for name in runs}
        for name, (p, _, _) in runs.items():
            p.p.send_signal(sig[name])
        t = time.monotonic()
        for name, (p, _, j) in runs.items():
            took = check_exit(name, p, t, EXIT_S, sig[name].name, j, failures)
            print(f"{name}: {sig[name].name} with 2 slow clients: exit after "
                  f"{took if took is None else round(took, 2)} s")
        stop.set()
        assert not failures, "\n".join(failures)

        # 2. The end of a finite run (--duration 2), slow clients connected from the start.
        stop = threading.Event()
        runs = live_runs(tmp, "finite", ["--duration", "2"])
        t0 = {}
        for name, (p, port, _) in runs.items():
            t0[name] = wait_for(f"{name}'s first scrape", lambda: server_start(port), [p])
            slow_client(port, stop), slow_client(port, stop)
        for name, (p, _, j) in runs.items():
            took = check_exit(name, p, t0[name] + 2, EXIT_S, "the end of a 2 s run", j, failures)
            print(f"{name}: 2 s run with 2 slow clients: exit {took if took is None else round(took, 2)} s after 2 s")
        stop.set()
        assert not failures, "\n".join(failures)

        # 3. --metrics-linger 3: the final values are served to a scrape while slow clients hold connections,
        # and the program exits when the 3 s are over.
        stop = threading.Event()
        runs = live_runs(tmp, "linger", ["--duration", "1", "--metrics-linger", "3"])
        t0 = {}
        for name, (p, port, _) in runs.items():
            t0[name] = wait_for(f"{name}'s first scrape", lambda: server_start(port), [p])
            slow_client(port, stop), slow_client(port, stop)
        for name, (p, port, _) in runs.items():
            try:
                wait_for(f"{name}'s final values with slow clients", lambda: scrape_finished(port), [p])
            except AssertionError as e:
                failures.append(str(e))
        for name, (p, _, j) in runs.items():
            took = check_exit(name, p, t0[name] + 4, EXIT_S, "1 s of run and 3 s of --metrics-linger", j, failures)
            print(f"{name}: --metrics-linger 3 with 2 slow clients: exit {took if took is None else round(took, 2)} s "
                  "after the linger")
    finally:
        stop.set()
    assert not failures, "\n".join(failures)


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


def raw_request(port, data, timeout=5):
    """Sends data as is and returns everything the server answers before it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except OSError:
            pass  # a reset after the answer: the server closed with our bytes unread
        return out


def status_of(answer):
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", answer)
    return int(m.group(1)) if m else None


def test_request_body(tmp):
    data = env("GNIO_TEST_DATA_DIR", "dir")
    args, port, _ = programs(tmp, data)["pp"]
    p = program(args, tmp, "pp")
    wait_for("pp's final metrics", lambda: scrape_finished(port), [p])
    failures = []
    stream_mib = 256
    chunk = b"x" * (1 << 20)
    heads = {
        "POST with Content-Length 4 GiB": (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4294967296\r\n\r\n", 405),
        "GET with Content-Length 4 GiB": (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4294967296\r\n\r\n", 413),
        "GET with a chunked body": (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 413),
    }
    for what, (head, want) in heads.items():
        before = vm_rss_kb(p.p.pid)
        peak, sent = before, 0
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(head)
            try:
                for i in range(stream_mib):
                    s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n" if b"chunked" in head else chunk)
                    sent += 1
                    if i % 8 == 0:
                        peak = max(peak, vm_rss_kb(p.p.pid))
            except OSError:
                pass  # the server closed: it reads no body
            peak = max(peak, vm_rss_kb(p.p.pid))
            answer = b""
            try:
                while c := s.recv(65536):
                    answer += c
            except OSError:
                pass
        grew_mb = (peak - before) / 1024
        print(f"{what}: status {status_of(answer)} after {sent} MiB of body sent; RSS {before} kB, "
              f"peak {peak} kB (+{grew_mb:.1f} MB)")
        if status_of(answer) != want:
            failures.append(f"{what}: answer {answer[:80]!r}, want status {want}")
        if grew_mb > 4:
            failures.append(f"{what}: pp's RSS grew by {grew_mb:.1f} MB while {sent} MiB of body streamed")
        assert not failures, "\n".join(failures)
    # What else is refused, and how: the head alone decides, and the server closes.
    big = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Filler: " + b"a" * 9000 + b"\r\n\r\n"
    cases = [
        (b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 405, b"Allow: GET, HEAD"),
        (b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404, None),
        (b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n", 505, None),
        (b"garbage\r\n\r\n", 400, None),
        (b"GET /metrics HTTP/1.1\r\nHost\x00: x\r\n\r\n", 400, None),
        (big, 431, None),
        (b"GET /" + b"m" * 9000 + b" HTTP/1.1\r\n\r\n", 414, None),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 200, b"gnio_run_finished 1"),
        (b"GET /metrics?x=1 HTTP/1.0\r\n\r\n", 200, b"Connection: close"),
        (b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, b"Content-Length: "),
    ]
    for req, want, has in cases:
        a = raw_request(port, req)
        if status_of(a) != want or (has and has not in a):
            failures.append(f"{req[:40]!r}...: answer {a[:200]!r}, want status {want}" + (f" with {has!r}" if has else ""))
    head = raw_request(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    if not head.endswith(b"\r\n\r\n"):
        failures.append(f"HEAD: a body came with the head: {head[-80:]!r}")
    text = get(f"http://127.0.0.1:{port}/metrics")
    if "\ngnio_run_finished 1\n" not in text:
        failures.append("a scrape after the refusals did not get the final values")
    assert p.stop() == 0, p.stderr_text()
    assert not failures, "\n".join(failures)
    print(f"request bodies refused from the head, {len(cases)} other requests answered as they should")


def test_busy_clients(tmp):
    data = env("GNIO_TEST_DATA_DIR", "dir")
    args, port, _ = programs(tmp, data)["pp"]
    p = program(args, tmp, "pp")
    wait_for("pp's final metrics", lambda: scrape_finished(port), [p])
    stop = threading.Event()
    idle = []
    failures = []
    try:
        slow_client(port, stop), slow_client(port, stop)
        time.sleep(1)
        for _ in range(500):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        # A real client's scrape, while they hold their connections.
        r = subprocess.run(["curl", "-sS", "--max-time", str(EXIT_S), "-o", "-", "-w", "\n%{http_code}",
                            f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True, timeout=LIMIT_S)
        body, _, code = r.stdout.rpartition("\n")
        if r.returncode != 0 or code != "200" or "\ngnio_run_finished 1\n" not in body \
                or 'program="pp"' not in body:
            failures.append(f"curl with 2 slow clients and 500 idle connections: status {r.returncode}, "
                            f"HTTP {code}: {r.stderr.strip()} {body[:200]!r}")
        else:
            promtool_check(env("GNIO_PROMTOOL_BIN"), body, "curl's scrape")
        try:
            text = get(f"http://127.0.0.1:{port}/metrics", timeout=EXIT_S)
            if "\ngnio_run_finished 1\n" not in text:
                failures.append("urllib's scrape: not the final values")
        except OSError as e:
            failures.append(f"urllib with 2 slow clients and 500 idle connections: {e}")
        # The server bounds how long a connection may take to send its request: each idle one is closed.
        end = time.monotonic() + EXIT_S
        open_ = list(idle)
        while open_ and time.monotonic() < end:
            for s in list(open_):
                s.setblocking(False)
                try:
                    if s.recv(4096) == b"":
                        open_.remove(s)
                except BlockingIOError:
                    pass
                except OSError:
                    open_.remove(s)
            time.sleep(0.2)
        if open_:
            failures.append(f"{len(open_)} of 500 idle connections still open after {EXIT_S} s")
        print(f"busy clients: curl got HTTP {code}, urllib too; {500 - len(open_)} of 500 idle connections closed "
              "by the server")
    finally:
        stop.set()
        for s in idle:
            s.close()
    assert p.stop() == 0, p.stderr_text()
    assert not failures, "\n".join(failures)


def test_link_local(tmp):
    cmds = short_runs(tmp)
    port = free_port()
    cases = [
        (f"[fe80::1]:{port}", f"--metrics [fe80::1]:{port}: fe80::1 is a link-local IPv6 address: it needs a scope id"),
        (f"[fe80::1%nosuchif0]:{port}", "no network interface 'nosuchif0'"),
    ]
    failures = []
    for name, cmd in cmds.items():
        for value, message in cases:
            r = subprocess.run(cmd + ["--metrics", value], capture_output=True, text=True, timeout=LIMIT_S)
            if r.returncode != 2 or message not in r.stderr or "%IFACE" not in r.stderr or "received" in r.stdout:
                failures.append(f"{name} --metrics {value}: status {r.returncode} (want 2, before the run), "
                                f"stderr {r.stderr!r} (want {message!r} and the form [ADDR%IFACE]:PORT)")
    assert not failures, "\n".join(failures)
    print(f"link-local: {len(cases)} cases for each of {', '.join(cmds)}: exit 2, the message asks for %IFACE")


def main():
    tests = {"promtool": test_promtool, "prometheus": test_prometheus, "bad-input": test_bad_input,
             "slow-clients": test_slow_clients, "request-body": test_request_body, "busy-clients": test_busy_clients,
             "link-local": test_link_local}
    if len(sys.argv) != 2 or sys.argv[1] not in tests:
        print(f"usage: metrics_test.py {'|'.join(tests)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix=f"gnio_test_{os.getpid()}_") as tmp:
        try:
            tests[sys.argv[1]](tmp)
        except AssertionError as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
        finally:
            program.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
