#!/usr/bin/env bash
# Builds the Python generic fixture (componentize-py against ../wit, world `shapes`) into OUT_DIR as
# generic_python.wasm, with CPython's socket imports plugged as in plugins/examples/python/csv_stats.
# About 20 s on 2 cores; about 18 MB. Toolchain: scripts/toolchains.sh --langs python.
#   build.sh OUT_DIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
# shellcheck disable=SC1091
[ -f "$root/.toolhost/tools/env.sh" ] && . "$root/.toolhost/tools/env.sh"
stub="$root/plugins/examples/python/sockets-stub"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$here"
PYTHONDONTWRITEBYTECODE=1 componentize-py -d ../wit -w shapes componentize app -o "$tmp/app.wasm" >/dev/null
wasm-tools component embed --dummy "$stub" -w sockets-stub -o "$tmp/stub-core.wasm"
wasm-tools component new "$tmp/stub-core.wasm" -o "$tmp/stub.wasm"
wasm-tools compose "$tmp/app.wasm" -d "$tmp/stub.wasm" -o "$out/generic_python.wasm" >/dev/null 2>&1 ||
    wasm-tools compose "$tmp/app.wasm" -d "$tmp/stub.wasm" -o "$out/generic_python.wasm"
