#!/usr/bin/env bash
# Package a release: toolhost-VERSION-x86_64-unknown-linux-gnu.tar.gz, holding the binary, README.md,
# the example plugins and a SHA256SUMS of its files, plus a SHA256SUMS of the archive beside it.
# VERSION is host/Cargo.toml's (the workspace's). The release workflow (.github/workflows/release.yml)
# runs it on a v* tag; it runs here as well.
#
#   scripts/release.sh [--binary PATH] [--plugins DIR] [--out DIR] [--tag vVERSION]
#
#   --binary PATH   an already built toolhost for x86_64 Linux; default: build it with the `dist`
#                   profile (cargo build --locked --profile dist -p toolhost)
#   --plugins DIR   where echo, math, fs, fetch, github and search_tools.wasm are; default: build them
#                   (scripts/build-plugins.sh --langs none, into plugins/)
#   --out DIR       where the archive and SHA256SUMS go; default: target/release-dist
#   --tag vVERSION  fail unless the tag names host/Cargo.toml's version (the workflow passes its tag)
#
# The archive is reproducible from the same inputs: sorted entries, owner 0, and every mtime set to
# the last commit's time (SOURCE_DATE_EPOCH, when set, wins).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

triple=x86_64-unknown-linux-gnu
examples=(echo math fs fetch github search_tools)
binary="" plugins="" out="$root/target/release-dist" tag=""
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --plugins) plugins="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "release: unknown argument '$1' (--binary PATH, --plugins DIR, --out DIR, --tag vVERSION)" >&2; exit 2 ;;
    esac
done
# Relative paths are taken from where the script was started, like TOOLHOST_BIN.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$OLDPWD/$1" ;; esac; }
[ -n "$binary" ] && binary="$(abs "$binary")"
[ -n "$plugins" ] && plugins="$(abs "$plugins")"
out="$(abs "$out")"

# The version: host/Cargo.toml's own, or the workspace's when it inherits it.
version="$(python3 - <<'EOF'
import tomllib
host = tomllib.load(open("host/Cargo.toml", "rb"))["package"]["version"]
if isinstance(host, dict) and host.get("workspace"):
    host = tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["version"]
print(host)
EOF
)"
if [ -n "$tag" ] && [ "$tag" != "v$version" ]; then
    echo "release: the tag $tag does not name host/Cargo.toml's version $version (expected v$version)" >&2
    exit 1
fi

if [ -z "$plugins" ]; then
    scripts/build-plugins.sh --langs none
    plugins="$root/plugins"
fi
if [ -z "$binary" ]; then
    cargo build --locked --profile dist -p toolhost
    binary="$root/target/dist/toolhost"
fi
[ -x "$binary" ] || { echo "release: $binary is not an executable file" >&2; exit 1; }
# An x86-64 ELF: the name of the archive says so (e_machine 0x3e, little-endian, at byte 18).
if [ "$(head -c 4 "$binary" | od -An -c | tr -d ' ')" != '177ELF' ] \
    || [ "$(od -An -tx1 -j18 -N2 "$binary" | tr -d ' ')" != 3e00 ]; then
    echo "release: $binary is not an x86-64 ELF executable" >&2
    exit 1
fi
# `toolhost --version` says the version, then the commit it was built from: `toolhost 0.1.0 (commit …)`.
reported="$("$binary" --version)"
case "$reported" in
    "toolhost $version" | "toolhost $version ("*) ;;
    *)
        echo "release: $binary says '$reported', expected 'toolhost $version (commit …)' (host/Cargo.toml)" >&2
        exit 1
        ;;
esac

name="toolhost-$version-$triple"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/$name"
install -d "$stage/plugins"
install -m 0755 "$binary" "$stage/toolhost"
install -m 0644 README.md "$stage/README.md"
for p in "${examples[@]}"; do
    [ -f "$plugins/$p.wasm" ] || { echo "release: $plugins/$p.wasm is missing (scripts/build-plugins.sh --langs none)" >&2; exit 1; }
    install -m 0644 "$plugins/$p.wasm" "$stage/plugins/$p.wasm"
done
(cd "$stage" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)

epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
mkdir -p "$out"
archive="$out/$name.tar.gz"
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    --format=gnu -cf - "$name" | gzip -n >"$archive"
(cd "$out" && sha256sum "$name.tar.gz" >SHA256SUMS)
echo "release: $archive ($(( $(wc -c <"$archive") / 1024 / 1024 )) MB), $out/SHA256SUMS"
