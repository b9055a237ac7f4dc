#!/usr/bin/env bash
# Builds the JavaScript generic fixture (jco componentize against ../wit, world `shapes`) into OUT_DIR
# as generic_js.wasm, with the jco that plugins/examples/js/json_query pins (scripts/toolchains.sh
# --langs js installs it). About 25 s on 2 cores; about 14 MB.
#   build.sh OUT_DIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
jco="$root/plugins/examples/js/json_query/node_modules/.bin/jco"
if [ ! -x "$jco" ]; then
    echo "generic_js: $jco is missing; run scripts/toolchains.sh --langs js" >&2
    exit 2
fi
cd "$here"
# -d http fetch-event: without it the engine imports wasi:http, which a plugin without a grant cannot use.
"$jco" componentize app.js --wit ../wit --world-name shapes -d http fetch-event \
    -o "$out/generic_js.wasm" >/dev/null
