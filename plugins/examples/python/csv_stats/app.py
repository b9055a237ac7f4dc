"""The `csv_stats` example plugin (Python): per-column statistics of a CSV file in a granted directory.

Built with componentize-py against the world `plugin` in wit/plugin.wit. The plugin does no path
confinement of its own: it opens the path exactly as given, and sees only the directories the host
preopens for it (a granted directory is normally mounted at ".", so relative paths resolve against it).

componentize-py bundles only the modules imported while it snapshots the app at build time: a module the
standard library imports lazily at run time (a codec, `heapq` inside `Counter.most_common`) is missing and
raises ModuleNotFoundError. Import what you need at the top, and test every code path through the host.
"""

import csv
import io
import json
import math
import os
import sys
import traceback
from collections import Counter

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host
from wit_world.imports.types import (
    ToolError_Failed,
    ToolError_InvalidInput,
    ToolHints,
    ToolOutput,
    ToolSpec,
)

# Larger files are refused: the whole file is held in linear memory while it is analysed.
MAX_FILE_BYTES = 64 << 20
# Progress is reported after this many rows.
PROGRESS_EVERY = 1000

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "The CSV file, relative to the granted directory. Its first row names the columns.",
        },
        "delimiter": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1,
            "default": ",",
            "description": "The field separator: one character, e.g. ',' or ';' or a tab.",
        },
        "columns": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "uniqueItems": True,
            "description": "Only these columns (by header name); all columns when omitted.",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "rows": {"type": "integer", "description": "Data rows, the header excluded."},
        "columns": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "filled": {"type": "integer", "description": "Rows with a non-empty value."},
                    "numeric": {"type": "boolean", "description": "Every non-empty value is a number."},
                    "min": {"type": "number"},
                    "max": {"type": "number"},
                    "mean": {"type": "number"},
                    "sum": {"type": "number"},
                    "distinct": {"type": "integer"},
                    "top": {"type": "string", "description": "The most common value."},
                },
                "required": ["name", "filled", "numeric", "distinct"],
            },
        },
    },
    "required": ["path", "rows", "columns"],
    "additionalProperties": False,
}


def invalid(message: str) -> Err:
    return Err(ToolError_InvalidInput(message))


def failed(message: str) -> Err:
    return Err(ToolError_Failed(message))


def read_text(path: str) -> str:
    """The file's text; I/O failures become `failed` errors naming the path and the OS error."""
    try:
        with open(path, "rb") as f:
            # Ask for no more than the file holds (plus one byte, to see it grow past the cap): CPython
            # allocates what `read(n)` asks for before reading, and 64 MiB for a small file would grow
            # the sandbox's memory by that much on every call (and count against its memory limit).
            size = os.fstat(f.fileno()).st_size
            data = f.read(min(size, MAX_FILE_BYTES) + 1)
            if len(data) > size:  # longer than its size said (it grew, or a special file): the rest
                data += f.read(MAX_FILE_BYTES + 1 - len(data))
    except IsADirectoryError:
        raise failed(f"cannot read '{path}': it is a directory, not a CSV file")
    except OSError as e:
        raise failed(f"cannot read '{path}': {e.strerror or e}")
    if len(data) > MAX_FILE_BYTES:
        raise failed(f"cannot read '{path}': it is larger than {MAX_FILE_BYTES >> 20} MiB")
    try:
        # Not decode("utf-8-sig"): componentize-py bundles only the modules imported at build time,
        # and that codec is imported lazily.
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as e:
        raise failed(f"cannot read '{path}': it is not UTF-8 text (byte {e.start})")


def as_number(text: str):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class Column:
    """Running statistics of one column."""

    def __init__(self, name: str):
        self.name = name
        self.filled = 0
        self.numbers = []
        self.numeric = True
        self.values = Counter()

    def add(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        self.filled += 1
        self.values[text] += 1
        if self.numeric:
            number = as_number(text)
            if number is None:
                self.numeric = False
                self.numbers = []
            else:
                self.numbers.append(number)

    def summary(self) -> dict:
        out = {
            "name": self.name,
            "filled": self.filled,
            "numeric": self.numeric and self.filled > 0,
            "distinct": len(self.values),
        }
        if out["numeric"]:
            total = math.fsum(self.numbers)
            out.update(min=min(self.numbers), max=max(self.numbers), sum=total, mean=total / len(self.numbers))
        elif self.values:
            # Not most_common(1): it imports heapq lazily, which componentize-py would not bundle.
            out["top"] = max(self.values.items(), key=lambda kv: kv[1])[0]
        return out

    def line(self) -> str:
        s = self.summary()
        if s["numeric"]:
            detail = f"numeric, min {fmt(s['min'])}, max {fmt(s['max'])}, mean {fmt(s['mean'])}"
        elif s["filled"]:
            detail = f"text, {s['distinct']} distinct, most common {s['top']!r}"
        else:
            detail = "empty"
        return f"- {self.name}: {s['filled']} filled, {detail}"


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fmt(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:.6g}"


def csv_stats(input_json: str) -> ToolOutput:
    args = json.loads(input_json)
    path = args["path"]
    delimiter = args.get("delimiter", ",")
    text = read_text(path)
    total_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise failed(f"cannot analyse '{path}': the file is empty (it needs a header row)")
    except csv.Error as e:
        raise failed(f"cannot parse '{path}': {e}")
    wanted = args.get("columns") or header
    missing = [c for c in wanted if c not in header]
    if missing:
        raise invalid(
            f"no column named {', '.join(repr(c) for c in missing)} in '{path}'; "
            f"its columns are: {', '.join(repr(c) for c in header)}"
        )
    index = {name: header.index(name) for name in wanted}
    columns = [Column(name) for name in wanted]
    rows = 0
    try:
        for record in reader:
            if not record:
                continue
            rows += 1
            for column in columns:
                i = index[column.name]
                if i < len(record):
                    column.add(record[i])
            if rows % PROGRESS_EVERY == 0:
                host.progress(rows, max(total_lines - 1, rows), f"{rows} rows read")
    except csv.Error as e:
        raise failed(f"cannot parse '{path}' at line {reader.line_num}: {e}")
    host.progress(rows, rows, f"{rows} rows read")
    host.log(host.LogLevel.DEBUG, f"csv_stats: {path}: {rows} rows, {len(columns)} columns")
    structured = {"path": path, "rows": rows, "columns": [c.summary() for c in columns]}
    heading = f"{path}: {plural(rows, 'row')}, {plural(len(columns), 'column')}"
    content = "\n".join([heading] + [c.line() for c in columns])
    return ToolOutput(content=content, structured=json.dumps(structured))


class Tool(exports.Tool):
    def describe(self) -> list:
        return [
            ToolSpec(
                name="csv_stats",
                title="CSV column statistics",
                description=(
                    "Summarise a CSV file: the number of rows and, for each column, how many rows fill it "
                    "and either min, max, mean and sum (numeric columns) or the number of distinct values "
                    "and the most common one (text columns)."
                ),
                input_schema=json.dumps(INPUT_SCHEMA),
                output_schema=json.dumps(OUTPUT_SCHEMA),
                hints=ToolHints.READ_ONLY | ToolHints.IDEMPOTENT,
                permission_subject="/path",
            )
        ]

    def call(self, name: str, input: str) -> ToolOutput:
        if name != "csv_stats":
            raise invalid(f"unknown tool '{name}'; this plugin provides only 'csv_stats'")
        try:
            return csv_stats(input)
        except Err:
            raise
        except Exception:
            # A bug, not a result: the host reports it as a trap, with the guest's stderr attached.
            traceback.print_exc()
            sys.stderr.flush()
            raise
