#!/usr/bin/env bash
# `scripts/serve.sh --stdio` as an MCP client launches it: one `initialize`, then stdin closes. Its
# stdout must hold that answer and nothing else (no build output, no log line), and it must exit
# once the answer is written. A few seconds once the host is built.
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh" || exit 1

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"serve-stdio","version":"1"}}}'
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if ! printf '%s\n' "$init" | timeout 300 scripts/serve.sh --stdio >"$out" 2>/dev/null; then
    echo "serve-stdio: scripts/serve.sh --stdio did not exit cleanly after stdin closed" >&2
    exit 1
fi
python3 - "$out" <<'PY'
import json, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8", "replace").splitlines()
bad = []
for line in lines:
    try:
        message = json.loads(line)
    except ValueError:
        bad.append(line)
        continue
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        bad.append(line)
if bad:
    sys.exit("serve-stdio: stdout holds lines that are not MCP messages:\n" + "\n".join(bad[:10]))
answers = [json.loads(l) for l in lines]
if len(answers) != 1 or answers[0].get("id") != 1 or "result" not in answers[0]:
    sys.exit(f"serve-stdio: expected exactly the answer to initialize, got {lines!r}")
print("serve-stdio: stdout holds only the MCP answer")
PY
