# Sourced, never run: the prologue of the repository's scripts (scripts/*.sh, .ci/run, the test runners
# under tests/mcp/) and the steps several of them take, written once.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1        # the path is relative to the script
#
# After it the script runs in bash's strict mode, from the repository root, which is in $root; a
# relative TOOLHOST_BIN was made absolute first (against the directory the script was started from),
# so that it names the same file whichever directory a script or its test runner moves to.

set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${TOOLHOST_BIN:-}" && "$TOOLHOST_BIN" != /* ]]; then
    TOOLHOST_BIN="$PWD/$TOOLHOST_BIN"
fi
cd "$root"

# The targets the plugins build for: wasm32-wasip2, and wasm32-unknown-unknown for the plugins that
# need no WASI at all (scripts/build-plugins.sh). Cheap when installed; on failure, run again so that
# rustup's own message is shown (RUSTUP_AUTO_INSTALL=0 means nothing else installs them).
wasm_target() {
    local t
    for t in wasm32-wasip2 wasm32-unknown-unknown; do
        rustup target add "$t" >/dev/null 2>&1 || rustup target add "$t" || return 1
    done
}

# build_plugins_and_host [CARGO BUILD ARGS...]: the plugins and test fixtures (scripts/build-plugins.sh,
# which installs the wasm target), then the release binary, with whatever else the arguments add
# (e.g. --test e2e).
build_plugins_and_host() {
    "$root/scripts/build-plugins.sh"
    cargo build --release --locked --bin toolhost "$@"
}

# python_venv VENV REQUIREMENTS STAMP: create the virtualenv VENV if it is missing (with $PYTHON, else
# python3) and install REQUIREMENTS (PyPI only) into it whenever that file changed since the last
# install. STAMP, a file name inside VENV, remembers the installed file's hash: .venv also holds the
# plugin toolchains (scripts/toolchains.sh), so each requirements file keeps its own stamp.
python_venv() {
    local venv="$1" requirements="$2" stamp="$1/$3" want
    if [[ ! -x "$venv/bin/python" ]]; then
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    want="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
        echo "$want" >"$stamp"
    fi
}
