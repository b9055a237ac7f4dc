#!/usr/bin/env python3
"""The fleet's approval queue (issue 59): how long a question asked on daemon A takes to appear on
the live stream of daemon B's console, and how long from B's answer to the waiting call's answer on
A, each against the same question asked and answered on one daemon, in the same run, over the same
connections (HTTP on loopback), so that a noisy machine moves both alike. Median and p99.

Usage: fleet-bench.py --toolhost target/release/toolhost --state-url postgres://… [--rounds R]
"""

import argparse
import http.client
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """
[permissions]
ask = ["echo"]

[server]
state-key-env = "TOOLHOST_STATE_KEY"
approval-timeout-ms = 60000

[state]
url-env = "TOOLHOST_STATE_URL"

[console]
approvals = "console"
"""


def start(toolhost: str, work: Path, name: str, env):
    home = work / name
    home.mkdir()
    err = open(home / "stderr.log", "w+")
    proc = subprocess.Popen(
        [toolhost, "serve", "--no-watch", "--http", "127.0.0.1:0", "--config", str(work / "toolhost.toml"),
         "--plugins", str(work / "plugins"), "--audit", str(home / "audit.jsonl")],
        cwd=home, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.time() + 120
    port, link = None, None
    while time.time() < deadline and not (port and link):
        text = (home / "stderr.log").read_text()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", text)
        port = port or (m and int(m.group(1)))
        m = re.search(r"(/console/signin\?token=\w+)", text)
        link = link or (m and m.group(1))
        time.sleep(0.05)
    if not (port and link):
        proc.kill()
        raise SystemExit(f"daemon {name} did not start:\n{(home / 'stderr.log').read_text()}")
    # Ready: its plugins compiled.
    while time.time() < deadline:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/ready")
        r = c.getresponse()
        body = r.read()
        if r.status == 200 and b"loading" not in body:
            break
        time.sleep(0.1)
    return proc, port, link


def questions(port: int, cookie: str, into: "queue.Queue"):
    """Every `question` event on the console's stream of `port`, with when it arrived."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("GET", "/console/api/events", headers={"Cookie": cookie})
    r = c.getresponse()
    event = None
    while True:
        line = r.fp.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "question":
            into.put((time.perf_counter(), json.loads(line[6:])))


def rounds(ask_port, console_port, cookie, csrf, seen, n, tag):
    body = lambda i: json.dumps({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": f"{tag}-{i}"}}]})
    answer = http.client.HTTPConnection("127.0.0.1", console_port, timeout=60)
    appear, wake = [], []
    for i in range(n):
        replied = queue.Queue()

        def call():
            c = http.client.HTTPConnection("127.0.0.1", ask_port, timeout=60)
            c.request("POST", "/v1/tool-calls?format=anthropic", body=body(i),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            replied.put(time.perf_counter())

        asked = time.perf_counter()
        threading.Thread(target=call, daemon=True).start()
        while True:
            at, q = seen.get(timeout=30)
            if q.get("input", {}).get("text") == f"{tag}-{i}":
                break
        appear.append(at - asked)
        sent = time.perf_counter()
        answer.request("POST", f"/console/api/approvals/{q['id']}",
                       body=json.dumps({"answer": "approve", "input_sha256": q["input_sha256"]}),
                       headers={"Cookie": cookie, "X-CSRF-Token": csrf, "Content-Type": "application/json"})
        r = answer.getresponse()
        text = r.read()
        if r.status != 200:
            raise SystemExit(f"the answer was refused: {r.status} {text[:200]!r}")
        wake.append(replied.get(timeout=30) - sent)
    return appear, wake


def p(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] * 1000


def main() -> None:
    a = argparse.ArgumentParser()
    a.add_argument("--toolhost", required=True)
    a.add_argument("--state-url", required=True)
    a.add_argument("--rounds", type=int, default=41)
    a = a.parse_args()
    toolhost = str(Path(a.toolhost).resolve())
    work = Path(tempfile.mkdtemp(prefix="toolhost-fleet-bench-"))
    procs = []
    try:
        (work / "plugins").mkdir()
        shutil.copy(ROOT / "plugins" / "echo.wasm", work / "plugins" / "echo.wasm")
        (work / "toolhost.toml").write_text(CONFIG)
        env = dict(os.environ, TOOLHOST_STATE_URL=a.state_url,
                   TOOLHOST_STATE_KEY="fleet-bench-state-key-0123456789abcdef0123456789")
        ports = []
        links = []
        for name in ("a", "b"):
            proc, port, link = start(toolhost, work, name, env)
            procs.append(proc)
            ports.append(port)
            links.append(link)
        c = http.client.HTTPConnection("127.0.0.1", ports[1], timeout=30)
        c.request("GET", links[1])
        r = c.getresponse()
        r.read()
        cookie = r.getheader("set-cookie").split(";")[0]
        c.request("GET", "/console/api/session", headers={"Cookie": cookie})
        r = c.getresponse()
        csrf = json.loads(r.read())["csrf"]
        seen = queue.Queue()
        threading.Thread(target=questions, args=(ports[1], cookie, seen), daemon=True).start()
        time.sleep(0.5)
        # Warm both paths, then alternate so that drift on the machine touches both alike.
        rounds(ports[1], ports[1], cookie, csrf, seen, 3, "warm-local")
        rounds(ports[0], ports[1], cookie, csrf, seen, 3, "warm-fleet")
        local, fleet = ([], []), ([], [])
        for i in range(a.rounds):
            for (ask, into, tag) in ((ports[1], local, "local"), (ports[0], fleet, "fleet")):
                appear, wake = rounds(ask, ports[1], cookie, csrf, seen, 1, f"{tag}{i}")
                into[0].extend(appear)
                into[1].extend(wake)
        for (what, k) in (("question appears on the console's stream", 0), ("answer to the call's reply", 1)):
            base, other = local[k], fleet[k]
            print(f"{what}: one daemon {p(base, 0.5):.2f} ms (p99 {p(base, 0.99):.2f}); "
                  f"asked on another daemon {p(other, 0.5):.2f} ms (p99 {p(other, 0.99):.2f}) "
                  f"= {p(other, 0.5) / p(base, 0.5):.2f}x median, {a.rounds} rounds each")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
