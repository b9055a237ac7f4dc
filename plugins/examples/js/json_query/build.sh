#!/usr/bin/env bash
# Builds json_query.wasm (JavaScript: jco 1.35.0 with its QuickJS backend, componentize-qjs 0.4.5, pinned
# in package-lock.json) into OUT_DIR (default: target/examples). A few seconds; the component is about
# 1.8 MB. QuickJS rather than StarlingMonkey (componentize-js): a call costs a fifth of the CPU on a small
# file and a third on a large one, and the component compiles in a seventh of the time (BENCHMARKS.md).
# Toolchain: node >= 18 and the locked packages here (scripts/toolchains.sh --langs js installs them).
#   build.sh [OUT_DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="${1:-$root/target/examples}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"

jco=node_modules/.bin/jco
if [ ! -x "$jco" ]; then
    echo "json_query: $here/$jco is missing; run scripts/toolchains.sh --langs js" >&2
    exit 2
fi
node --test >/dev/null || { node --test; exit 1; }

# The world's dependencies: the contract, and the WASI 0.2.12 packages that jco ships.
wit="$(mktemp -d)"
trap 'rm -rf "$wit"' EXIT
builtin=node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12
mkdir -p "$wit/deps/toolhost-plugin"
cp wit/world.wit "$wit/"
cp "$root/wit/plugin.wit" "$wit/deps/toolhost-plugin/"
for pkg in io clocks filesystem; do
    mkdir -p "$wit/deps/wasi-$pkg"
    cp "$builtin/wasi-$pkg/package.wit" "$wit/deps/wasi-$pkg/"
done

# --backend-qjs-disable-async: the contract's functions are synchronous (no component-model async ABI).
# --bundle: app.js imports ./query.js; the engine takes a single module.
"$jco" componentize app.js --bundle --wit "$wit" --world-name plugin-fs \
    --backend qjs --backend-qjs-disable-async \
    --bundle-config bundle.config.js -o "$out/json_query.wasm" >/dev/null
echo "json_query: $out/json_query.wasm ($(( $(wc -c <"$out/json_query.wasm") / 1024 )) KB)"
