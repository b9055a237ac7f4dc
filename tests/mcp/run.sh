#!/usr/bin/env bash
# End-to-end MCP tests: the real toolhost binary driven by the official Python `mcp` client.
#
#   tests/mcp/run.sh [pytest args...]        e.g. tests/mcp/run.sh -k approval -x
#
# Needs: target/release/toolhost (cargo build --release) and the plugins from scripts/build-plugins.sh.
# Creates the venv .venv at the repository root on first use and installs tests/mcp/requirements.txt
# into it (PyPI only). TOOLHOST_BIN overrides the binary; PYTHON the interpreter used for the venv.
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh" || exit 1

venv="$root/.venv"
python_venv "$venv" "$root/tests/mcp/requirements.txt" .mcp-requirements.sha256

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
