#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what it needs, builds the plugins and the host once,
# then runs the Rust tests (unit + end-to-end) and the tests with real MCP clients.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null
scripts/build-plugins.sh
cargo build --release --locked --bin toolhost
cargo test --release --locked
if [ -x tests/mcp/run.sh ]; then
  tests/mcp/run.sh
fi
