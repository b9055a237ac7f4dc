#!/usr/bin/env bash
# The fleet test (tests/e2e/fleet.rs) at soak size: three daemons on one PostgreSQL behind HAProxy,
# TASKS tasks (default 300) in flight when one daemon is killed with SIGKILL; every task must end
# `completed` or `failed` with a reason, and every accepted call must have its audit line.
#   scripts/fleet-soak.sh [TASKS]
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1
scripts/services.sh
build_plugins_and_host
TOOLHOST_REQUIRE_SERVICES=1 TOOLHOST_FLEET_TASKS="${1:-300}" \
    cargo test --release --locked --test e2e fleet -- --nocapture
