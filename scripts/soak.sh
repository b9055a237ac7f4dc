#!/usr/bin/env bash
# Load with faults against one real daemon on loopback (tests/e2e/soak.rs): CALLS calls from CLIENTS
# concurrent HTTP clients, a tenth of them to hostile tools (CPU loops stopped at 200 ms, memory
# bombs, traps, a sleep in a host call), while a plugin file is replaced twice. It stops by itself:
# no new call starts after MAX_SECS, and the whole run is killed after MAX_SECS + 5 minutes.
#
#   scripts/soak.sh [CALLS [CLIENTS]]      # default 100000 calls, 16 clients
#   TOOLHOST_SOAK_HOSTILE_PERCENT=10 TOOLHOST_SOAK_MAX_SECS=1800 scripts/soak.sh
#
# Prints the report (calls answered, outcomes by kind, healthy-call latency calm vs under attack,
# daemon RSS before/after/peak, audit lines vs calls) and writes it to target/soak-report.json.
# The CI runs the same test with 2,000 calls as part of `cargo test`.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

export TOOLHOST_SOAK_CALLS="${1:-100000}"
export TOOLHOST_SOAK_CLIENTS="${2:-16}"
export TOOLHOST_SOAK_HOSTILE_PERCENT="${TOOLHOST_SOAK_HOSTILE_PERCENT:-10}"
export TOOLHOST_SOAK_MAX_SECS="${TOOLHOST_SOAK_MAX_SECS:-1800}"
export TOOLHOST_SOAK_REPORT="${TOOLHOST_SOAK_REPORT:-$PWD/target/soak-report.json}"

build_plugins_and_host --test e2e >/dev/null
echo "soak: $TOOLHOST_SOAK_CALLS calls, $TOOLHOST_SOAK_CLIENTS clients, ${TOOLHOST_SOAK_HOSTILE_PERCENT}% hostile, at most ${TOOLHOST_SOAK_MAX_SECS}s"
timeout --kill-after=30 "$((TOOLHOST_SOAK_MAX_SECS + 300))" \
  cargo test --release --locked --test e2e soak::soak_under_faults -- --exact --nocapture --test-threads 1
echo "soak: report written to $TOOLHOST_SOAK_REPORT"
