"""An older official MCP client (Python `mcp` 1.x, protocol 2025-06-18) against the real daemon, over
stdio and Streamable HTTP: handshake, list, call, invalid arguments, unknown tool, progress,
cancellation, session close. Run by tests/mcp/clients/run.sh in its own venv (the 2.x suite in
tests/mcp has another); exits non-zero on the first failure.

    python old_python.py TOOLHOST_BIN WORKDIR
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

# tests/mcp/http_daemon.py, shared with the 2.x suite (standard library only).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from http_daemon import HttpDaemon  # noqa: E402

TIMEOUT = 60


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def exercise(session: ClientSession, workdir: Path, label: str) -> None:
    init = await session.initialize()
    assert init.serverInfo.name == "toolhost", init
    listed = await session.list_tools()
    names = {tool.name for tool in listed.tools}
    assert {"echo", "sleep", "progress_flood"} <= names, names

    r = await session.call_tool("echo", {"text": "hello"})
    assert not r.isError and r.content[0].text == "hello", r

    r = await session.call_tool("echo", {"text": 5})
    assert r.isError and "text" in text_of(r), r

    try:
        await session.call_tool("no_such_tool", {})
    except Exception as e:  # McpError: -32602 with the available tools
        assert "echo" in str(e), e
    else:
        raise AssertionError("unknown tool answered without an error")

    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    r = await session.call_tool("progress_flood", {"count": 50}, progress_callback=on_progress)
    assert not r.isError and seen and seen == sorted(seen), (r, seen)

    # Cancellation: this client sends no notifications/cancelled by itself; send one as newer clients do.
    audit = workdir / ".toolhost" / "audit.jsonl"
    request_id = session._request_id  # the id the next request gets
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.call_tool, "sleep", {"ms": 20000})

        def lines() -> list[dict]:
            return [json.loads(l) for l in audit.read_text().splitlines() if l.strip()] if audit.exists() else []

        # Cancel once the call runs: its begin line is written as its plugin starts.
        with anyio.fail_after(20):
            while not any(r.get("event") == "begin" and r.get("tool") == "sleep" for r in lines()):
                await anyio.sleep(0.02)
        params = types.CancelledNotificationParams(requestId=request_id, reason="the user gave up")
        await session.send_notification(
            types.ClientNotification(types.CancelledNotification(method="notifications/cancelled", params=params))
        )
        with anyio.fail_after(10):
            while not any(r.get("tool") == "sleep" and r.get("outcome") == "cancelled" for r in lines()):
                await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    print(f"python mcp 1.12 {label}: handshake, list, call, invalid arguments, unknown tool, progress, cancellation: ok")


def workspace(workdir: Path) -> None:
    (workdir / "toolhost.toml").write_text(
        '[permissions]\nmode = "bypass"\n[plugins.hostile.limits]\ntimeout-ms = 30000\n'
    )


async def over_stdio(binary: str, workdir: Path) -> None:
    params = StdioServerParameters(command=binary, args=["serve", "--stdio", "--no-watch"], cwd=str(workdir))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=TIMEOUT)) as session:
            await exercise(session, workdir, "stdio")


async def over_http(binary: str, workdir: Path) -> None:
    daemon = HttpDaemon([binary, "serve", "--http", "127.0.0.1:0", "--no-watch"], cwd=workdir)
    try:
        url = daemon.url
        async with streamablehttp_client(url) as (read, write, get_session_id):
            async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=TIMEOUT)) as session:
                await exercise(session, workdir, "http")
                session_id = get_session_id()
        # Leaving the client sent DELETE: the session is gone, a second DELETE is 404.
        import httpx

        gone = httpx.delete(url, headers={"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"})
        assert gone.status_code == 404, gone
        print("python mcp 1.12 http: session close: ok")
    finally:
        daemon.stop()


def main() -> None:
    binary, workdir = sys.argv[1], Path(sys.argv[2])
    workspace(workdir)
    asyncio.run(over_stdio(binary, workdir))
    asyncio.run(over_http(binary, workdir))
    os.sync()


if __name__ == "__main__":
    main()
