"""csv_stats as a FastMCP server over stdio: what a user would write instead of the Python plugin.

The benchmark's `peers` part runs it against toolhost serving plugins/csv_stats.wasm. It runs the plugin's
own code (plugins/examples/python/csv_stats/app.py) in CPython, with the plugin's WIT imports replaced by
plain Python below, so that both sides do the same work and differ only in how they are served.

    csv_stats_fastmcp.py PLUGIN_DIR     (files are read relative to the working directory, as the
                                         plugin reads them relative to its granted directory)
"""

import json
import sys
import types
from enum import IntEnum, IntFlag
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from pydantic import Field


class Err(Exception):
    def __init__(self, value):
        super().__init__(value)
        self.value = value


class _Case:
    def __init__(self, value):
        self.value = value


class LogLevel(IntEnum):
    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


class ToolHints(IntFlag):
    READ_ONLY = 1
    IDEMPOTENT = 2


class ToolOutput:
    def __init__(self, content, structured):
        self.content, self.structured = content, structured


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


# The plugin's imports, as plain Python: progress and debug logs go nowhere (the benchmark's calls ask
# for neither, from either server).
_module("componentize_py_types", Err=Err)
host = _module("wit_world.imports.host", LogLevel=LogLevel, progress=lambda *a: None, log=lambda *a: None)
wit_types = _module(
    "wit_world.imports.types",
    ToolError_Failed=type("ToolError_Failed", (_Case,), {}),
    ToolError_InvalidInput=type("ToolError_InvalidInput", (_Case,), {}),
    ToolHints=ToolHints,
    ToolOutput=ToolOutput,
    ToolSpec=lambda **kw: kw,
)
_module("wit_world.imports", host=host, types=wit_types)
_module("wit_world.exports", Tool=object)
_module("wit_world", exports=sys.modules["wit_world.exports"], imports=sys.modules["wit_world.imports"])

sys.path.insert(0, sys.argv[1])
import app  # noqa: E402  (the plugin's app.py, after its imports exist)

mcp = FastMCP("csv_stats")


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def csv_stats(
    path: Annotated[str, Field(min_length=1, description="The CSV file, relative to the working directory.")],
    delimiter: Annotated[str, Field(min_length=1, max_length=1, description="The field separator.")] = ",",
    columns: Annotated[list[str] | None, Field(min_length=1, description="Only these columns.")] = None,
) -> ToolResult:
    """Summarise a CSV file: rows, and per column its fill, min/max/mean/sum or distinct values."""
    args = {"path": path, "delimiter": delimiter}
    if columns is not None:
        args["columns"] = columns
    try:
        out = app.csv_stats(json.dumps(args))
    except Err as e:
        raise ToolError(e.value.value) from None
    return ToolResult(content=out.content, structured_content=json.loads(out.structured))


if __name__ == "__main__":
    mcp.run(show_banner=False)
