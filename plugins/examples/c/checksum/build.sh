#!/usr/bin/env bash
# Builds checksum.wasm (C) into OUT_DIR (default: target/examples). About 2 s; the component is about
# 100 KB. Toolchain (scripts/toolchains.sh --langs c installs it): Debian clang-19, lld-19, wasi-libc
# and libclang-rt-19-dev-wasm32; wit-bindgen 0.63 (C bindings); wasm-tools 1.262; the WASI preview-1
# reactor adapter of wasmtime 48.0.8 (Debian's wasi-libc speaks preview 1; the adapter maps it to the
# WASI 0.2 imports the host provides).
#   build.sh [OUT_DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="${1:-$root/target/examples}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# shellcheck disable=SC1091
[ -f "$root/.toolhost/tools/env.sh" ] && . "$root/.toolhost/tools/env.sh"
cc="${WASI_CC:-clang-19}"
for tool in "$cc" wit-bindgen wasm-tools; do
    command -v "$tool" >/dev/null ||
        { echo "checksum: $tool not found; run scripts/toolchains.sh --langs c" >&2; exit 2; }
done
adapter="${TOOLHOST_WASI_ADAPTER:-}"
[ -f "$adapter" ] || { echo "checksum: the WASI adapter is missing; run scripts/toolchains.sh --langs c" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! log="$(wit-bindgen c "$root/wit" --world plugin --out-dir "$tmp" 2>&1)"; then echo "$log" >&2; exit 1; fi
# A reactor: no main(); the host calls the exports, each call in a fresh instance. --strip-debug:
# Debian's wasi-libc carries DWARF, which would be two thirds of the component.
"$cc" --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Werror \
    -Wl,--strip-debug -I "$tmp" -I "$here" \
    "$here/checksum.c" "$here/hash.c" "$here/json.c" "$tmp/plugin.c" "$tmp/plugin_component_type.o" \
    -o "$tmp/core.wasm"
wasm-tools component new "$tmp/core.wasm" --adapt "wasi_snapshot_preview1=$adapter" -o "$out/checksum.wasm"
echo "checksum: $out/checksum.wasm ($(( $(wc -c <"$out/checksum.wasm") / 1024 )) KB)"
