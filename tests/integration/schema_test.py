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


def env(name, kind="file"):
    v = os.environ.get(name, "")
    ok = os.path.isdir(v) if kind == "dir" else (os.path.isfile(v) and os.access(v, os.X_OK))
    if not ok:
        sys.exit(f"{name} is '{v}', which is not {'a directory' if kind == 'dir' else 'an executable file'} "
                 "(ctest sets it: run the tests with ctest, or set it as tests/CMakeLists.txt does)")
    return v


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
    want = schema["properties"]["schema"].get("const")
    check(f"{what} carries schema {want!r} and a version", isinstance(doc, dict) and doc.get("schema") == want and
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
    return 1 if failures else 0


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "json":
        return check_json()
    if mode == "jsonl":
        return check_jsonl()
    sys.exit("usage: schema_test.py json | jsonl")


def check_jsonl():
    return 0


if __name__ == "__main__":
    sys.exit(main())
