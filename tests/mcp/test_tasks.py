"""2025-11-25 tasks through the official Python client, over stdio and HTTP: its typed requests
(`tools/call` with `task`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`) and its own
validation of each answer against that revision's schema. The 2026 extension is covered by the
Rust end-to-end tests (tests/e2e/tasks.rs) and rmcp."""

from __future__ import annotations

import anyio
import pytest
from conftest import connect
from mcp import types
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
    await anyio.sleep(0)
