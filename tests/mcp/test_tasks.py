"""Tasks through the official Python client (mcp 2.3), over stdio and HTTP, in both eras:
2025-11-25 with its typed requests (`tools/call` with `task`, `tasks/get`, `tasks/result`,
`tasks/list`, `tasks/cancel`) and its own validation of each answer against that revision's schema;
2026-07-28 through the SDK's extension interface, which claims `resultType: "task"` and polls
`tasks/get`. Cancel, approvals, expiry and owners in the 2026 extension are in tests/e2e/tasks.rs."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import TypeAdapter

import anyio
import pytest
from conftest import connect
from mcp import types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

TASKS = '\n[plugins.hostile]\ntask = "optional"\n'


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


async def create_task(session, name: str, arguments: dict, ttl: int | None = None) -> types.CreateTaskResult:
    """`tools/call` with `task`, through the client's own transport. (mcp 2.3 validates every
    `tools/call` answer as a `CallToolResult`, so its typed `send_request` cannot take the
    `CreateTaskResult` that 2025-11-25 allows there; the answer is checked with its own type here.)"""
    params = types.CallToolRequestParams(name=name, arguments=arguments, task=types.TaskMetadata(ttl=ttl))
    raw = await session._dispatcher.send_raw_request(
        "tools/call", params.model_dump(by_alias=True, mode="json", exclude_none=True), {}
    )
    return types.CreateTaskResult.model_validate(raw)


async def test_a_2025_client_runs_a_tool_as_a_task(ws, transport):
    ws.write_config(TASKS)
    async with connect(ws, transport, "legacy") as client:
        session = client.session
        caps = session.server_capabilities
        assert caps is not None and caps.tasks is not None, caps
        assert caps.tasks.requests is not None and caps.tasks.requests.tools is not None, caps
        listed = await client.list_tools()
        sleep = next(t for t in listed.tools if t.name == "sleep")
        assert sleep.execution is not None and sleep.execution.task_support == "optional", sleep

        created = await create_task(session, "sleep", {"ms": 300}, ttl=60_000)
        task_id = created.task.task_id
        assert created.task.status == "working"

        got = await session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult
        )
        assert got.task_id == task_id

        result = await session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult,
        )
        assert not result.is_error
        assert result.content[0].text.startswith("slept")

        listed_tasks = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        assert task_id in [t.task_id for t in listed_tasks.tasks]

        running = await create_task(session, "sleep", {"ms": 30_000})
        cancelled = await session.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=running.task.task_id)),
            types.CancelTaskResult,
        )
        assert cancelled.status == "cancelled"

        with pytest.raises(MCPError):
            await session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id="no-such-task")),
                types.GetTaskResult,
            )

    record = await ws.wait_for_audit(lambda r: r.get("parent_id") == task_id)
    assert record["tool"] == "sleep" and record["outcome"] == "ok"
    cancelled_record = await ws.wait_for_audit(lambda r: r.get("parent_id") == running.task.task_id)
    assert cancelled_record["error_kind"] == "cancelled"
    await anyio.sleep(0)  # a zero-length checkpoint, not a timed wait


class TaskHandle(types.Result):
    """The 2026 tasks extension's `CreateTaskResult` (`resultType: "task"`)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class GetTask(types.GetTaskRequest):
    """`tasks/get` as the 2026 extension sends it: over HTTP the task id is its `Mcp-Name`."""

    name_param: ClassVar[str | None] = "taskId"


class TasksExtension(ClientExtension):
    """A client side of `io.modelcontextprotocol/tasks`, built on the SDK's extension interface: a
    `tools/call` answered with a task is polled with `tasks/get` until it ends, and its inlined
    result becomes the call's result. What it saw is kept for the test."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.seen: list[dict] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        while True:
            request = GetTask(params=types.GetTaskRequestParams(task_id=handle.task_id))
            raw = await ctx.session.send_request(request, TypeAdapter(dict))
            self.seen.append(raw)
            if raw["status"] in ("completed", "failed", "cancelled"):
                break
            # A sleep on purpose: a client polls at the interval the server asks for.
            await anyio.sleep((handle.poll_interval_ms or 200) / 1000)
        assert raw["status"] == "completed", raw
        return types.CallToolResult.model_validate(raw["result"])


async def test_a_2026_client_follows_a_task_through_the_extension(ws, transport):
    ws.write_config(TASKS)
    tasks = TasksExtension()
    async with connect(ws, transport, "auto", extensions=[tasks]) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("sleep", {"ms": 600, "steps": 3})
        assert not result.is_error
        assert result.content[0].text.startswith("slept")
        # A tool that offers no task answers inline, through the same client.
        echoed = await client.call_tool("echo", {"text": "inline"})
        assert echoed.structured_content == {"text": "inline"}
    statuses = [s["status"] for s in tasks.seen]
    assert statuses[-1] == "completed", statuses
    task_id = tasks.seen[-1]["taskId"]
    record = await ws.wait_for_audit(lambda r: r.get("parent_id") == task_id)
    assert record["tool"] == "sleep" and record["outcome"] == "ok"


async def test_a_2025_task_asks_for_approval_over_the_session(ws, transport):
    ws.write_config(TASKS)
    client_box: dict = {}
    statuses: list[str] = []

    async def approve(context, params: types.ElicitRequestParams):
        # While the question is open, the task says it waits for input.
        listed = await client_box["client"].session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        statuses.extend(t.status for t in listed.tasks)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with connect(ws, transport, "legacy", elicitation_callback=approve) as client:
        client_box["client"] = client
        created = await create_task(client.session, "remember", {"value": "v"})
        result = await client.session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=created.task.task_id)),
            types.CallToolResult,
        )
    assert not result.is_error
    assert "input_required" in statuses, statuses
    record = await ws.wait_for_audit(lambda r: r.get("parent_id") == created.task.task_id)
    assert record["decision"] == {"kind": "asked", "answer": True}
