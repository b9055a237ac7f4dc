#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what it needs, builds the plugins and the host once,
# then runs the Rust tests (unit + end-to-end), the tests with real MCP clients and the MCP
# conformance suite.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

# The Python, JavaScript, C and Go toolchains (pinned, project-local) for the plugins in those languages
# and their tests (tests/e2e/languages.rs). On a fresh 2-core machine about 6-9 min, most of it building
# wit-bindgen-cli once; then about a second. What cannot be installed here is reported, and its tests
# print SKIPPED (or fail, for the languages TOOLHOST_REQUIRE_LANGS lists).
scripts/toolchains.sh
# The OCI registry (Debian's docker-registry), openssl and curl for tests/e2e/oci.rs: about 20 s once.
scripts/services.sh
# The OTLP receiver of tests/e2e/telemetry.rs (opentelemetry-proto, in the repository's .venv).
python_venv .venv tests/telemetry/requirements.txt .telemetry-requirements.sha256
# sigstore-python, which signs and checks the Sigstore bundles of tests/e2e/oci/sigstore.rs against a test
# Fulcio and Rekor on loopback (its own venv: it pins cryptography and pydantic): about 15 s once.
python_venv .venv-sigstore tests/e2e/oci/sigstore/requirements.txt .requirements.sha256
build_plugins_and_host
# `scripts/serve.sh --stdio`: stdout is the MCP channel, and nothing but MCP may go there (the build's
# output goes to stderr). A client that sends `initialize` and closes stdin gets exactly its answer.
tests/cli/serve-stdio.sh
# README's "The first hour", block by block, in a fresh clone of HEAD with the binary and plugins just
# built: about 5 s.
tests/cli/walkthrough.sh
cargo test --release --locked
if [ -x tests/mcp/run.sh ]; then
  tests/mcp/run.sh
fi
# The deployment files (deploy/): Kubernetes schemas (kubernetes-validate, offline), the production
# properties of the manifests and the Dockerfile, and the ConfigMap's toolhost.toml loaded by the
# binary: a few seconds, plus the pip install on first use.
tests/deploy/run.sh
# The MCP conformance suite over HTTP, against tests/mcp/conformance/expected-failures.yaml: about 30 s,
# plus 1-2 min on first use (Node 22 and the suite from npm, the conformance plugin).
tests/mcp/conformance/run.sh
# Official clients written by others (Python mcp 1.12, TypeScript SDK 1.32 and v2 2.4) over stdio and HTTP: about
# 20 s, plus their installs on first use (~1.5 min).
tests/mcp/clients/run.sh
# The operator's console in a real browser (Debian's Chromium, playwright-core; tests/console/): about
# 1-2 min, plus the npm install on first use (~10 s); SKIPPED without /usr/bin/chromium.
tests/console/run.sh
