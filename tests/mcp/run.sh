#!/usr/bin/env bash
# End-to-end MCP tests: the real toolhost binary driven by the official Python `mcp` client.
#
#   tests/mcp/run.sh [pytest args...]        e.g. tests/mcp/run.sh -k approval -x
#
# Needs: target/release/toolhost (cargo build --release) and the plugins from scripts/build-plugins.sh.
# Creates the venv .venv at the repository root on first use and installs tests/mcp/requirements.txt
# into it (PyPI only). TOOLHOST_BIN overrides the binary; PYTHON the interpreter used for the venv.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/.venv"
requirements="$root/tests/mcp/requirements.txt"
stamp="$venv/.mcp-requirements.sha256"

if [[ ! -x "$venv/bin/python" ]]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
fi

bin="${TOOLHOST_BIN:-$root/target/release/toolhost}"
for need in "$bin" "$root/plugins/echo.wasm" "$root/target/fixtures/hostile.wasm"; do
    if [[ ! -f "$need" ]]; then
        echo "tests/mcp: missing $need; run cargo build --release and scripts/build-plugins.sh first" >&2
        exit 2
    fi
done

cd "$root/tests/mcp"
# A hang must fail the run, not eat CI's time: the whole suite takes a few minutes.
exec timeout --kill-after=10 "${TOOLHOST_MCP_TIMEOUT:-1200}" "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
