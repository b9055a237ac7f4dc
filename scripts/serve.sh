#!/usr/bin/env bash
# Builds everything (plugins and host) and runs the daemon with the example plugins.
# Default: MCP over Streamable HTTP on 127.0.0.1:8750. Pass `--stdio` (or any serve flags) to change it.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

build_plugins_and_host
exec target/release/toolhost serve "${@:---http}"
