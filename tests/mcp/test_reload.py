"""Hot reload: a plugin dropped into the folder is served without a restart, and clients hear of it
(notifications/tools/list_changed on 2025-11-25 sessions, subscriptions/listen on 2026-07-28)."""

from __future__ import annotations

import anyio
import pytest
from conftest import FIXTURES, PLUGINS, connect
from mcp import types

pytestmark = pytest.mark.anyio


async def names(client) -> set[str]:
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools.extend(t.name for t in page.tools)
        if page.next_cursor is None:
            return set(tools)
        cursor = page.next_cursor


async def test_legacy_session_hears_list_changed(ws, era):
    transport, mode, version = era
    if version != "2025-11-25":
        pytest.skip("2026-07-28 clients subscribe with subscriptions/listen (next test)")
    changed = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and message.method == "notifications/tools/list_changed":
            changed.set()

    # Over HTTP the session's notifications come on the stream the client opens with a GET after
    # the handshake: wait until the daemon answered it. Over stdio they share stdout; nothing to open.
    stream_open = anyio.Event()

    async def on_http_response(response) -> None:
        if response.request.method == "GET" and response.status_code == 200:
            stream_open.set()

    if transport == "stdio":
        stream_open.set()
    async with connect(ws, transport, mode, message_handler=on_message, on_http_response=on_http_response) as client:
        assert "late_echo" not in await names(client)
        with anyio.fail_after(20):
            await stream_open.wait()
        ws.add_plugin(PLUGINS / "echo.wasm", name="late")
        with anyio.fail_after(20):
            await changed.wait()
        assert "late_echo" in await names(client)
        r = await client.call_tool("late_echo", {"text": "new"})
        assert r.structured_content == {"text": "new"}


async def test_subscription_hears_list_changed(ws, era):
    transport, mode, version = era
    if version != "2026-07-28":
        pytest.skip("subscriptions/listen exists from 2026-07-28")
    async with connect(ws, transport, mode) as client:
        async with client.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed
            ws.add_plugin(PLUGINS / "echo.wasm", name="late")
            with anyio.fail_after(20):
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
        assert "late_echo" in await names(client)


async def test_broken_replacement_keeps_the_old_version_serving(ws):
    async with connect(ws, "stdio", "legacy") as client:
        assert "echo" in await names(client)
        (ws.plugins / "echo.wasm").write_bytes(b"\0asm garbage")
        ws.add_plugin(FIXTURES / "bad_schema.wasm", name="bad")
        # A good plugin after the broken files: a reload rescans the whole folder, so once it serves,
        # the daemon has also seen (and refused) what was written before it.
        ws.add_plugin(PLUGINS / "echo.wasm", name="late")
        with anyio.fail_after(20):
            while "late_echo" not in await names(client):
                await anyio.sleep(0.05)
        assert "echo" in await names(client)
        r = await client.call_tool("echo", {"text": "old"})
        assert r.structured_content == {"text": "old"}


async def test_removed_plugin_stops_serving(ws):
    async with connect(ws, "http", "legacy") as client:
        (ws.plugins / "math.wasm").unlink()
        with anyio.fail_after(20):
            while "calc" in await names(client):
                await anyio.sleep(0.2)
        r = await client.call_tool("echo", {"text": "ok"})
        assert not r.is_error
