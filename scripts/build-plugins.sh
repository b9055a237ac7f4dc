#!/usr/bin/env bash
# Build the Rust guest components (wasm32-wasip2) with one cargo invocation:
#   example plugins -> plugins/{echo,math,fs}.wasm
#   test fixtures   -> target/fixtures/{hostile,describe_traps,...}.wasm
# Needs only rustup and cargo; callable from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target=wasm32-wasip2
examples=(echo math fs)
fixtures=(hostile)
# Example targets of the contract crate, one component each.
contract=(describe_traps describe_spins bad_schema dup_names bad_name many_tools net_import)

# Cheap when the target is already installed; RUSTUP_AUTO_INSTALL=0 means nothing else installs it.
rustup target add "$target" >/dev/null 2>&1 || rustup target add "$target"

start=$SECONDS
# --lib builds every selected package's cdylib, --examples the contract crate's components.
cargo build --release --target "$target" --lib --examples \
    -p toolhost-plugin-echo \
    -p toolhost-plugin-math \
    -p toolhost-plugin-fs \
    -p toolhost-fixture-hostile \
    -p toolhost-fixture-contract

target_dir="$(cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
out="${target_dir:-$root/target}/$target/release"
mkdir -p "$root/plugins" "$root/target/fixtures"

summary=()
copy() { # copy SRC DEST_DIR
    cp "$1" "$2/"
    summary+=("$(basename "$1") $(( $(wc -c <"$1") / 1024 ))K")
}
for name in "${examples[@]}"; do copy "$out/$name.wasm" "$root/plugins"; done
for name in "${fixtures[@]}"; do copy "$out/$name.wasm" "$root/target/fixtures"; done
for name in "${contract[@]}"; do copy "$out/examples/$name.wasm" "$root/target/fixtures"; done

echo "build-plugins: $(( SECONDS - start ))s; plugins/: ${summary[*]:0:${#examples[@]}}; target/fixtures/: ${summary[*]:${#examples[@]}}"
