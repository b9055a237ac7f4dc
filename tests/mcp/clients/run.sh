#!/usr/bin/env bash
# Older MCP clients written by others against the real daemon, both transports (see old_python.py):
# today the official Python `mcp` 1.12 (protocol 2025-06-18), in its own venv .venv-mcp1 at the
# repository root (PyPI only, pinned in requirements-mcp1.txt). The current Python client (2.x, both
# protocol eras) is tests/mcp/run.sh; the conformance suite is tests/mcp/conformance/run.sh.
# About 10 s once the venv exists.
#
# Needs target/release/toolhost and the plugins (scripts/build-plugins.sh). TOOLHOST_BIN overrides the binary.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
here="$root/tests/mcp/clients"
venv="$root/.venv-mcp1"
requirements="$here/requirements-mcp1.txt"
stamp="$venv/.requirements.sha256"

if [[ ! -x "$venv/bin/python" ]]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
fi

bin="${TOOLHOST_BIN:-$root/target/release/toolhost}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/plugins"
cp "$root/plugins/echo.wasm" "$root/target/fixtures/hostile.wasm" "$work/plugins/"
timeout --kill-after=10 180 "$venv/bin/python" "$here/old_python.py" "$bin" "$work"
