#!/usr/bin/env python3
"""Writes host/hot-code.txt: the functions a daemon runs on its everyday path, for the linker to
place side by side (see host/build.rs).

Run by `scripts/hot-code.sh`, on a release binary built without that layout
(`TOOLHOST_HOT_CODE=off`: callgrind names code outside `.text` as an unknown object). It runs under
callgrind through a start, `initialize`, `tools/list`, echo and math calls (sequential, then
concurrent), concurrent calls that wait in a host call, and a stop, over stdio; then a start, echo
calls and a stop over Streamable HTTP. Each function it executed is named by its section's name
with the per-build hash left out (`..17h<hash>E` of Rust's legacy mangling, a `.llvm.N` suffix), so
that the list matches the same code in any profile and feature set; a generic function's name then
covers all its instances. Functions that ran over stdio come first, hottest first, then those only
HTTP ran; the linker keeps the compiler's order among them.
"""

import argparse
import bisect
import collections
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mcp", os.path.join(HERE, "mcp-instructions.py"))
mcp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mcp)

HASH = re.compile(r"17h[0-9a-f]{16}E.*$")
HEADER = """\
# Functions toolhost runs on its everyday path (start, initialize, tools/list, calls, stop; stdio,
# then HTTP), one per line, as the sections the compiler names `.text.<symbol>`, with the per-build
# hash left out (a trailing `17h` stands for `17h<hash>E`). host/build.rs makes a linker script of
# them that places these functions side by side, so that a daemon maps a few MiB of its code instead
# of touching 64 KiB windows across all of it (BENCHMARKS-history.md, "Code layout").
# Written by scripts/hot-code.sh from a release build; a stale line only matches nothing.
"""


def stdio_session(cmd, cwd, calls, sleeps):
    """initialize, tools/list, `calls` echo calls, math calls, 8 concurrent ones, concurrent calls
    that wait in a WASI host call (when `sleeps`), then EOF."""
    p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    answers, lock, ids = {}, threading.Condition(), iter(range(1, 1 << 30))

    def read():
        for line in p.stdout:
            message = json.loads(line)
            with lock:
                answers[message.get("id")] = message
                lock.notify_all()

    threading.Thread(target=read, daemon=True).start()

    def send(method, params):
        i = next(ids)
        with lock:
            p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                           "params": params}) + "\n").encode())
            p.stdin.flush()
        return i

    def wait(i):
        with lock:
            if not lock.wait_for(lambda: i in answers, timeout=300):
                raise SystemExit(f"{cmd[0]}: no answer to request {i}")
            message = answers.pop(i)
        if "error" in message or message.get("result", {}).get("isError"):
            raise SystemExit(f"{cmd[0]}: {message}")

    wait(send("initialize", mcp.INIT))
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    wait(send("tools/list", {}))
    for _ in range(calls):
        wait(send("tools/call", mcp.CALL))
    for a in range(10):
        wait(send("tools/call", {"name": "calc", "arguments": {"op": "add", "a": a, "b": 2}}))
    for i in [send("tools/call", mcp.CALL) for _ in range(8)]:
        wait(i)
    if sleeps:
        for i in [send("tools/call", {"name": "sleep", "arguments": {"ms": 200}})
                  for _ in range(8)]:
            wait(i)
    p.stdin.close()
    p.wait()


def executed(profile, binary):
    """Instructions executed at each address of `binary`'s code."""
    objects, ob, address = {}, None, 0
    costs = collections.Counter()
    call_line = False
    with open(profile) as f:
        for line in f:
            c = line[0]
            if c in "0+-*":
                token = line.split(" ", 1)[0]
                if token.startswith("0x"):
                    address = int(token, 16)
                elif c == "+":
                    address += int(token[1:])
                elif c == "-":
                    address -= int(token[1:])
                if call_line:  # the inclusive cost of a call made here
                    call_line = False
                elif ob == binary:
                    costs[address] += int(line.split()[-1])
                continue
            m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
            if m:
                if m.group(3):
                    objects[m.group(2)] = m.group(3)
                if m.group(1) == "ob":
                    ob = objects.get(m.group(2))
            elif line.startswith("calls="):
                call_line = True
    return costs


def functions(binary):
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            symbols.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    symbols.sort()
    return symbols


def key(symbol):
    if HASH.search(symbol):
        return HASH.sub("17h", symbol)
    return re.sub(r"\.llvm\.\d+$", "", symbol)


def keys_by_cost(costs, symbols):
    starts = [s[0] for s in symbols]
    by_key = collections.Counter()
    for address, n in costs.items():
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < symbols[i][0] + symbols[i][1]:
            by_key[key(symbols[i][2])] += n
    return [k for k, _ in by_key.most_common()]


def profile_of(run, binary, out, name):
    """Runs `run(cmd)` under callgrind twice (the first fills the compile cache for valgrind's CPU
    features) and returns the second run's profile."""
    profile = os.path.join(out, name)
    for _ in range(2):
        run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
             f"--callgrind-out-file={profile}", binary])
    return profile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolhost", required=True, help="the release binary")
    parser.add_argument("--plugins", required=True, help="folder with echo.wasm and math.wasm")
    parser.add_argument("--waiting", help="a plugin whose `sleep` tool waits in a WASI host call "
                        "(the hostile test fixture: no example plugin waits without a network)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    binary = os.path.abspath(args.toolhost)
    work = tempfile.mkdtemp(prefix="hot-code-")
    ws = os.path.join(work, "ws")
    os.makedirs(os.path.join(ws, "plugins"))
    for name in ("echo", "math"):
        shutil.copy(os.path.join(args.plugins, f"{name}.wasm"), os.path.join(ws, "plugins"))
    if args.waiting:
        shutil.copy(args.waiting, os.path.join(ws, "plugins", "waiting.wasm"))
    time.sleep(2.5)  # see mcp-instructions.py: digests are remembered for files 2 s old
    with open(os.path.join(ws, "toolhost.toml"), "w") as f:
        f.write("[engine]\ninstances = 16\n")
    config = ["--config", "toolhost.toml", "serve"]
    stdio = profile_of(lambda cmd: stdio_session(cmd + config + ["--stdio"], ws, args.calls,
                                                 bool(args.waiting)), binary, work, "stdio")
    http = profile_of(lambda cmd: mcp.http_calls(cmd + config + ["--http", "127.0.0.1:0"], ws,
                                                 args.calls, False), binary, work, "http")
    symbols = functions(binary)
    keys = keys_by_cost(executed(stdio, binary), symbols)
    seen = set(keys)
    keys += [k for k in keys_by_cost(executed(http, binary), symbols) if k not in seen]
    with open(args.out, "w") as f:
        f.write(HEADER)
        f.write("\n".join(keys) + "\n")
    print(f"hot-code: {len(seen)} functions over stdio, {len(keys) - len(seen)} more over HTTP "
          f"-> {args.out}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
