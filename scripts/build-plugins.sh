#!/usr/bin/env bash
# Build the Rust guest components, for wasm32-wasip2 with one cargo invocation:
#   example plugins -> plugins/{math,fs,fetch,github,search_tools,fetch_many}.wasm (fetch_many: WASI 0.3)
#   test fixtures   -> target/fixtures/{hostile,describe_traps,...,async_tools}.wasm (async_tools: WASI 0.3)
# and the plugins that need no WASI at all with a second one, for wasm32-unknown-unknown:
#   plugins/echo.wasm
# Needs only rustup and cargo; callable from any directory.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

# Plugins in other languages (the section at the end): --langs LIST or TOOLHOST_LANGS=LIST picks them
# (python,js,c,go, or "none"); by default every one whose toolchain scripts/toolchains.sh finds ready.
langs="${TOOLHOST_LANGS:-}"
while [ $# -gt 0 ]; do
    case "$1" in
        --langs) langs="$2"; shift 2 ;;
        --langs=*) langs="${1#--langs=}"; shift ;;
        *) echo "build-plugins: unknown argument '$1' (--langs python,js,c,go|none)" >&2; exit 2 ;;
    esac
done

target=wasm32-wasip2
examples=(math fs fetch github search_tools fetch_many)
# Built without WASI: their components import only the contract (the second build below).
bare=(echo)
fixtures=(hostile generic async_tools)
# Example targets of the fixture crates (contract, async), one component each.
contract=(describe_traps describe_spins bad_schema dup_names bad_name many_tools net_import tool_caller generic_async)

wasm_target

start=$SECONDS
# Guests may use WebAssembly SIMD (wasmtime runs it on every host it supports): memchr, the regex
# crate's prefilters and LLVM's loops use it. The fs plugin's grep measured 15-20% faster with it
# (BENCHMARKS-history.md). Only the guests' target gets the flag; the host's build is untouched.
export CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="${CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS:--C target-feature=+simd128}"
# --lib builds every selected package's cdylib, --examples the contract crate's components.
cargo build --release --target "$target" --lib --examples \
    -p toolhost-plugin-math \
    -p toolhost-plugin-fs \
    -p toolhost-plugin-fetch \
    -p toolhost-plugin-github \
    -p toolhost-plugin-search \
    -p toolhost-plugin-fetch-many \
    -p toolhost-fixture-hostile \
    -p toolhost-fixture-contract \
    -p toolhost-fixture-generic \
    -p toolhost-fixture-async

# A tool that needs no files, clock, randomness or environment is built without WASI: Rust's standard
# library for wasm32-wasip2 imports about twenty WASI functions and brings two more core modules to
# reach them, all set up again in every call's fresh instance (BENCHMARKS-history.md, "the same echo without
# WASI"). The toolchain's own wasm-component-ld, the wasip2 target's linker, makes the component.
component_ld="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/wasm-component-ld"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$component_ld" \
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS:--C target-feature=+simd128}" \
    cargo build --release --target wasm32-unknown-unknown --lib "${bare[@]/#/--package=toolhost-plugin-}"

target_dir="$(cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
out="${target_dir:-$root/target}/$target/release"
bare_out="${target_dir:-$root/target}/wasm32-unknown-unknown/release"
mkdir -p "$root/plugins" "$root/target/fixtures"

summary=()
copy() { # copy SRC DEST_DIR
    cp "$1" "$2/"
    summary+=("$(basename "$1") $(( $(wc -c <"$1") / 1024 ))K")
}
for name in "${examples[@]}"; do copy "$out/$name.wasm" "$root/plugins"; done
for name in "${bare[@]}"; do copy "$bare_out/$name.wasm" "$root/plugins"; done
for name in "${fixtures[@]}"; do copy "$out/$name.wasm" "$root/target/fixtures"; done
for name in "${contract[@]}"; do copy "$out/examples/$name.wasm" "$root/target/fixtures"; done

shown=$(( ${#examples[@]} + ${#bare[@]} ))
echo "build-plugins: $(( SECONDS - start ))s; plugins/: ${summary[*]:0:$shown}; target/fixtures/: ${summary[*]:$shown}"

# --- Plugins in other languages ---------------------------------------------------------------------
# Each example under plugins/examples/{python,js,c,go}/ has a build.sh; its component goes to plugins/.
# Install the toolchains with scripts/toolchains.sh. A language asked for by --langs/TOOLHOST_LANGS must
# build; by default a language whose toolchain is missing is reported SKIPPED and the rest go on.
# Cost on 2 cores: python 20-25 s, js 25-40 s, c 2 s, go 10-25 s (first build). Loading costs too: the
# host compiles a Python or JS component in 15-20 s on first load (then the compile cache loads it in
# about 150 ms), a Go one in about 6 s; plugins/README.md has the measured table.
strict=1
[ -z "$langs" ] && { langs=python,js,c,go; strict=0; }
[ "$langs" = none ] && langs=""
built=() skipped=()
IFS=',' read -r -a wanted <<<"$langs"
for lang in "${wanted[@]}"; do
    if ! status="$(scripts/toolchains.sh --check --langs "$lang")"; then
        echo "build-plugins: $lang SKIPPED: ${status#*SKIPPED: } (scripts/toolchains.sh --langs $lang installs it)"
        [ "$strict" = 1 ] && exit 1
        skipped+=("$lang")
        continue
    fi
    for build in "$root"/plugins/examples/"$lang"/*/build.sh; do
        [ -x "$build" ] || continue
        t=$SECONDS
        "$build" "$root/plugins" >/dev/null
        name="$(basename "$(dirname "$build")")"
        built+=("$name.wasm ($lang) $(( $(wc -c <"$root/plugins/$name.wasm") / 1024 ))K $((SECONDS - t))s")
    done
done
if [ "${#wanted[@]}" -gt 0 ]; then
    list="$(printf '%s, ' "${built[@]}")"
    list="${list%, }"
    echo "build-plugins: other languages: ${list:-none built}${skipped[*]:+; skipped: ${skipped[*]}}"
fi
