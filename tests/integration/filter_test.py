#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# --filter against tcpdump: for a set of expressions on captures from
# tests/data and the corpus, the frames a program let through (received
# minus filtered) equal what `tcpdump -r FILE -w OUT EXPR` writes, and the
# accounting identity holds with filtered in it.
#
#   filter_test.py pp | flow_count | l2fwd    the counts, per program
#   filter_test.py bad-input                  bad expressions: exit 2, the
#                                             expression and libpcap's message
#   filter_test.py write                      --write FILE: for each program, the
#                                             frames written are those tcpdump -w
#                                             writes for the expression (and all
#                                             of them without one): same bytes,
#                                             original lengths and capture times
#   filter_test.py write-stream               --write - and --write FIFO, read by
#                                             tcpdump and tshark: the same frames;
#                                             a FIFO with no reader, a reader that
#                                             leaves early, rotation refused
#   filter_test.py record OUT.json            tcpdump's counts written down, for
#                                             a machine without tcpdump (the GPU
#                                             machine): there GNIO_FILTER_EXPECTED
#                                             names that file
#
# Exits 77 (skipped) without tcpdump or recorded counts. The programs come from GNIO_TOOL_BIN,
# GNIO_FLOW_COUNT_BIN and GNIO_L2FWD_BIN, the captures from
# GNIO_TEST_DATA_DIR and GNIO_CORPUS_DIR (ctest sets them).
import array
import errno
import fcntl
import gzip
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time

LIMIT_S = 60  # a guard against hangs, never a measure of speed
EXEC = "cuda" if os.environ.get("GNIO_TEST_EXEC") == "cuda" else "host"
GPU = "0" if EXEC == "cuda" else "host"

EXPRESSIONS = [
    "udp",
    "tcp port 80",
    "ip6",
    "vlan",
    "icmp or arp",
    "net 10.0.0.0/8",
    "udp and dst port 53",
    "tcp[tcpflags] & tcp-syn != 0",
    "greater 200",
    "not ip",
]

# Captures with what the expressions ask about: UDP/DNS and ICMP, HTTP,
# IPv6 and ARP, 802.1Q and QinQ, DHCP, VXLAN, damaged frames.
CAPTURES = [
    ("data", "dns_icmp.pcap"),
    ("data", "http.pcap"),
    ("data", "nb6-http.pcap"),
    ("data", "QinQpacket.pcap"),
    ("data", "dhcp-rfc4388.pcap"),
    ("corpus", "tcpdump/arista_ether.pcap"),
    ("corpus", "tcpdump/vxlan.pcap"),
    ("corpus", "tcpdump/malformed/nfs-attr-oobr.pcap"),
    ("corpus", "wireshark/communityid.pcap.gz"),
    ("corpus", "python3-libtrace/icmp6-sample.pcap.gz"),
]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from testenv import env  # noqa: E402
import pcapfile  # noqa: E402


def captures(tmp):
    """The captures as plain files (tcpdump does not read .gz): (name, path)."""
    data = env("GNIO_TEST_DATA_DIR", "dir")
    corpus = os.environ.get("GNIO_CORPUS_DIR") or os.path.join(data, "corpus")
    out = []
    for where, rel in CAPTURES:
        src = os.path.join(data if where == "data" else corpus, rel)
        if not os.path.isfile(src):
            sys.exit(f"capture {src} is missing ({where}; see tests/data/MANIFEST.tsv)")
        if src.endswith(".gz"):
            dst = os.path.join(tmp, os.path.basename(src)[:-3])
            with gzip.open(src, "rb") as i, open(dst, "wb") as o:
                shutil.copyfileobj(i, o)
            src = dst
        out.append((rel, src))
    return out


def tcpdump_count(tcpdump, path, expr, tmp):
    """The packets tcpdump's filter selects: written with -w and counted,
    as some decoders print a packet on several lines."""
    out = os.path.join(tmp, "tcpdump.pcap")
    subprocess.run([tcpdump, "-r", path, "-w", out, expr], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=LIMIT_S, check=True)
    return len(pcapfile.records(out))


def end_unread(prog):
    """Waits for a program whose stdout pipe nobody reads (killed after LIMIT_S, which its exit status then shows);
    returns its stderr."""
    try:
        prog.wait(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        prog.kill()
        prog.wait()
    err = prog.stderr.read()
    prog.stdout.close()
    prog.stderr.close()
    return err


def program_cmd(mode, port, tmp, out):
    """The program's command line on the device string port, its JSON to out."""
    if mode == "pp":
        return [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--stats-interval", "0", "--rx-slot", "65536",
                "--port", port, "--json", out]
    if mode == "flow_count":
        return [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC, "--stats-interval", "0", "--rx-slot", "65536",
                "--port", port, "--json", out]
    return [env("GNIO_L2FWD_BIN"), "--gpu", GPU, "--stats-interval", "0", "--rx-slot", "65536",
            "--port", f"{port},tx={os.path.join(tmp, 'tx.pcap')}", "--json", out]


def run_program(mode, path, expr, tmp, extra=None):
    out = os.path.join(tmp, "out.json")
    cmd = program_cmd(mode, f"pcap:file={path}", tmp, out)
    cmd += extra if extra is not None else ["--filter", expr]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=LIMIT_S, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    with open(out) as f:
        return json.load(f), r.stdout, cmd


def tcpdump_version(tcpdump):
    r = subprocess.run([tcpdump, "--version"], capture_output=True, text=True, timeout=LIMIT_S)
    return (r.stdout or r.stderr).splitlines()[0].strip()


def record(out_path):
    tcpdump = shutil.which("tcpdump")
    if not tcpdump:
        sys.exit("record: tcpdump not found (apt-get install tcpdump)")
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in captures(tmp):
            counts[name] = {expr: tcpdump_count(tcpdump, path, expr, tmp) for expr in EXPRESSIONS}
    with open(out_path, "w") as f:
        json.dump({"tool": tcpdump_version(tcpdump), "counts": counts}, f, indent=1)
    print(f"record: tcpdump's counts for {len(counts)} captures x {len(EXPRESSIONS)} expressions in {out_path}")
    return 0


def check_counts(mode):
    tcpdump = shutil.which("tcpdump")
    recorded = None
    if not tcpdump:
        expected = os.environ.get("GNIO_FILTER_EXPECTED", "")
        if not os.path.isfile(expected):
            print("tcpdump not found: skipped (apt-get install tcpdump; scripts/setup.sh does)")
            return 77
        with open(expected) as f:
            recorded = json.load(f)
        print(f"tcpdump not found: its counts as recorded in {expected} ({recorded['tool']})")
    failures = 0
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in captures(tmp):
            for expr in EXPRESSIONS:
                want = recorded["counts"][name][expr] if recorded else tcpdump_count(tcpdump, path, expr, tmp)
                j, text, cmd = run_program(mode, path, expr, tmp)
                received, filtered = j["received"], j["filtered"]
                matched = received - filtered
                rest = j["missed"] + j["unsteered"] + j["pending"]
                ok = matched == want and j["processed"] == matched and rest == 0 and j["unaccounted"] == 0
                if mode == "l2fwd":
                    ok = ok and j["forwarded"] == matched
                checked += 1
                print(f"{'ok  ' if ok else 'FAIL'} {mode} {name:42} {expr!r:34} tcpdump {want:4} gnio {matched:4} "
                      f"(received {received}, filtered {filtered})")
                if not ok:
                    failures += 1
                    print(f"  {' '.join(cmd)}\n{text}")
                    if "filtered" not in text:
                        print("  the accounting line does not name filtered")
    print(f"{checked - failures}/{checked} agree with tcpdump")
    return 1 if failures else 0


def check_write():
    tcpdump = shutil.which("tcpdump")
    if not tcpdump:
        print("tcpdump not found: skipped (apt-get install tcpdump; scripts/setup.sh does)")
        return 77
    failures = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in captures(tmp)[:5]:
            for expr in ("", "udp", "tcp port 80", "vlan", "not ip"):
                want_path = os.path.join(tmp, "want.pcap")
                subprocess.run([tcpdump, "-r", path, "-w", want_path] + ([expr] if expr else []),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=LIMIT_S, check=True)
                want = pcapfile.records(want_path)
                for mode in ("pp", "flow_count", "l2fwd"):
                    got_path = os.path.join(tmp, "got.pcap")
                    if os.path.exists(got_path):
                        os.unlink(got_path)
                    extra = ["--write", got_path] + (["--filter", expr] if expr else [])
                    j, text, cmd = run_program(mode, path, expr, tmp, extra)
                    got = pcapfile.records(got_path)
                    # Queues are written as the engine hands them over: order
                    # across queues may differ from the capture's.
                    ok = sorted(got) == sorted(want) and j.get("written") == len(want)
                    checked += 1
                    print(f"{'ok  ' if ok else 'FAIL'} {mode:10} --write {name:24} {expr or '(no filter)'!r:16} "
                          f"tcpdump -w {len(want):4} gnio {len(got):4}")
                    if not ok:
                        failures += 1
                        print(f"  {' '.join(cmd)}\n{text}")
        failures += check_rotation(tmp, tcpdump)
    print(f"{checked - failures}/{checked} --write files equal tcpdump's")
    return 1 if failures else 0


def check_rotation(tmp, tcpdump):
    """--write-size and --write-seconds (tcpdump's -C and -G): the files, in
    order, hold tcpdump -w's frames; each file but the last grew past the
    size (and not by more than one frame), or each spans less than the time."""
    data = env("GNIO_TEST_DATA_DIR", "dir")
    failures = 0
    for cap, flag, value in (("http.pcap", "--write-size", "0.01"), ("dns_icmp.pcap", "--write-seconds", "2"),
                             ("QinQpacket.pcap", "--write-seconds", "300")):
        path = os.path.join(data, cap)
        want_path = os.path.join(tmp, "want.pcap")
        subprocess.run([tcpdump, "-r", path, "-w", want_path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=LIMIT_S, check=True)
        want = pcapfile.records(want_path)
        base = os.path.join(tmp, "rot.pcap")
        for f in os.listdir(tmp):
            if f.startswith("rot.pcap"):
                os.unlink(os.path.join(tmp, f))
        for mode in ("pp", "flow_count", "l2fwd"):
            j, text, cmd = run_program(mode, path, "", tmp, ["--write", base, flag, value])
            files = [base] + [f"{base}{i}" for i in range(1, 10000) if os.path.exists(f"{base}{i}")]
            parts = [pcapfile.records(f) for f in files]
            got = [r for p in parts for r in p]
            ok = len(files) > 1 and sorted(got) == sorted(want)
            for p, f in zip(parts[:-1], files[:-1]):
                if flag == "--write-size":
                    size = os.path.getsize(f)
                    ok = ok and float(value) * 1e6 < size <= float(value) * 1e6 + 16 + 65535
                else:
                    ok = ok and p and max(r[0] for r in p) - p[0][0] < int(value) * 1_000_000_000
            print(f"{'ok  ' if ok else 'FAIL'} {mode:10} --write {cap} {flag} {value}: {len(files)} files, "
                  f"{len(got)} frames, tcpdump -w {len(want)}")
            if not ok:
                failures += 1
                print(f"  {' '.join(cmd)}\n{text}")
            for f in files:
                os.unlink(f)
    return failures


# How each outside reader turns a pcap stream on its stdin (or a FIFO) into
# a pcap file, nanosecond times kept.
READERS = {
    "tcpdump": lambda src, dst: [shutil.which("tcpdump"), "--time-stamp-precision=nano", "-r", src, "-w", dst],
    "tshark": lambda src, dst: [shutil.which("tshark"), "-r", src, "-F", "nsecpcap", "-w", dst],
}


def stream_run(cmd, reader, got_path):
    """cmd | reader: (exit status, text on stderr, reader's exit status)."""
    prog = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rd = subprocess.Popen(READERS[reader]("-", got_path), stdin=prog.stdout, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    prog.stdout.close()  # the reader holds the pipe's only read end
    _, err = prog.communicate(timeout=LIMIT_S)
    return prog.returncode, err.decode(errors="replace"), rd.wait(timeout=LIMIT_S)


def check_write_stream():
    """--write - and --write FIFO: tcpdump and tshark read the stream and
    write what tcpdump -w writes for the expression; a FIFO without a reader
    ends with --duration; a reader that leaves ends the run with write_error;
    rotation of a stream is refused."""
    for tool in READERS:
        if not shutil.which(tool):
            print(f"{tool} not found: skipped (apt-get install {tool}; scripts/setup.sh does)")
            return 77
    tcpdump = shutil.which("tcpdump")
    failures = checked = 0

    def verdict(ok, what, text=""):
        nonlocal failures, checked
        checked += 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures += 1
            print(text)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        got_path = os.path.join(tmp, "got.pcap")
        want_path = os.path.join(tmp, "want.pcap")
        for name, path in captures(tmp)[:3]:
            for expr in ("", "tcp port 80", "udp"):
                subprocess.run([tcpdump, "-r", path, "-w", want_path] + ([expr] if expr else []),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=LIMIT_S, check=True)
                want = pcapfile.records(want_path)
                for mode in ("pp", "flow_count", "l2fwd"):
                    for reader in READERS:
                        cmd = program_cmd(mode, f"pcap:file={path}", tmp, out) + ["--write", "-"]
                        cmd += ["--filter", expr] if expr else []
                        rc, err, rrc = stream_run(cmd, reader, got_path)
                        with open(out) as f:
                            j = json.load(f)
                        got = pcapfile.records(got_path)
                        # Text goes to stderr with --write -: stdout holds only the pcap stream.
                        ok = (rc == 0 and rrc == 0 and sorted(got) == sorted(want) and j.get("written") == len(want)
                              and "write_error" not in j and "wrote" in err)
                        verdict(ok, f"{mode:10} --write - | {reader:7} {name:16} {expr or '(no filter)'!r:14} "
                                f"tcpdump -w {len(want):3} gnio {len(got):3}", f"  {' '.join(cmd)}\n{err}")

        # A named FIFO: the program waits for its reader, then streams to it.
        path = os.path.join(env("GNIO_TEST_DATA_DIR", "dir"), "http.pcap")
        subprocess.run([tcpdump, "-r", path, "-w", want_path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=LIMIT_S, check=True)
        want = pcapfile.records(want_path)
        fifo = os.path.join(tmp, "frames.fifo")
        os.mkfifo(fifo)
        for mode in ("pp", "flow_count", "l2fwd"):
            cmd = program_cmd(mode, f"pcap:file={path}", tmp, out) + ["--write", fifo]
            prog = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            rd = subprocess.run(READERS["tshark"](fifo, got_path), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=LIMIT_S)
            text, _ = prog.communicate(timeout=LIMIT_S)
            with open(out) as f:
                j = json.load(f)
            got = pcapfile.records(got_path)
            ok = prog.returncode == 0 and rd.returncode == 0 and sorted(got) == sorted(want) and j["written"] == len(want)
            verdict(ok, f"{mode:10} --write FIFO, tshark -r FIFO: {len(got)} frames, tcpdump -w {len(want)}",
                    f"  {' '.join(cmd)}\n{text.decode(errors='replace')}")

            # No reader: --duration ends the wait, and the JSON says why.
            cmd = program_cmd(mode, f"pcap:file={path}", tmp, out) + ["--write", fifo, "--duration", "1"]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=LIMIT_S, text=True)
            with open(out) as f:
                j = json.load(f)
            # The message in its own words: the status code is error_code's.
            ok = (r.returncode == 1 and "--duration passed" in j.get("error", "") and "no reader" in j.get("error", "")
                  and "shutdown:" not in j.get("error", ""))
            verdict(ok, f"{mode:10} --write FIFO without a reader, --duration 1: exit {r.returncode}, "
                    f"error {j.get('error')!r}", f"  {' '.join(cmd)}\n{r.stdout}")

            # No reader and no --duration: Ctrl-C ends the wait. The second
            # before it lets the program reach the wait; wherever the signal
            # lands in the setup, the run stops and says it was stopped.
            cmd = program_cmd(mode, f"pcap:file={path}", tmp, out) + ["--write", fifo]
            prog = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            time.sleep(1)
            prog.send_signal(signal.SIGINT)
            text, _ = prog.communicate(timeout=LIMIT_S)
            with open(out) as f:
                j = json.load(f)
            ok = prog.returncode == 1 and j.get("error", "").startswith("stopped")
            verdict(ok, f"{mode:10} --write FIFO without a reader, SIGINT: exit {prog.returncode}, "
                    f"error {j.get('error')!r}", f"  {' '.join(cmd)}\n{text.decode(errors='replace')}")

            # A reader that leaves after the first bytes: the run ends by
            # itself (an endless source), its JSON says the write failed.
            cmd = program_cmd(mode, f"pcap:file={path},loop=0", tmp, out) + ["--write", "-"]
            prog = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            first = prog.stdout.read(100)
            prog.stdout.close()
            _, err = prog.communicate(timeout=LIMIT_S)
            err = err.decode(errors="replace")
            with open(out) as f:
                j = json.load(f)
            ok = (len(first) == 100 and prog.returncode == 1 and j.get("write_error") == "Broken pipe"
                  and j.get("stopped_early") is True and "reader went away" in err and j.get("unaccounted") == 0)
            verdict(ok, f"{mode:10} --write - read 100 bytes, then closed: exit {prog.returncode}, "
                    f"write_error {j.get('write_error')!r}", f"  {' '.join(cmd)}\n{err}")

        # A reader that holds the pipe but reads nothing: the first SIGINT
        # stops the run, which then waits for the write; a second gives the
        # write up, and the results are written.
        for mode in ("pp", "flow_count", "l2fwd"):
            cmd = program_cmd(mode, f"pcap:file={path},loop=0", tmp, out) + ["--write", "-"]
            prog = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # This script is the reader that reads nothing: it waits until the
            # pipe is full (the program is then blocked in its write, its
            # signal handlers long installed), then interrupts it twice.
            size = fcntl.fcntl(prog.stdout.fileno(), 1032)  # F_GETPIPE_SZ
            deadline = time.monotonic() + LIMIT_S
            queued = array.array("i", [0])
            while time.monotonic() < deadline and prog.poll() is None:
                fcntl.ioctl(prog.stdout.fileno(), termios.FIONREAD, queued)
                if queued[0] >= size:
                    break
                time.sleep(0.05)
            prog.send_signal(signal.SIGINT)
            time.sleep(0.5)
            prog.send_signal(signal.SIGINT)
            err = end_unread(prog)
            with open(out) as f:
                j = json.load(f)
            ok = (prog.returncode == 1 and j.get("write_error") == "Operation canceled" and j.get("unaccounted") == 0
                  and j.get("stopped_early") is True)
            verdict(ok, f"{mode:10} --write - to a reader that reads nothing, SIGINT twice: exit {prog.returncode}, "
                    f"write_error {j.get('write_error')!r}", f"  {' '.join(cmd)}\n{err.decode(errors='replace')}")

        # The same reader, and --duration instead of the signals: the run's
        # stop gives the write up once the reader took nothing for 2 s, so
        # the program ends by itself and writes its results.
        for mode in ("pp", "flow_count", "l2fwd"):
            cmd = program_cmd(mode, f"pcap:file={path},loop=0", tmp, out) + ["--write", "-", "--duration", "1"]
            prog = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            err = end_unread(prog)
            with open(out) as f:
                j = json.load(f)
            ok = (prog.returncode == 1 and j.get("write_error") == os.strerror(errno.ETIMEDOUT)
                  and j.get("unaccounted") == 0 and b"took nothing for 2000 ms" in err)
            verdict(ok, f"{mode:10} --write - to a reader that reads nothing, --duration 1: exit {prog.returncode}, "
                    f"write_error {j.get('write_error')!r}", f"  {' '.join(cmd)}\n{err.decode(errors='replace')}")

        # A terminal is no place for a pcap stream.
        for mode in ("pp", "flow_count", "l2fwd"):
            cmd = program_cmd(mode, f"pcap:file={path}", tmp, out) + ["--write", "-"]
            leader, follower = pty.openpty()
            r = subprocess.run(cmd, stdout=follower, stderr=subprocess.PIPE, timeout=LIMIT_S, text=True)
            os.close(follower)
            os.close(leader)
            ok = r.returncode == 2 and "stdout is a terminal" in r.stderr
            verdict(ok, f"{mode:10} --write - onto a terminal: exit {r.returncode}", f"  {' '.join(cmd)}\n{r.stderr}")

        # One stream cannot be rotated.
        for mode in ("pp", "flow_count", "l2fwd"):
            for target, flag in (("-", "--write-size"), (fifo, "--write-seconds")):
                cmd = program_cmd(mode, f"pcap:file={path}", tmp, out) + ["--write", target, flag, "1"]
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=LIMIT_S, text=True)
                ok = r.returncode == 2 and "one pcap stream" in r.stdout and flag in r.stdout
                verdict(ok, f"{mode:10} --write {'-' if target == '-' else 'FIFO'} {flag} 1: exit {r.returncode}",
                        f"  {' '.join(cmd)}\n{r.stdout}")
    print(f"{checked - failures}/{checked} stream checks pass")
    return 1 if failures else 0


def check_bad_input():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(env("GNIO_TEST_DATA_DIR", "dir"), "dns_icmp.pcap")
        progs = [
            ("pp", [env("GNIO_TOOL_BIN"), "pp", "--gpu", GPU, "--port", f"pcap:file={path}"]),
            ("flow_count", [env("GNIO_FLOW_COUNT_BIN"), "--exec", EXEC, "--port", f"pcap:file={path}"]),
            ("l2fwd", [env("GNIO_L2FWD_BIN"), "--gpu", GPU, "--port",
                       f"pcap:file={path},tx={os.path.join(tmp, 'tx.pcap')}"]),
        ]
        for prog, base in progs:
            for expr, words in [("udp and and", "syntax error"), ("port 99999", "port"), ("frobnicate", "")]:
                r = subprocess.run(base + ["--filter", expr], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=LIMIT_S, text=True)
                ok = r.returncode == 2 and f"'{expr}'" in r.stdout and "libpcap" in r.stdout and words in r.stdout
                print(f"{'ok  ' if ok else 'FAIL'} {prog} --filter {expr!r}: exit {r.returncode}")
                if not ok:
                    failures += 1
                    print(r.stdout)
    return 1 if failures else 0


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode in ("pp", "flow_count", "l2fwd"):
        return check_counts(mode)
    if mode == "bad-input":
        return check_bad_input()
    if mode == "write":
        return check_write()
    if mode == "write-stream":
        return check_write_stream()
    if mode == "record" and len(sys.argv) == 3:
        return record(sys.argv[2])
    sys.exit("usage: filter_test.py pp|flow_count|l2fwd|bad-input|write|write-stream|record OUT.json")


if __name__ == "__main__":
    sys.exit(main())
