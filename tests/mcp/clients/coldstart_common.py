"""Shared by the cold-start scenarios of tests/mcp/clients/run.sh (coldstart_sdk.py in .venv,
coldstart_agents.py in .venv-agents): the inputs run.sh's workspace holds, the checks of the
results, /ready, and failing loudly. Standard library only, so that every venv can import it.

The workspace (made by run.sh's `cold_workdir`): plugins/ holds echo (Rust, small), csv_stats
(Python, 19.5 MB) and json_query (JavaScript on QuickJS, 1.8 MB); data/ holds sales.csv and items.json, granted
read-only to both; no .toolhost/, so the compile cache is empty and both big plugins compile.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, NoReturn

# The tools a cold start must compile (the Python and the JavaScript plugin) and their inputs.
SLOW = ("csv_stats", "json_query")
CSV_INPUT = {"path": "sales.csv"}
JSON_INPUT = {"path": "items.json", "query": ".items[].name"}
URL = re.compile(r"at (http://\S+)/mcp")


class Failure(Exception):
    """An unmet expectation: `main` prints it, with the daemon's stderr when known, and exits 1."""


def fail(client: str, message: str, log: str = "") -> NoReturn:
    text = f"FAIL cold start, {client}: {message}"
    if log:
        text += "\n--- the daemon's stderr, last lines ---\n" + ANSI.sub("", log)[-4000:]
    raise Failure(text)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def main(run) -> None:
    """Run `run()`; a Failure, even inside the task groups of the SDKs, ends the process with its message."""
    try:
        run()
    except BaseException as e:  # noqa: BLE001
        found = _failure(e)
        if found is None:
            raise
        print(found, file=sys.stderr)
        sys.exit(1)


def _failure(e: BaseException) -> Failure | None:
    todo, seen = [e], set()
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Failure):
            return e
        todo += [x for x in (*getattr(e, "exceptions", ()), e.__cause__, e.__context__) if x is not None]
    return None


def text_of(content: Any) -> str:
    """The first text block (the daemon may add the structured result as JSON in a second one)."""
    return next((b.text for b in content if getattr(b, "type", None) == "text"), "")


def check_csv(client: str, is_error: bool, text: str, structured: Any) -> None:
    """csv_stats on data/sales.csv: 3 rows; units 2..5, sum 10; region's top value north."""
    if is_error:
        fail(client, f"csv_stats answered an error: {text}")
    if "3 rows" not in text or "units: 3 filled, numeric, min 2, max 5" not in text:
        fail(client, f"csv_stats gave the wrong summary: {text!r}")
    if structured is not None:
        columns = {c["name"]: c for c in structured.get("columns", [])}
        units, region = columns.get("units", {}), columns.get("region", {})
        if structured.get("rows") != 3 or units.get("sum") != 10 or region.get("top") != "north":
            fail(client, f"csv_stats gave the wrong structured result: {structured!r}")


def check_json(client: str, is_error: bool, text: str, structured: Any) -> None:
    """json_query `.items[].name` on data/items.json: "bolt" and "nut"."""
    if is_error:
        fail(client, f"json_query answered an error: {text}")
    if text.split() != ['"bolt"', '"nut"']:
        fail(client, f"json_query gave the wrong values: {text!r}")
    if structured is not None and (structured.get("results") != ["bolt", "nut"] or structured.get("count") != 2):
        fail(client, f"json_query gave the wrong structured result: {structured!r}")


def daemon_base(log: Path, timeout: float = 10) -> str:
    """`http://ADDR` from the daemon's stderr (`serve --stdio --http 127.0.0.1:0` names it there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = URL.search(log.read_text(errors="replace")) if log.exists() else None
        if found:
            return found.group(1)
        time.sleep(0.05)
    raise Failure(f"the daemon did not name its HTTP address within {timeout} s")


def ready(base: str) -> tuple[int, dict]:
    """GET /ready: (status, body)."""
    try:
        with urllib.request.urlopen(f"{base}/ready", timeout=5) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def loading_names(body: dict) -> list[str]:
    return [p["plugin"] for p in body.get("loading", [])]


def load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"
