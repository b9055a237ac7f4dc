"""Calls the gate answers with `ask`: approved or declined by the user through elicitation (an
elicitation request on 2025-11-25, the input-required round trip on 2026-07-28), or denied when the
client cannot ask."""

from __future__ import annotations

import pytest
from conftest import connect
from mcp import types

pytestmark = pytest.mark.anyio


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def answering(action: str, content: dict | None = None, asked: list | None = None):
    async def callback(context, params: types.ElicitRequestParams):
        if asked is not None:
            asked.append(params)
        return types.ElicitResult(action=action, content=content)

    return callback


async def test_approved_call_runs(ws, era):
    transport, mode, _ = era
    asked: list = []
    callback = answering("accept", {"approve": True}, asked)
    async with connect(ws, transport, mode, elicitation_callback=callback) as client:
        r = await client.call_tool("remember", {"value": "blue"})
    assert not r.is_error, text_of(r)
    assert r.structured_content == {"previous": None}
    assert len(asked) == 1
    assert "remember" in asked[0].message and "blue" in asked[0].message
    assert "approve" in asked[0].requested_schema["properties"]
    records, rounds = remember_records(ws)
    assert len(records) == 1, records  # one record per call; a 2026 question round has its own
    assert len(rounds) <= 1, rounds  # 2026-07-28: the first round ended `input_required`
    assert records[0]["decision"] == {"kind": "asked", "answer": True}
    assert records[0]["outcome"] == "ok"


def remember_records(ws):
    """The calls to `remember`, and apart from them the 2026 question rounds (`input_required`)."""
    records = [r for r in ws.audit_records() if r["tool"] == "remember"]
    rounds = [r for r in records if r["outcome"] == "input_required"]
    assert all(r["decision"] == {"kind": "deferred"} for r in rounds), rounds
    return [r for r in records if r["outcome"] != "input_required"], rounds


@pytest.mark.parametrize(
    "action,content",
    [("decline", None), ("cancel", None), ("accept", {"approve": False})],
    ids=["declined", "cancelled", "unchecked"],
)
async def test_declined_call_is_denied(ws, era, action, content):
    transport, mode, _ = era
    async with connect(ws, transport, mode, elicitation_callback=answering(action, content)) as client:
        r = await client.call_tool("remember", {"value": "red"})
    assert r.is_error and r.meta["toolhost/errorKind"] == "denied"
    assert "declined" in text_of(r)
    records, _ = remember_records(ws)
    assert len(records) == 1 and records[0]["decision"] == {"kind": "asked", "answer": False}


async def test_without_elicitation_the_call_is_denied_with_advice(ws, era):
    # Questions go to the client alone: with the console also asked (the default over HTTP), the
    # call would wait for an operator instead (tests/console/).
    ws.write_config('[console]\napprovals = "client"\n')
    transport, mode, _ = era
    async with connect(ws, transport, mode) as client:
        r = await client.call_tool("remember", {"value": "green"})
    assert r.is_error and r.meta["toolhost/errorKind"] == "denied"
    message = text_of(r)
    assert "needs approval" in message and "ask" in message, message


async def test_forged_request_state_is_rejected(ws):
    # 2026-07-28 only: the input-required round trip, driven by hand.
    from mcp import MCPError

    async with connect(ws, "http", "auto", elicitation_callback=answering("accept", {"approve": True})) as client:
        first = await client.session.call_tool("remember", {"value": "x"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state and "approval" in first.input_requests
        accept = {"approval": {"action": "accept", "content": {"approve": True}}}
        with pytest.raises(MCPError) as forged:
            await client.session.call_tool(
                "remember", {"value": "x"}, input_responses=accept, request_state=first.request_state + "x"
            )
        assert forged.value.error.code == -32602
        with pytest.raises(MCPError) as other_args:
            await client.session.call_tool(
                "remember", {"value": "y"}, input_responses=accept, request_state=first.request_state
            )
        assert other_args.value.error.code == -32602
        ok = await client.session.call_tool(
            "remember", {"value": "x"}, input_responses=accept, request_state=first.request_state
        )
        assert not ok.is_error, text_of(ok)
        with pytest.raises(MCPError) as replay:
            await client.session.call_tool(
                "remember", {"value": "x"}, input_responses=accept, request_state=first.request_state
            )
        assert "already used" in replay.value.error.message
