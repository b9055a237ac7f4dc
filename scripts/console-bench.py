#!/usr/bin/env python3
"""The console's two figures (issue 38), each against a baseline measured in the same run over the
same HTTP connection kind, so that a noisy machine moves both alike:

1. The first page of the audit browser (GET /console/api/audit, no filter, then one filter that
   matches a rare tool) over a log of N records (default 1,000,000), against GET /health.
2. The time from a batch call's request to its `ended` event on the console's live stream (GET
   /console/api/events), against the same call's request to its answer: the row appears as the
   call ends, which is before its client has the answer.

Usage: console-bench.py --toolhost target/release/toolhost [--records N] [--rounds R]
"""

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_log(path: Path, n: int) -> None:
    """N end records as the daemon writes them, ten tools, one of them rare (one in 10,000)."""
    start = time.time() - n * 0.01
    with open(path, "w") as out:
        for i in range(n):
            tool = "rare_tool" if i % 10_000 == 5_000 else f"tool_{i % 9}"
            t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * 0.01)) + ".000000Z"
            ok = i % 17 != 0
            record = {
                "v": 2, "event": "end", "call_id": str(uuid.UUID(int=i)), "parent_id": None,
                "origin": "mcp", "ts_start": t, "ts_end": t, "tool": tool, "plugin": "echo",
                "plugin_digest": "sha256:" + "ab" * 32, "plugin_source": "./plugins/echo.wasm",
                "caller": {"issuer": "https://idp.example", "subject": f"user-{i % 50}"},
                "input_sha256": "cd" * 32,
                "decision": {"kind": "allowed", "by": "rule allow: echo"},
                "coercions": [], "outcome": "ok" if ok else "error",
                "error_kind": None if ok else "timeout", "duration_us": 900 + i % 300,
                "fuel_used": 7031, "peak_memory_bytes": 1114112, "output_bytes": 2,
                "truncated": False,
            }
            out.write(json.dumps(record, separators=(",", ":")) + "\n")


def start(toolhost: str, work: Path):
    err = open(work / "stderr.log", "w+")
    proc = subprocess.Popen(
        [toolhost, "serve", "--no-watch", "--http", "127.0.0.1:0",
         "--config", str(work / "toolhost.toml"), "--plugins", str(work / "plugins")],
        cwd=work, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 120
    port, link = None, None
    while time.time() < deadline and not (port and link):
        text = (work / "stderr.log").read_text()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", text)
        port = port or (m and int(m.group(1)))
        m = re.search(r"(/console/signin\?token=\w+)", text)
        link = link or (m and m.group(1))
        time.sleep(0.05)
    if not (port and link):
        proc.kill()
        raise SystemExit(f"the daemon did not start:\n{(work / 'stderr.log').read_text()}")
    return proc, port, link


def timed_get(conn, path, headers):
    t = time.perf_counter()
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    elapsed = time.perf_counter() - t
    if r.status != 200:
        raise SystemExit(f"GET {path}: {r.status} {body[:200]!r}")
    return elapsed, body


def median_ms(samples):
    return statistics.median(samples) * 1000


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--toolhost", required=True)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=21)
    a = p.parse_args()
    a.toolhost = str(Path(a.toolhost).resolve())
    work = Path(tempfile.mkdtemp(prefix="toolhost-console-bench-"))
    try:
        (work / "plugins").mkdir()
        shutil.copy(ROOT / "plugins" / "echo.wasm", work / "plugins" / "echo.wasm")
        (work / ".toolhost").mkdir()
        t = time.time()
        write_log(work / ".toolhost" / "audit.jsonl", a.records)
        size = (work / ".toolhost" / "audit.jsonl").stat().st_size
        print(f"audit log: {a.records:,} records, {size / 2**20:.0f} MiB (written in {time.time() - t:.0f} s)")
        (work / "toolhost.toml").write_text("")
        proc, port, link = start(a.toolhost, work)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", link)
            r = conn.getresponse()
            r.read()
            cookie = r.getheader("set-cookie").split(";")[0]
            h = {"Cookie": cookie}
            base, first, rare = [], [], []
            for _ in range(a.rounds):
                base.append(timed_get(conn, "/health", h)[0])
                el, body = timed_get(conn, "/console/api/audit?limit=100", h)
                assert len(json.loads(body)["records"]) == 100
                first.append(el)
                el, body = timed_get(conn, "/console/api/audit?limit=100&tool=rare_tool", h)
                rare.append(el)
            found = len(json.loads(body)["records"])
            print(f"GET /health (baseline): {median_ms(base):.2f} ms median of {a.rounds}")
            print(f"first audit page, 100 newest of {a.records:,}: {median_ms(first):.2f} ms "
                  f"= {median_ms(first) / median_ms(base):.1f}x the baseline")
            print(f"first page filtered to a tool in 1 of 10,000 records ({found} found in the scan budget): "
                  f"{median_ms(rare):.2f} ms = {median_ms(rare) / median_ms(base):.1f}x the baseline")
            live(port, h, a.rounds)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def live(port: int, headers, rounds: int) -> None:
    """Batch calls one at a time while a follower reads the live stream."""
    ended = {}
    ready = threading.Event()

    def follow():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("GET", "/console/api/events", headers=headers)
        r = c.getresponse()
        ready.set()
        event = None
        while True:
            line = r.fp.readline()
            if not line:
                return
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "ended":
                record = json.loads(line[6:])
                ended[record["call_id"]] = time.perf_counter()

    threading.Thread(target=follow, daemon=True).start()
    ready.wait(10)
    time.sleep(0.2)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": "hi"}}]})
    trips, lags = [], []
    for _ in range(rounds):
        before = set(ended)
        t = time.perf_counter()
        conn.request("POST", "/v1/tool-calls?format=anthropic", body=body,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        answered = time.perf_counter()
        trips.append(answered - t)
        deadline = time.time() + 10
        while set(ended) == before and time.time() < deadline:
            time.sleep(0.0002)
        new = set(ended) - before
        if new:
            lags.append(ended[new.pop()] - t)
    print(f"batch call, request to its answer (baseline): {median_ms(trips):.2f} ms median of {rounds}")
    print(f"batch call, request to its row's `ended` event on the live stream: {median_ms(lags):.2f} ms "
          f"= {median_ms(lags) / median_ms(trips):.2f}x the baseline (below 1: the live view has the "
          f"call's end before its client has the answer)")


if __name__ == "__main__":
    main()
