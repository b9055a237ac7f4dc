#!/usr/bin/env bash
# Builds everything (plugins and host) and runs the daemon with the example plugins.
# Default: MCP over Streamable HTTP on 127.0.0.1:8750. Pass `--stdio` (or any serve flags) to change it.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null
scripts/build-plugins.sh
cargo build --release --locked --bin toolhost
exec target/release/toolhost serve "${@:---http}"
