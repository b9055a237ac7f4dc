#!/usr/bin/env python3
"""User-space instructions per MCP echo call in the server, toolhost against the native rmcp server.

Run by `scripts/bench.sh --callgrind-mcp [N]`. A third server is the floor: the native server with
each echo call run in toolhost's sandbox alone (a fresh store and instance, no pipeline; see the
bench's `floor.rs`), so that what any sandboxing costs is told apart from what toolhost adds. Each server runs under callgrind twice, answering
100 and 100 + N sequential `tools/call echo` requests from this client (one stdio session, or one
Streamable HTTP session on one keep-alive connection); the difference divided by N is what one call
costs the server, start-up, compilation and warm-up excluded. Instruction counts do not move with
the machine's load, where the wall-clock figures of `bench --only mcp` do; they cannot see the
kernel (wake-ups, syscalls, page faults), and valgrind counts a `rep movs`/`rep stos` byte by byte,
so large copies and fills weigh more here than they cost.

The pool of 80 instances cannot be reserved under valgrind (its address space is smaller), so
toolhost runs with `[engine] instances = 4`: the same slots, fewer of them.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

WARM = 100
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "mcp-instructions", "version": "1"},
}
CALL = {"name": "echo", "arguments": {"text": "hello, world"}}


def stdio_calls(cmd, cwd, n):
    """Starts `cmd` (an MCP server on stdio), makes `n` sequential echo calls, closes stdin."""
    p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)

    def ask(i, method, params):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                   "params": params}) + "\n").encode())
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"{cmd[0]}: stdout closed")
            message = json.loads(line)
            if message.get("id") == i:
                if "error" in message or message.get("result", {}).get("isError"):
                    raise SystemExit(f"{cmd[0]}: {message}")
                return message

    ask(0, "initialize", INIT)
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for i in range(1, n + 1):
        ask(i, "tools/call", CALL)
    p.stdin.close()
    p.wait()


def http_calls(cmd, cwd, n, port_on_stdout):
    """Starts `cmd` (an MCP server on Streamable HTTP, which prints its address), makes `n`
    sequential echo calls in one session over one connection, then stops it with SIGTERM."""
    p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE if port_on_stdout else subprocess.DEVNULL,
                         stderr=None if port_on_stdout else subprocess.PIPE)
    announced = p.stdout if port_on_stdout else p.stderr
    port = None
    while port is None:
        line = announced.readline().decode()
        if not line:
            raise SystemExit(f"{cmd[0]}: no address announced")
        # Valgrind's own lines ("==pid== ...") repeat the command line, port 0 included.
        m = None if line.startswith("==") else re.search(r"127\.0\.0\.1:([1-9]\d*)", line)
        port = m and int(m.group(1))
    # Keep reading what it says: valgrind's summary at exit would otherwise block on a full pipe.
    threading.Thread(target=announced.read, daemon=True).start()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    session = None

    def post(message):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if session:
            # After initialize a client of 2025-06-18 or later names its revision on every request.
            headers["Mcp-Session-Id"] = session
            headers["MCP-Protocol-Version"] = INIT["protocolVersion"]
        conn.request("POST", "/mcp", json.dumps(message), headers)
        response = conn.getresponse()
        body = response.read()
        if response.status >= 300 or b'"isError":true' in body or b'"error":' in body:
            raise SystemExit(f"{cmd[0]}: HTTP {response.status}: {body[:200]!r}")
        return response

    session = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": INIT}).getheader("Mcp-Session-Id")
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(1, n + 1):
        post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": CALL})
    conn.close()
    p.terminate()
    p.wait()


def instructions(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary: "):
                return int(line.split()[1])
    raise SystemExit(f"{path}: no callgrind summary")


def per_call(name, transport, argv, cwd, n, out, port_on_stdout=False):
    """Instructions per call of the server `argv` on `transport`, and the larger run's profile."""
    counts = []
    for calls in (WARM, WARM + n):
        profile = os.path.join(out, f"{name}.{transport}.{calls}")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}"] + argv
        if transport == "stdio":
            stdio_calls(cmd, cwd, calls)
        else:
            http_calls(cmd, cwd, calls, port_on_stdout)
        counts.append(instructions(profile))
    return (counts[1] - counts[0]) // n, profile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--native", required=True, help="the bench executable")
    parser.add_argument("--plugin", required=True, help="echo.wasm")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--transports", default="stdio,http")
    args = parser.parse_args()
    args.toolhost, args.native = os.path.abspath(args.toolhost), os.path.abspath(args.native)
    out = tempfile.mkdtemp(prefix="mcp-instructions-")
    ws = os.path.join(out, "ws")
    os.makedirs(os.path.join(ws, "plugins"))
    plugin = os.path.join(ws, "plugins", "echo.wasm")
    shutil.copy(args.plugin, plugin)
    # toolhost remembers a plugin file's digest only once the file has not changed for 2 s (see
    # `sandbox/digests.rs`); a start before that hashes it again, which one of the measured runs
    # would then pay for and the other not.
    time.sleep(2.5)
    with open(os.path.join(ws, "toolhost.toml"), "w") as f:
        f.write("[engine]\ninstances = 4\n")
    toolhost = [args.toolhost, "--config", "toolhost.toml", "serve"]
    # Fill the compile cache first, as every start but the first finds it. Under valgrind: its CPU
    # lacks features some hosts have (AVX-512), and the cache keys entries by the CPU's features.
    stdio_calls(["valgrind", "--tool=none", "-q"] + toolhost + ["--stdio"], ws, 1)
    for transport in args.transports.split(","):
        if transport == "stdio":
            th, th_profile = per_call("toolhost", "stdio", toolhost + ["--stdio"], ws,
                                      args.calls, out)
            nat, nat_profile = per_call("native", "stdio", [args.native, "--serve-native-stdio"],
                                        ws, args.calls, out)
            floor, floor_profile = per_call("floor", "stdio",
                                            [args.native, "--serve-floor-stdio"], ws,
                                            args.calls, out)
        elif transport == "http":
            th, th_profile = per_call("toolhost", "http", toolhost + ["--http", "127.0.0.1:0"],
                                      ws, args.calls, out)
            nat, nat_profile = per_call("native", "http",
                                        [args.native, "--serve-native-http", "127.0.0.1:0"],
                                        ws, args.calls, out, port_on_stdout=True)
            floor, floor_profile = per_call("floor", "http",
                                            [args.native, "--serve-floor-http", "127.0.0.1:0"],
                                            ws, args.calls, out, port_on_stdout=True)
        else:
            sys.exit(f"unknown transport {transport}")
        print(f"MCP {transport}: {th} instructions per echo call in toolhost, {nat} in the native "
              f"rmcp server: {th / nat:.2f}x ({args.calls} calls)")
        print(f"  the floor (the native server, each echo in a fresh sandbox and nothing else): "
              f"{floor}, {floor / nat:.2f}x native; toolhost is {th / floor:.2f}x the floor")
        print(f"  profiles: {th_profile} {nat_profile} {floor_profile}")
        print(f"target: toolhost at most 1.10x the floor in instructions per call, {transport}: "
              f"{th} against the floor's {floor}: {th / floor:.2f}x -> "
              f"{'MET' if th <= 1.10 * floor else 'NOT MET'}")


if __name__ == "__main__":
    main()
