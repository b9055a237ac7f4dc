"""Cold start (issue #39) with the official Python SDK, `mcp` 2.3 (tests/mcp/requirements.txt, .venv),
over stdio as the SDK launches servers, with every timeout at the SDK's default.

Why: a client that starts the daemon itself must not give up, or fall back to an older protocol,
while the daemon compiles a Python and a JavaScript plugin for the first time (an empty compile cache:
tens of seconds on two cores). What this SDK does by default, and so what is checked:

- `Client(stdio_client(params))` (a ClientSession on the SDK's stdio transport; only the daemon's
  stderr is sent to a file) in its default mode "auto": it probes `server/discover` with the SDK's
  10 s probe timeout (DISCOVER_TIMEOUT_SECONDS) and falls back to the 2025-11-25 `initialize`
  handshake when the probe fails. The connection must end on the newest protocol the SDK speaks
  (LATEST_PROTOCOL_VERSION, 2026-07-28), not on the fallback. Other requests: no read timeout (the
  SDK's default is None).
- `subscriptions/listen` for tool-list changes (how a 2026-07-28 client hears
  `notifications/tools/list_changed`), then `tools/list`: answered at once with what is ready.
- `tools/call` of csv_stats (Python) and json_query (JavaScript), which may still be compiling: the
  daemon holds the call until the plugin serves (45 s at most) and the results must be right.
- When the first list lacked them, a list_changed event arrived; a later list has them all.
- The daemon also serves HTTP here (`serve --stdio --http 127.0.0.1:0`): `/ready` is 503 listing the
  loading plugins at first, and 200 at the end; when it still lists a plugin after the first
  `tools/list`, that list really happened during the cold compile. A machine so fast that everything
  compiled first is said in the output, not failed.

Prints the timings: initialize, first list, first Python call. Exits non-zero on the first unmet
expectation, with the daemon's stderr.

    python coldstart_sdk.py TOOLHOST_BIN WORKDIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_PROTOCOL_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_common import (  # noqa: E402
    CSV_INPUT,
    JSON_INPUT,
    SLOW,
    check_csv,
    check_json,
    daemon_base,
    fail,
    load_average,
    loading_names,
    main,
    ready,
    text_of,
)

NAME = "python mcp 2.3"


async def call(client: Client, tool: str, arguments: dict, since, log):
    try:
        return await client.call_tool(tool, arguments)
    except MCPError as e:
        fail(NAME, f"tools/call {tool} failed at {since():.1f} s: {e} (load average {load_average()}; the "
             "daemon holds a call at most 45 s for its plugin to compile)", log())


async def scenario(binary: str, workdir: Path) -> None:
    log_path = workdir / "daemon.log"
    log = lambda: log_path.read_text(errors="replace")  # noqa: E731
    params = StdioServerParameters(
        command=binary, args=["serve", "--stdio", "--http", "127.0.0.1:0", "--no-watch"], cwd=str(workdir)
    )
    start = time.monotonic()
    since = lambda: time.monotonic() - start  # noqa: E731
    with log_path.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            t_init = since()
            if client.protocol_version != LATEST_PROTOCOL_VERSION:
                fail(NAME, f"negotiated {client.protocol_version}, not the SDK's newest {LATEST_PROTOCOL_VERSION} "
                     f"(the server/discover probe failed and the client fell back) after {t_init:.1f} s", log())
            base = await anyio.to_thread.run_sync(daemon_base, log_path)
            # The first answers may come before the daemon has read its plugins folder (503, nothing named).
            status0, body0 = await anyio.to_thread.run_sync(ready, base)
            with anyio.move_on_after(5):
                while status0 == 503 and not loading_names(body0):
                    await anyio.sleep(0.05)
                    status0, body0 = await anyio.to_thread.run_sync(ready, base)

            events: list[float] = []
            async with client.listen(tools_list_changed=True) as sub, anyio.create_task_group() as tg:

                async def collect() -> None:
                    async for event in sub:
                        if isinstance(event, ToolsListChanged):
                            events.append(since())

                tg.start_soon(collect)

                first = {t.name for t in (await client.list_tools()).tools}
                t_list = since()
                status1, body1 = await anyio.to_thread.run_sync(ready, base)
                if t_list - t_init > 10:
                    fail(NAME, f"the first tools/list took {t_list - t_init:.1f} s (the daemon waits 3 s at most)", log())

                r = await call(client, "csv_stats", CSV_INPUT, since, log)
                t_py = since()
                check_csv(NAME, bool(r.is_error), text_of(r.content), r.structured_content)
                r = await call(client, "json_query", JSON_INPUT, since, log)
                t_js = since()
                check_json(NAME, bool(r.is_error), text_of(r.content), r.structured_content)

                missing = [t for t in SLOW if t not in first]
                if missing:
                    # Both plugins serve now (their calls ran), so the change has been announced.
                    with anyio.move_on_after(10):
                        while not events:
                            await anyio.sleep(0.05)
                    if not events:
                        fail(NAME, f"no tools list_changed event within 10 s of the calls, though the first list "
                             f"lacked {missing}", log())
                later = {t.name for t in (await client.list_tools()).tools}
                if not {"echo", *SLOW} <= later:
                    fail(NAME, f"a later list lacks tools: {sorted(later)}", log())
                tg.cancel_scope.cancel()

            status2, body2 = await anyio.to_thread.run_sync(ready, base)
            if status2 != 200:
                fail(NAME, f"/ready is {status2} once every plugin served: {body2}", log())

    print(f"{NAME} stdio: protocol {LATEST_PROTOCOL_VERSION}; initialize {t_init:.1f} s, first list {t_list:.1f} s "
          f"({len(first)} tools: {', '.join(sorted(first))}), first Python call (csv_stats) {t_py:.1f} s, "
          f"JS call (json_query) {t_js:.1f} s; list_changed at {', '.join(f'{e:.1f}' for e in events) or 'none'} s; "
          f"load average {load_average()}")
    print(f"{NAME} /ready: {status0} at connect (loading {', '.join(loading_names(body0)) or 'nothing'}), "
          f"{status1} after the first list (loading {', '.join(loading_names(body1)) or 'nothing'}), {status2} at the end")
    if status0 == 503 and not loading_names(body0):
        fail(NAME, f"/ready stayed 503 for 5 s after connect without naming a loading plugin: {body0}")
    if status0 != 503:
        if not set(SLOW) <= first:
            fail(NAME, f"/ready was {status0} at connect, but the first list lacked {sorted(set(SLOW) - first)}: {body0}")
        print(f"NOTE {NAME}: everything compiled before /ready was first asked; no cold start was exercised")
    if status1 == 503 and set(SLOW) & set(loading_names(body1)):
        print(f"{NAME}: cold start exercised (the first list answered while {', '.join(loading_names(body1))} compiled)")
    elif set(SLOW) <= first:
        print(f"NOTE {NAME}: the first list already had both big plugins: this machine compiled them within the list wait")
    else:
        fail(NAME, f"/ready said 200 after the first list, yet it lacked {sorted(set(SLOW) - first)}: {body1}")
    if t_list - t_init >= 2.5:
        print(f"NOTE {NAME}: the first tools/list took {t_list - t_init:.1f} s although nothing was in the compile "
              "cache (the daemon waits up to 3 s only for cached plugins)")


if __name__ == "__main__":
    main(lambda: anyio.run(scenario, sys.argv[1], Path(sys.argv[2])))
