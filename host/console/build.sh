#!/bin/sh
# Builds the console into dist/ (committed: the daemon embeds it, so `cargo install` needs no npm).
# Deterministic: the same sources and lock give byte-identical dist/ (no timestamps, no hashes).
set -eu
cd "$(dirname "$0")"

node check.mjs

# npm ci only when node_modules is missing or the lock changed since the last install.
stamp=node_modules/.toolhost-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  nice npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi

mkdir -p dist
# app.js and, from the CSS the sources import (uPlot's and ours), app.css beside it.
nice node_modules/.bin/esbuild src/main.jsx \
  --bundle --minify --format=esm --target=es2020 --platform=browser \
  --jsx=automatic --jsx-import-source=preact \
  --charset=utf8 --legal-comments=none --log-level=warning \
  "--banner:js=/*! toolhost console | preact (MIT) (c) 2015-present Jason Miller | uPlot (MIT) (c) 2022 Leon Sorokin, https://github.com/leeoniya/uPlot */" \
  --outfile=dist/app.js
cp src/index.html dist/index.html

ls -l dist/ | awk 'NR > 1 { printf "  %s %s bytes\n", $NF, $5 }'
