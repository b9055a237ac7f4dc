"""tools/list and tools/call through the real daemon, in every transport and protocol era."""

from __future__ import annotations

import anyio
import pytest
from conftest import FIXTURES, connect
from mcp import MCPError

pytestmark = pytest.mark.anyio


async def all_tools(client) -> list:
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def meta_of(result) -> dict:
    return result.meta or {}


async def test_negotiates_the_expected_protocol_version(ws, era):
    transport, mode, version = era
    async with connect(ws, transport, mode) as client:
        assert client.protocol_version == version
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True


async def test_lists_tools_in_order_with_schemas_titles_and_annotations(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        tools = await all_tools(client)
    names = [t.name for t in tools]
    assert names == sorted(names)
    assert {"echo", "calc", "stats", "read_file", "write_file", "spin"} <= set(names)
    echo = next(t for t in tools if t.name == "echo")
    assert echo.title == "Echo"
    assert echo.input_schema["required"] == ["text"]
    assert echo.output_schema["properties"]["text"]["type"] == "string"
    a = echo.annotations
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (True, False, True, False)
    write = next(t for t in tools if t.name == "write_file")
    assert write.annotations.read_only_hint is False


async def test_paginates_a_large_catalog(ws, era):
    transport, mode, _ = era
    # A plugin may declare at most 256 tools: copies of the hostile fixture under prefixes make 4 pages.
    copies = [f"h{i}" for i in range(8)]
    ws.write_config("".join(f'\n[plugins.{c}]\nprefix = "{c}_"\n' for c in copies))
    for c in copies:
        ws.add_plugin(FIXTURES / "hostile.wasm", name=c)
    async with connect(ws, transport, mode) as client:
        first = await client.list_tools(cache_mode="bypass")
        assert len(first.tools) == 100 and first.next_cursor
        tools = await all_tools(client)
        with pytest.raises(MCPError) as bad:
            await client.list_tools(cursor="not a cursor!", cache_mode="bypass")
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) and names == sorted(names)
    hostile = sum(n.startswith("h0_") for n in names)
    assert hostile > 20 and sum(n.startswith("h7_") for n in names) == hostile
    assert len(names) > 250  # three pages at least
    assert bad.value.error.code == -32602


async def test_calls_the_example_tools(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("echo", {"text": "hi", "repeat": 3})
        assert not r.is_error and r.structured_content == {"text": "hihihi"}
        assert '{"text":"hihihi"}' in text_of(r)  # structured output comes with its JSON text
        assert meta_of(r).get("toolhost/callId")

        r = await client.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
        assert not r.is_error and r.structured_content == {"result": 42.0}
        assert "6 * 7 = 42" in text_of(r)

        r = await client.call_tool("stats", {"numbers": [1, 2, 3, 4]})
        assert not r.is_error and r.structured_content["mean"] == 2.5

        r = await client.call_tool("write_file", {"path": "notes.txt", "content": "alpha\nbeta\n"})
        assert not r.is_error, text_of(r)
        r = await client.call_tool("edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"})
        assert not r.is_error, text_of(r)
        r = await client.call_tool("read_file", {"path": "notes.txt"})
        assert text_of(r) == "alpha\ngamma\n"
        r = await client.call_tool("list_dir", {"path": "."})
        assert not r.is_error and any(e["name"] == "notes.txt" for e in r.structured_content["entries"])
        r = await client.call_tool("grep", {"pattern": "gam+a"})
        assert not r.is_error and "notes.txt" in text_of(r)
    assert (ws.work / "notes.txt").read_text() == "alpha\ngamma\n"


async def test_tool_failures_are_error_results(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("calc", {"op": "div", "a": 1, "b": 0})
        assert r.is_error and "division by zero" in text_of(r)
        assert r.structured_content is None
        assert meta_of(r)["toolhost/errorKind"] == "tool_failed"


async def test_invalid_input_is_an_error_result_that_names_the_problem(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("echo", {"text": "x", "repeat": 0, "colour": "red"})
    assert r.is_error
    assert meta_of(r)["toolhost/errorKind"] == "invalid_input"
    message = text_of(r)
    assert "repeat" in message and "colour" in message, message


async def test_unknown_tool_is_a_jsonrpc_invalid_params_error(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        with pytest.raises(MCPError) as e:
            await client.call_tool("ecoh", {"text": "x"})
    assert e.value.error.code == -32602
    assert "Unknown tool 'ecoh'" in e.value.error.message and "echo" in e.value.error.message


async def test_a_denied_call_says_which_rule_denied_it(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("write_file", {"path": ".env", "content": "TOKEN=x"})
    assert r.is_error and meta_of(r)["toolhost/errorKind"] == "denied"
    assert "write_file(**/.env)" in text_of(r)
    assert not (ws.work / ".env").exists()


async def test_progress_reaches_the_client_in_order(ws, era):
    transport, mode, _ = era
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("progress_flood", {"count": 500}, progress_callback=on_progress)
    assert not r.is_error, text_of(r)
    assert seen, "no progress notification arrived"
    values = [p for p, _, _ in seen]
    assert values == sorted(set(values)), "progress must increase"
    assert seen[-1] == (500, 500, "step 500 of 500")


async def test_cancelling_a_looping_call_stops_it_and_records_it(ws, era):
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        with anyio.move_on_after(1.5) as scope:
            await client.call_tool("spin", {})
        assert scope.cancelled_caught
        # The plugin is interrupted promptly: the record appears long before its 60 s timeout.
        record = await ws.wait_for_audit(lambda r: r["tool"] == "spin", timeout=10)
        assert record["outcome"] == "cancelled", record
        assert record["duration_us"] < 10_000_000
        # And the server still serves.
        r = await client.call_tool("echo", {"text": "still here"})
        assert r.structured_content == {"text": "still here"}


async def test_a_wasi_03_calls_streamed_output_reaches_the_client_as_progress(ws, era):
    """A WASI 0.3 plugin's partial output (toolhost:plugin@0.2.0's updates stream) arrives as
    progress notifications whose message is the text, progress the bytes so far; the result is the
    whole."""
    transport, mode, _ = era
    ws.add_plugin(FIXTURES / "async_tools.wasm")
    ws.write_config('[plugins.async_tools]\nprefix = "a_"\n')
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("a_stream", {"parts": 3}, progress_callback=on_progress)
    assert not r.is_error, text_of(r)
    assert text_of(r) == "part 0;part 1;part 2;"
    assert seen, "no progress notification arrived"
    values = [p for p, _ in seen]
    assert values == sorted(set(values)), "progress must increase"
    # The last report is always delivered before the result (earlier ones may be coalesced).
    assert seen[-1] == (21, "part 2;")
