#!/usr/bin/env bash
# Offline checks of the deployment files (deploy/Dockerfile, deploy/kubernetes overlays,
# deploy/prometheus) and of the release (scripts/release.sh, .github/workflows/release.yml):
# schemas, production properties, each overlay's toolhost.toml in the real binary, /ready of the
# embedded-store overlays, registry plugins through the init container, the release archive.
#
#   tests/deploy/run.sh [--config-only]
#
# No cluster, Docker daemon or network beyond 127.0.0.1 and the first pip install. Installs
# tests/deploy/requirements.txt into the venv .venv at the repository root (PyPI only).
# TOOLHOST_BIN overrides the binary (default target/release/toolhost, under CARGO_TARGET_DIR when
# set; absent means (d) to (f) are skipped); TOOLHOST_PLUGINS_DIR the built example plugins (default
# plugins/).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh" || exit 1

venv="$root/.venv"
python_venv "$venv" "$root/tests/deploy/requirements.txt" .deploy-requirements.sha256

TOOLHOST_BIN="${TOOLHOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/toolhost}" \
    exec "$venv/bin/python" "$root/tests/deploy/check.py" "$@"
