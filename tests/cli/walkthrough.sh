#!/usr/bin/env bash
# README's "The first hour", run as written in a fresh clone of the committed HEAD: each ```sh block
# marked `<!-- walkthrough: NAME -->` is taken from the clone's README (so a README change is what
# gets tested), the blocks run in order in one bash, and each block's output is checked below by
# NAME. A marked block without a check fails, so a new step comes with its check.
#
# Nothing is built: the clone gets what scripts/serve.sh leaves on a machine with Rust alone, the
# seven Rust example plugins (copied from this tree's plugins/) and the host (this tree's binary,
# TOOLHOST_BIN or $CARGO_TARGET_DIR/release/toolhost, on PATH). Running serve.sh in the clone
# instead would rebuild the host there (a clone's sources are newer than this tree's build) and
# replace this tree's binary with it. The daemon listens on a free port of 127.0.0.1 only; every
# process the walkthrough starts is in one process group, killed on the way out. About 5 s.
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh" || exit 1

bin="${TOOLHOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/toolhost}"
[[ "$bin" = /* ]] || bin="$root/$bin"
if [[ ! -x "$bin" ]]; then
    echo "walkthrough: no host binary at $bin (cargo build --release)" >&2
    exit 1
fi
examples=(echo math fs fetch github search_tools fetch_many)
for p in "${examples[@]}"; do
    if [[ ! -f "$root/plugins/$p.wasm" ]]; then
        echo "walkthrough: plugins/$p.wasm is not built (scripts/build-plugins.sh)" >&2
        exit 1
    fi
done

tmp="$(mktemp -d)"
group=""
# Stop whatever the walkthrough left running (SIGTERM, then SIGKILL after 10 s), then remove the clone.
cleanup() {
    if [[ -n "$group" ]] && kill -TERM -- "-$group" 2>/dev/null; then
        for _ in $(seq 100); do
            kill -0 -- "-$group" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$group" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

start=$SECONDS
git clone --quiet "$root" "$tmp/toolhost"
clone="$tmp/toolhost"
for p in "${examples[@]}"; do cp "$root/plugins/$p.wasm" "$clone/plugins/"; done
mkdir "$tmp/bin"
ln -s "$bin" "$tmp/bin/toolhost"

# The blocks, in README order, each preceded by a line naming it.
python3 - "$clone/README.md" >"$tmp/walkthrough.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"^<!-- walkthrough: ([a-z-]+) -->\n```sh\n(.*?)^```$", text, re.M | re.S)
markers = re.findall(r"^<!-- walkthrough: ([a-z-]+) -->$", text, re.M)
if not blocks or [name for name, _ in blocks] != markers:
    sys.exit(
        "walkthrough: README.md needs each <!-- walkthrough: NAME --> directly above a ```sh block; "
        f"markers {markers}, blocks {[name for name, _ in blocks]}"
    )
print("set -eu -o pipefail")
for name, body in blocks:
    print(f"printf '\\n@@ %s\\n' {name}")
    print(body, end="")
PY

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# The walkthrough in its own session and process group (setsid), so that cleanup reaches the daemon
# it starts in the background; a user's environment, not this script's.
(
    cd "$clone"
    for v in $(compgen -v TOOLHOST_); do unset "$v"; done
    export PATH="$tmp/bin:$PATH" PORT="$port" NO_COLOR=1
    exec setsid timeout 120 bash "$tmp/walkthrough.sh" >"$tmp/out" 2>&1
) &
group=$!
status=0
wait "$group" || status=$?

python3 - "$tmp/out" "$status" "$clone/README.md" <<'PY'
import json, re, sys

out, status, readme = open(sys.argv[1]).read(), int(sys.argv[2]), sys.argv[3]
steps = dict(re.findall(r"^@@ ([a-z-]+)\n(.*?)(?=^@@ |\Z)", out, re.M | re.S))
order = re.findall(r"^<!-- walkthrough: ([a-z-]+) -->$", open(readme).read(), re.M)
failures = []


def check(name, ok, message):
    if not ok:
        failures.append(f"{name}: {message}")


def json_lines(text):
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
    return found


def setup(t):
    check("setup", re.search(r"^toolhost \S+ \((commit \S+|unknown commit)", t, re.M), f"no version line: {t!r}")


def list_(t):
    for tool in ("echo", "read_file", "list_dir", "calc", "fetch"):
        check("list", re.search(rf"^{tool} ", t, re.M), f"`toolhost list` does not list {tool}")
    check("list", "plugin fs from ./plugins/fs.wasm" in t, "no provenance line for fs")
    check("list", "names no plugin" not in t, "a [plugins.X] section names a plugin that is not built")


def call(t):
    check("call", re.search(r"^hello$", t, re.M), "echo did not answer hello")
    check("call", re.search(r"^rust/$", t, re.M), "list_dir . does not show rust/")
    check("call", '[package]\nname = "toolhost-plugin-echo"' in t, "read_file did not return the first 2 lines")
    check("call", "Operation not permitted" in t and re.search(r"^exit 1$", t, re.M), "reading outside the grant was not refused with exit 1")


def grant(t):
    check("grant", "holds none of toolhost's own files" in t and re.search(r"^exit 2$", t, re.M), "granting the repository root was not refused with exit 2")
    check("grant", "granted: fs dir docs" in t, "the docs grant was not written")
    check("grant", re.search(r"^console\.md ", t, re.M), "list_dir docs does not show console.md")
    check("grant", "revoked: fs dir docs" in t, "the docs grant was not revoked")


def serve(t):
    check("serve", '{"status":"ready"}' in t, f"/ready did not answer ready: {t!r}")


def mcp(t):
    answers = {m.get("id"): m for m in json_lines(t)}
    init = answers.get(1, {}).get("result", {})
    check("mcp", init.get("serverInfo", {}).get("name") == "toolhost", "initialize was not answered by toolhost")
    names = re.findall(r'^"name":"([a-z_]+)"$', t, re.M)
    check("mcp", {"echo", "read_file", "calc"} <= set(names), f"tools/list names {names}")
    result = answers.get(3, {}).get("result", {})
    check("mcp", result.get("isError") is False and result.get("structuredContent") == {"text": "hello over HTTP"}, f"tools/call echo: {answers.get(3)}")
    return (result.get("_meta") or {}).get("toolhost/callId")


def audit(t, call_id):
    check("audit", re.search(r"^echo\s+2\s+2\s+0\s", t, re.M), "the summary does not show echo's 2 calls, both ok")
    records = json_lines(t)
    last = records[-1] if records else {}
    check("audit", last.get("origin") == "mcp" and last.get("tool") == "echo" and last.get("outcome") == "ok", f"last echo record: {last}")
    check("audit", call_id and last.get("call_id") == call_id, f"the record's call_id {last.get('call_id')} is not the answer's {call_id}")


checks = {"setup": setup, "list": list_, "call": call, "grant": grant, "serve": serve, "mcp": mcp}
call_id = None
for name in order:
    if name not in steps:
        failures.append(f"{name}: did not run (an earlier block failed)")
        break
    if name == "mcp":
        call_id = mcp(steps[name])
    elif name == "audit":
        audit(steps[name], call_id)
    elif name in checks:
        checks[name](steps[name])
    else:
        failures.append(f"{name}: no check for this walkthrough step in tests/cli/walkthrough.sh")
if status != 0:
    failures.append(f"the walkthrough exited {status}" + (" (timed out after 120 s)" if status == 124 else ""))
if failures:
    print(out, file=sys.stderr)
    sys.exit("walkthrough: " + "\nwalkthrough: ".join(failures))
print(f"walkthrough: README's {len(order)} blocks ran in a fresh clone: {', '.join(order)}")
PY
echo "walkthrough: $((SECONDS - start)) s"
