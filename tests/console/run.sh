#!/usr/bin/env bash
# The operator's console in a real browser (console.test.mjs): Debian's Chromium driven by npm
# playwright-core, against the real daemon with the echo and hostile plugins, MCP calls from the
# official TypeScript SDK 1.32 (both pinned in package.json and package-lock.json, installed into
# node_modules here whenever the lock changed). Each scenario starts its own daemon and browser;
# screenshots go to target/console-screenshots/. About 1 min, plus the npm install on first use.
#
# Needs target/release/toolhost (TOOLHOST_BIN overrides it), plugins/echo.wasm and
# target/fixtures/hostile.wasm (scripts/build-plugins.sh), and /usr/bin/chromium (scripts/services.sh;
# TOOLHOST_CHROMIUM overrides it). Without Chromium it prints SKIPPED, or fails when
# TOOLHOST_REQUIRE_SERVICES=1. Extra arguments go to `node --test` (e.g. --test-name-pattern='^9').
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh" || exit 1

here="$root/tests/console"
chromium="${TOOLHOST_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
    if [[ "${TOOLHOST_REQUIRE_SERVICES:-}" == 1 ]]; then
        echo "FAILED: tests/console: no Chromium at $chromium (scripts/services.sh installs it)" >&2
        exit 1
    fi
    echo "SKIPPED: tests/console: no Chromium at $chromium (scripts/services.sh installs it)"
    exit 0
fi

# npm ci only when node_modules is missing or the lock changed since the last install.
stamp="$here/node_modules/.toolhost-lock.sha256"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [[ ! -d "$here/node_modules" || ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi

# The page the daemon embeds must be the one its sources build (host/console/build.sh, deterministic):
# a change to host/console/src that was not rebuilt and committed fails here.
"$root/host/console/build.sh" >/dev/null
if ! git -C "$root" diff --quiet -- host/console/dist; then
    echo "FAILED: host/console/dist is not what host/console/src builds; run host/console/build.sh and commit dist/" >&2
    git -C "$root" diff --stat -- host/console/dist >&2
    exit 1
fi

export TOOLHOST_BIN="${TOOLHOST_BIN:-$root/target/release/toolhost}"
# TOOLHOST_CONSOLE_DIST (harness.mjs): the page's assets from that folder instead of the daemon's,
# relative to the directory this was started from (lib.sh moved to the root; cd set OLDPWD).
if [[ -n "${TOOLHOST_CONSOLE_DIST:-}" && "$TOOLHOST_CONSOLE_DIST" != /* ]]; then
    export TOOLHOST_CONSOLE_DIST="${OLDPWD:-$root}/$TOOLHOST_CONSOLE_DIST"
fi
export TOOLHOST_CHROMIUM="$chromium"
mkdir -p "$root/target/console-screenshots"
cd "$here"
# One scenario at a time (each has its own daemon and browser; the machine may have 2 cores).
timeout --kill-after=10 900 node --test --test-concurrency=1 --test-reporter=spec "$@" console.test.mjs
