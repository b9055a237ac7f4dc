#!/usr/bin/env bash
# Writes host/hot-code.txt, the functions of the daemon's everyday path that the linker places side
# by side (host/build.rs, BENCHMARKS-history.md "Code layout"): builds the release binary without that
# layout, runs it under callgrind over stdio and HTTP (scripts/hot-code.py), then builds it again
# with the new list, and checks it with tests/e2e/layout.rs. Run it after changes that move the
# everyday path (about 5 min on 2 cores, plus building the e2e tests if they are not built); a stale
# list only leaves more of the code where the compiler put it (the layout test warns about it).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

command -v valgrind >/dev/null || { echo "hot-code.sh: needs valgrind" >&2; exit 2; }
scripts/build-plugins.sh --langs none >/dev/null
TOOLHOST_HOT_CODE=off cargo build --release -p toolhost --bin toolhost --quiet
python3 scripts/hot-code.py --toolhost target/release/toolhost --plugins plugins \
    --waiting target/fixtures/hostile.wasm --out host/hot-code.txt
cargo build --release -p toolhost --bin toolhost --quiet
# The list just written must match the build it is for: here a stale list fails (elsewhere the
# layout test only warns about it).
TOOLHOST_REQUIRE_HOT_CODE=1 cargo test --release -p toolhost --test e2e --quiet -- layout::
