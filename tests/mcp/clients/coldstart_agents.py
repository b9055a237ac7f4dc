"""Cold start (issue #39) with the OpenAI Agents SDK (`openai-agents` 0.24.0 on `mcp` 2.3, pinned with
what it pulls in in requirements-agents.txt, in its own venv .venv-agents), over stdio as it launches servers, with every
timeout at its default. No model and no API key: the MCP side of an agent run only.

Why: an agent that starts the daemon itself must get its tools while the daemon compiles a Python and
a JavaScript plugin for the first time (an empty compile cache: tens of seconds on two cores). What
this SDK does by default (agents/mcp/server.py of the pinned version), and so what is checked:

- `MCPServerStdio(params)` with its default `client_session_timeout_seconds=5` (the default in
  0.24.0's `MCPServerStdio.__init__`, read again at run time below): every request,
  `tools/call` included, fails after 5 s, with `max_retry_attempts=0` (no retry). Under `mcp` 2.x it
  connects through `mcp.Client(mode="auto")`: the `server/discover` probe (10 s) must succeed, so the
  session ends on the newest protocol its `mcp` speaks (LATEST_PROTOCOL_VERSION, 2026-07-28).
- `connect()` and `list_tools()` answer at once (the daemon's list waits 3 s at most, within the 5 s)
  with what is ready; echo is called as soon as it is listed.
- An agent run calls only the tools the server listed, and lists them again each turn
  (`cache_tools_list=False` by default; under 2026-07-28 no list_changed reaches this SDK, as it
  opens no `subscriptions/listen`). So, as an agent's turns would, `list_tools()` is repeated
  until csv_stats (Python) and json_query (JavaScript) are listed, and then each is called with the
  5 s default and must answer right.
- A call made before its plugin is listed cannot wait for a compile longer than 5 s: it must end in
  an error within about the 5 s (not hang), and the session must stay usable. This is what the SDK
  decides, said in the output; the daemon holds such a call up to 45 s, longer than this client waits.
- The first list lacked the big plugins (the cold start really exercised); a machine that compiled
  everything first is said in the output, not failed.

Prints the timings: connect (initialize), first list, first Python call. Exits non-zero on the first
unmet expectation.

    python coldstart_agents.py TOOLHOST_BIN WORKDIR
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from importlib.metadata import version as package_version
import time
from pathlib import Path

from agents.mcp import MCPServerStdio
from mcp_types.version import LATEST_PROTOCOL_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_common import (  # noqa: E402
    CSV_INPUT,
    JSON_INPUT,
    SLOW,
    Failure,
    check_csv,
    check_json,
    fail,
    load_average,
    main,
    text_of,
)

NAME = f"openai-agents {package_version('openai-agents')}"
# The SDK's default read timeout of a session, read from the installed package: the test must use it.
DEFAULT_TIMEOUT = inspect.signature(MCPServerStdio.__init__).parameters["client_session_timeout_seconds"].default
# How long an agent's turns would go on listing before the test gives up on the compile.
LIST_FOR = 120


async def scenario(binary: str, workdir: Path) -> None:
    if DEFAULT_TIMEOUT != 5:
        print(f"NOTE {NAME}: the default client_session_timeout_seconds is now {DEFAULT_TIMEOUT}, not 5")
    start = time.monotonic()
    since = lambda: time.monotonic() - start  # noqa: E731
    server = MCPServerStdio(
        {"command": binary, "args": ["serve", "--stdio", "--no-watch"], "cwd": str(workdir),
         "env": {"TOOLHOST_LOG": "warn"}},
        name="toolhost",
    )
    try:
        await server.connect()
    except Exception as e:  # noqa: BLE001
        fail(NAME, f"connect() failed at {since():.1f} s: {e!r}")
    try:
        t_init = since()
        version = server.session.protocol_version
        if version != LATEST_PROTOCOL_VERSION:
            fail(NAME, f"negotiated {version}, not the newest its mcp speaks, {LATEST_PROTOCOL_VERSION}")

        first = {t.name for t in await server.list_tools()}
        t_list = since()
        # echo is tiny, but may compile beside a big plugin: an agent's next turn lists again.
        listed = first
        while "echo" not in listed:
            if since() > LIST_FOR:
                fail(NAME, f"after {LIST_FOR} s the list still lacks echo: {sorted(listed)}")
            await asyncio.sleep(1)
            listed = {t.name for t in await server.list_tools()}
        t_echo = since()
        r = await server.call_tool("echo", {"text": "hello"})
        if r.is_error or text_of(r.content) != "hello":
            fail(NAME, f"echo gave {r}")

        early = "none (both were listed at once)"
        missing = [t for t in SLOW if t not in listed]
        if missing:
            # A call before its tool is listed: the SDK gives up after its 5 s.
            t0 = since()
            try:
                r = await server.call_tool(missing[0], CSV_INPUT if missing[0] == "csv_stats" else JSON_INPUT)
                early = f"{missing[0]} answered in {since() - t0:.1f} s (is_error={r.is_error})"
            except Exception as e:  # noqa: BLE001
                early = f"{missing[0]} failed after {since() - t0:.1f} s: {type(e).__name__}: {e}"
            if since() - t0 > (DEFAULT_TIMEOUT or 0) + 5:
                fail(NAME, f"a call before its plugin was listed took {since() - t0:.1f} s: {early}")
            t0 = since()
            r = await server.call_tool("echo", {"text": "still here"})
            early += f"; echo after it answered in {since() - t0:.1f} s"
            if r.is_error or text_of(r.content) != "still here":
                fail(NAME, f"the session broke after that call: echo gave {r}")

        # The agent's later turns: list again until both are there.
        lists: list[str] = []
        while not set(SLOW) <= listed:
            if since() > LIST_FOR:
                fail(NAME, f"after {LIST_FOR} s the list still lacks {sorted(set(SLOW) - listed)} "
                     f"(load average {load_average()})")
            await asyncio.sleep(1)
            t0 = since()
            listed = {t.name for t in await server.list_tools()}
            lists.append(f"{t0:.1f}+{since() - t0:.1f}")
        t_listed = since()

        try:
            r = await server.call_tool("csv_stats", CSV_INPUT)
            t_py = since()
            check_csv(NAME, bool(r.is_error), text_of(r.content), r.structured_content)
            r = await server.call_tool("json_query", JSON_INPUT)
            t_js = since()
            check_json(NAME, bool(r.is_error), text_of(r.content), r.structured_content)
        except Failure:
            raise
        except Exception as e:  # noqa: BLE001
            fail(NAME, f"a call to a listed tool failed at {since():.1f} s: {type(e).__name__}: {e}")
    finally:
        await server.cleanup()

    print(f"{NAME} stdio: protocol {version}, client_session_timeout_seconds {DEFAULT_TIMEOUT} (default); "
          f"connect {t_init:.1f} s, first list {t_list:.1f} s ({len(first)} tools: {', '.join(sorted(first)) or 'none'}), echo listed at {t_echo:.1f} s, "
          f"both big plugins listed at {t_listed:.1f} s (later lists at s+s: {', '.join(lists)}), first Python call (csv_stats) {t_py:.1f} s, "
          f"JS call (json_query) {t_js:.1f} s; load average {load_average()}")
    print(f"{NAME}: a call before its tool was listed: {early}")
    if not set(SLOW) <= first:
        print(f"{NAME}: cold start exercised (the first list lacked {', '.join(sorted(set(SLOW) - first))}, still compiling)")
    else:
        print(f"NOTE {NAME}: the first list already had both big plugins: this machine compiled them within the list wait")


if __name__ == "__main__":
    main(lambda: asyncio.run(scenario(sys.argv[1], Path(sys.argv[2]))))
