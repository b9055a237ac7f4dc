#!/usr/bin/env bash
# Builds run_script.wasm (JavaScript: jco 1.35.0 + componentize-js 0.22.0, pinned in package-lock.json)
# into OUT_DIR (default: target/examples). About 25-40 s on 2 cores; the component is about 14 MB.
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
    echo "run_script: $here/$jco is missing; run scripts/toolchains.sh --langs js" >&2
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

# -d http fetch-event: without it the engine imports wasi:http, which the host does not provide.
# --bundle: app.js imports ./query.js; componentize-js takes a single module.
"$jco" componentize app.js --bundle --wit "$wit" --world-name runner -d http fetch-event \
    --bundle-config bundle.config.js -o "$out/run_script.wasm" >/dev/null
echo "run_script: $out/run_script.wasm ($(( $(wc -c <"$out/run_script.wasm") / 1024 )) KB)"
