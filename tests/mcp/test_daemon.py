"""The daemon around MCP: /health and /metrics, Host/Origin/token checks, the body limit, graceful
shutdown on SIGTERM, and a clean stdout on stdio."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import urllib.error
import urllib.request

import anyio
import pytest
from conftest import BINARY, connect, stdio_params

pytestmark = pytest.mark.anyio


def http(url: str, *, method: str = "GET", headers: dict | None = None, body: bytes | None = None):
    """(status, headers, body) of one plain HTTP request."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
).encode()


async def test_health_and_metrics(ws, daemons):
    d = daemons(ws)
    status, _, body = http(d.base + "/health")
    health = json.loads(body)
    assert status == 200 and health["status"] == "ok"
    assert health["tools"] > 30 and health["plugins"]["loaded"] == 4 and health["plugins"]["rejected"] == []
    assert health["running_calls"] == 0

    async with connect(ws, "http", "legacy", daemon=d) as client:
        await client.call_tool("echo", {"text": "x"})
        await client.call_tool("calc", {"op": "div", "a": 1, "b": 0})
    status, headers, body = http(d.base + "/metrics")
    text = body.decode()
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert 'toolhost_calls_total{tool="echo",outcome="ok"} 1' in text
    assert 'toolhost_call_errors_total{tool="calc",kind="tool_failed"} 1' in text
    assert "toolhost_tools " in text and 'toolhost_plugins{status="loaded"} 4' in text

    status, _, _ = http(d.base + "/nope")
    assert status == 404


async def test_refuses_foreign_hosts_and_origins(ws, daemons):
    d = daemons(ws)
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1.
    for path in ("/mcp", "/health"):
        status, _, body = http(d.base + path, method="POST" if path == "/mcp" else "GET",
                               headers={**MCP_HEADERS, "Host": "evil.example"}, body=INITIALIZE if path == "/mcp" else None)
        assert status == 403 and b"allowed-hosts" in body
    status, _, body = http(d.url, method="POST", headers={**MCP_HEADERS, "Origin": "https://evil.example"},
                           body=INITIALIZE)
    assert status == 403 and b"allowed-origins" in body
    status, headers, _ = http(d.url, method="POST", headers={**MCP_HEADERS, "Origin": "http://localhost:6274"},
                              body=INITIALIZE)
    assert status == 200 and headers.get("mcp-session-id")


async def test_configured_host_and_origin_are_allowed(ws, daemons):
    text = ws.config.read_text().replace(
        "[server]\n", '[server]\nallowed-hosts = ["tools.internal"]\nallowed-origins = ["https://app.example.com"]\n'
    )
    ws.config.write_text(text)
    d = daemons(ws)
    status, _, _ = http(d.base + "/health", headers={"Host": "tools.internal"})
    assert status == 200
    status, _, _ = http(d.url, method="POST", headers={**MCP_HEADERS, "Origin": "https://app.example.com"},
                        body=INITIALIZE)
    assert status == 200
    status, _, _ = http(d.url, method="POST", headers={**MCP_HEADERS, "Origin": "https://app.example.com:8443"},
                        body=INITIALIZE)
    assert status == 403


async def test_bearer_token_is_required_when_configured(ws, daemons):
    ws.config.write_text(ws.config.read_text().replace("[server]\n", '[server]\ntoken-env = "TOOLHOST_TEST_TOKEN"\n'))
    d = daemons(ws, env={"TOOLHOST_TEST_TOKEN": "s3cret-token"})
    status, headers, _ = http(d.base + "/metrics")
    # RFC 6750 / RFC 9728: the challenge points at the protected-resource metadata.
    assert status == 401
    assert headers.get("www-authenticate", "").startswith('Bearer resource_metadata="http://')
    status, headers, _ = http(d.base + "/metrics", headers={"Authorization": "Bearer wrong"})
    assert status == 401 and 'error="invalid_token"' in headers.get("www-authenticate", "")
    status, _, _ = http(d.base + "/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert status == 200
    # The probes answer without a token (a kubelet cannot send one), and name no plugin then.
    status, _, body = http(d.base + "/health")
    assert status == 200 and isinstance(json.loads(body)["plugins"]["rejected"], int)
    status, _, _ = http(d.base + "/ready")
    assert status == 200
    async with connect(ws, "http", "auto", daemon=d, headers={"Authorization": "Bearer s3cret-token"}) as client:
        r = await client.call_tool("echo", {"text": "authorised"})
        assert r.structured_content == {"text": "authorised"}


async def test_request_body_limit(ws, daemons):
    ws.config.write_text(ws.config.read_text().replace("[server]\n", "[server]\nmax-body-kb = 16\n"))
    d = daemons(ws)
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": "y" * 40_000}}).encode()
    status, _, _ = http(d.url, method="POST", headers=MCP_HEADERS, body=big)
    assert status == 413
    async with connect(ws, "http", "legacy", daemon=d) as client:
        r = await client.call_tool("echo", {"text": "small"})
        assert not r.is_error


async def test_sigterm_lets_running_calls_finish(ws, daemons):
    d = daemons(ws)
    results = []
    try:
        async with connect(ws, "http", "legacy", daemon=d) as client:
            # The client lists the tools before it accepts a result; do it now, while new requests
            # are still accepted.
            await client.list_tools()
            async with anyio.create_task_group() as tg:

                async def slow():
                    results.append(await client.call_tool("sleep", {"ms": 1500}))

                tg.start_soon(slow)
                await ws.wait_for_begin(lambda l: l["tool"] == "sleep")
                d.signal(signal.SIGTERM)
    except Exception:  # noqa: BLE001
        # Hanging up may fail once the daemon is gone (session DELETE, stream reconnect); the
        # answer is what matters.
        if not results:
            raise
    assert not results[0].is_error and "slept" in results[0].content[0].text
    assert await anyio.to_thread.run_sync(d.wait) == 0
    record = await ws.wait_for_audit(lambda r: r["tool"] == "sleep", timeout=1)
    assert record["outcome"] == "ok"


async def test_sigterm_cancels_calls_still_running_after_the_grace_period(ws, daemons):
    ws.write_config(grace_ms=500)
    d = daemons(ws)
    async with connect(ws, "http", "auto", daemon=d) as client:
        with anyio.move_on_after(10):
            async with anyio.create_task_group() as tg:

                async def spin():
                    try:
                        await client.call_tool("spin", {})
                    except Exception:
                        pass  # the stream may close before or after the cancelled result

                tg.start_soon(spin)
                await ws.wait_for_begin(lambda l: l["tool"] == "spin")
                started = anyio.current_time()
                d.signal(signal.SIGTERM)
                code = await anyio.to_thread.run_sync(d.wait)
                tg.cancel_scope.cancel()
    assert code == 0
    assert anyio.current_time() - started < 8, "shutdown must not wait for the plugin's own timeout"
    record = await ws.wait_for_audit(lambda r: r["tool"] == "spin", timeout=1)
    assert record["outcome"] == "cancelled"


def test_stdout_carries_only_mcp_messages(ws):
    """The hostile `print` tool writes fake JSON-RPC to its stdout; none of it may reach ours."""
    params = stdio_params(ws)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "print", "arguments": {"lines": 20}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "log_flood", "arguments": {"count": 50}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "stdin", "arguments": {}}},
    ]
    log = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: debug logs must never block the daemon
    proc = subprocess.Popen(
        [str(BINARY), *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=log, text=True,
        env={"PATH": "/usr/bin:/bin", "TOOLHOST_LOG": "debug"},
    )
    for r in requests:
        proc.stdin.write(json.dumps(r) + "\n")
    proc.stdin.flush()
    # Closing stdin cancels calls in flight (MCP's stdio shutdown): close it once all are answered.
    lines, answered = [], set()
    while answered != {1, 2, 3, 4}:
        line = proc.stdout.readline()
        assert line, f"stdout ended early: {lines}"
        lines.append(line.rstrip("\n"))
        answered |= {json.loads(line).get("id")} - {None}
    proc.stdin.close()
    rest = proc.stdout.read()
    proc.wait(timeout=60)
    log.seek(0)
    assert proc.returncode == 0, log.read()[-2000:]
    lines += rest.splitlines()
    stdout = "\n".join(lines)
    messages = [json.loads(line) for line in lines]  # every line is JSON
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert set(by_id) == {1, 2, 3, 4}, lines
    assert not by_id[2]["result"]["isError"], by_id[2]
    assert "hostile stdout line" not in stdout
    # The stdin tool sees an empty stdin, never the MCP stream.
    assert "tools/call" not in json.dumps(by_id[4]["result"]["structuredContent"])
