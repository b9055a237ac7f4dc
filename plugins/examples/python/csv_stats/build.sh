#!/usr/bin/env bash
# Builds csv_stats.wasm (Python: componentize-py 0.25.1, then wasm-tools 1.262 to plug the socket
# imports) into OUT_DIR (default: target/examples). About 20-25 s on 2 cores; about 18 MB.
# Toolchain: scripts/toolchains.sh --langs python (both tools go into .venv/).
#   build.sh [OUT_DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="${1:-$root/target/examples}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# shellcheck disable=SC1091
[ -f "$root/.toolhost/tools/env.sh" ] && . "$root/.toolhost/tools/env.sh"
for tool in componentize-py wasm-tools; do
    command -v "$tool" >/dev/null ||
        { echo "csv_stats: $tool not found; run scripts/toolchains.sh --langs python" >&2; exit 2; }
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$here"
PYTHONDONTWRITEBYTECODE=1 componentize-py -d "$root/wit" -w plugin componentize app -o "$tmp/app.wasm" >/dev/null
# CPython's runtime imports wasi:sockets, which toolhost does not link: plug those imports with
# trapping stubs (see ../sockets-stub/stub.wit).
wasm-tools component embed --dummy ../sockets-stub -w sockets-stub -o "$tmp/stub-core.wasm"
wasm-tools component new "$tmp/stub-core.wasm" -o "$tmp/stub.wasm"
wasm-tools compose "$tmp/app.wasm" -d "$tmp/stub.wasm" -o "$out/csv_stats.wasm" >/dev/null 2>&1 ||
    wasm-tools compose "$tmp/app.wasm" -d "$tmp/stub.wasm" -o "$out/csv_stats.wasm"
echo "csv_stats: $out/csv_stats.wasm ($(( $(wc -c <"$out/csv_stats.wasm") / 1024 )) KB)"
