#!/usr/bin/env bash
# Builds everything (plugins and host) and runs the daemon with the example plugins.
# Default: MCP over Streamable HTTP on 127.0.0.1:8750. Pass `--stdio` (or any serve flags) to change it.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

# The build's output goes to stderr: with --stdio, stdout is the MCP channel, and nothing but MCP
# may go there.
build_plugins_and_host >&2
# Where cargo put it: CARGO_TARGET_DIR, when set, moves target/.
exec "${CARGO_TARGET_DIR:-target}/release/toolhost" serve "${@:---http}"
