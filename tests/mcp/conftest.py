"""Fixtures for the MCP end-to-end tests: a temporary plugins folder and config per test, the real
toolhost binary started over stdio or HTTP, and the official `mcp` client connected to it in either
protocol era ("legacy": the initialize handshake, 2025-11-25; "auto": server/discover, 2026-07-28)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from http_daemon import HttpDaemon

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("TOOLHOST_BIN", ROOT / "target" / "release" / "toolhost"))
PLUGINS = ROOT / "plugins"
FIXTURES = ROOT / "target" / "fixtures"

# (transport, client mode, protocol version the connection must end up on)
ERAS = [
    ("stdio", "legacy", "2025-11-25"),
    ("stdio", "auto", "2026-07-28"),
    ("http", "legacy", "2025-11-25"),
    ("http", "auto", "2026-07-28"),
]
ERA_IDS = [f"{t}-{v}" for t, _, v in ERAS]

BASE_CONFIG = """\
plugins-dir = "plugins"

[cache]
dir = "{cache}"

[audit]
path = "audit.jsonl"

[permissions]
mode = "bypass"
deny = ["write_file(**/.env)"]
ask = ["remember"]

[server]
shutdown-grace-ms = {grace}

[plugins.fs]
dirs = [{{ host = "work", mode = "rw" }}]

[plugins.hostile.limits]
timeout-ms = 60000
fuel = 9000000000000000000

[plugins.late]
prefix = "late_"
arrives-later = true
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One compile cache for the whole session, filled here (`toolhost list` loads every plugin) before
    # any client connects: compiling the plugins cold takes 5-11 s on two busy cores, and the client's
    # server/discover probe gives up after 10 s and falls back to the 2025-11-25 handshake.
    cache = tmp_path_factory.mktemp("cache")
    warm = Workspace(tmp_path_factory.mktemp("warm"), cache)
    subprocess.run([str(BINARY), "--config", str(warm.config), "list"], check=True, capture_output=True)
    return cache


class Workspace:
    """A folder with plugins/, work/ (granted to fs), toolhost.toml and the audit log."""

    def __init__(self, root: Path, cache: Path):
        self.root = root
        self.plugins = root / "plugins"
        self.work = root / "work"
        self.config = root / "toolhost.toml"
        self.audit = root / "audit.jsonl"
        self.cache = cache
        self.plugins.mkdir()
        self.work.mkdir()
        for name in ("echo", "math", "fs"):
            self.add_plugin(PLUGINS / f"{name}.wasm")
        self.add_plugin(FIXTURES / "hostile.wasm")
        self.write_config()

    def add_plugin(self, source: Path, name: str | None = None) -> Path:
        """Copy a component into plugins/ (atomically, as a deploy would)."""
        target = self.plugins / f"{name or source.stem}.wasm"
        partial = self.root / f".{target.name}.partial"
        shutil.copyfile(source, partial)
        os.replace(partial, target)
        return target

    def write_config(self, extra: str = "", grace_ms: int = 5000) -> None:
        self.config.write_text(BASE_CONFIG.format(cache=self.cache, grace=grace_ms) + extra)

    def audit_lines(self) -> list[dict[str, Any]]:
        """Every line of the audit log so far: begin lines and end records."""
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]

    def audit_records(self) -> list[dict[str, Any]]:
        return [record for record in self.audit_lines() if record.get("event") != "begin"]

    async def wait_for_begin(self, predicate, timeout: float = 20.0) -> dict[str, Any]:
        """The first begin line matching `predicate`: the call passed the gate and its plugin is
        starting. Instead of sleeping until a call "surely" runs."""
        found: list[dict[str, Any]] = []

        def begun() -> bool:
            found[:] = [l for l in self.audit_lines() if l.get("event") == "begin" and predicate(l)][:1]
            return bool(found)

        await wait_until("a matching begin line in the audit log", begun, timeout)
        return found[0]

    async def wait_for_audit(self, predicate, timeout: float = 10.0) -> dict[str, Any]:
        """The first audit record matching `predicate`; polls without blocking the event loop."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for record in self.audit_records():
                if predicate(record):
                    return record
            await anyio.sleep(0.05)
        raise AssertionError(f"no matching audit record in {self.audit_records()}")


async def wait_until(what: str, condition, timeout: float = 20.0, interval: float = 0.02) -> None:
    """Poll `condition()` every `interval` without blocking the event loop until it holds; after
    `timeout` (generous: CI is a loaded 2-core machine) fail, naming `what` did not happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await anyio.sleep(interval)


@pytest.fixture
def ws(tmp_path: Path, cache_dir: Path) -> Workspace:
    return Workspace(tmp_path, cache_dir)


class Daemon(HttpDaemon):
    """`toolhost serve --http 127.0.0.1:0` over a workspace, logging at info unless TOOLHOST_LOG says."""

    def __init__(self, ws: Workspace, extra_args: list[str] | None = None, env: dict[str, str] | None = None):
        args = [str(BINARY), "--config", str(ws.config), "serve", "--http", "127.0.0.1:0", *(extra_args or [])]
        full_env = {**os.environ, "TOOLHOST_LOG": os.environ.get("TOOLHOST_LOG", "info"), **(env or {})}
        super().__init__(args, env=full_env)


@pytest.fixture
def daemons():
    started: list[Daemon] = []

    def start(ws: Workspace, **kwargs: Any) -> Daemon:
        d = Daemon(ws, **kwargs)
        started.append(d)
        return d

    yield start
    for d in started:
        if d.process.poll() is None:
            d.stop()


def stdio_params(ws: Workspace, extra_args: list[str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(BINARY),
        args=["--config", str(ws.config), "serve", *(extra_args or [])],
        env={"TOOLHOST_LOG": os.environ.get("TOOLHOST_LOG", "warn")},
    )


@asynccontextmanager
async def connect(
    ws: Workspace,
    transport: str,
    mode: str,
    *,
    daemon: Daemon | None = None,
    headers: dict[str, str] | None = None,
    on_http_response: Any = None,
    **client_kwargs: Any,
) -> AsyncIterator[Client]:
    """A connected client: over stdio (a fresh child process) or HTTP (a fresh daemon unless given).
    Over HTTP, `on_http_response` (an async httpx hook) sees every response the client receives."""
    own: Daemon | None = None
    if transport == "stdio":
        server: Any = stdio_params(ws)
    else:
        if daemon is None:
            daemon = own = Daemon(ws)
        if headers or on_http_response:
            http_client = create_mcp_http_client(headers=headers)
            if on_http_response is not None:
                hooks = http_client.event_hooks
                http_client.event_hooks = {**hooks, "response": [*hooks["response"], on_http_response]}
            server = streamable_http_client(daemon.url, http_client=http_client)
        else:
            server = daemon.url
    try:
        async with Client(server, mode=mode, **client_kwargs) as client:
            yield client
    finally:
        if own is not None:
            own.stop()


@pytest.fixture(params=ERAS, ids=ERA_IDS)
def era(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    return request.param
