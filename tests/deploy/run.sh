#!/usr/bin/env bash
# Offline checks of the deployment files (deploy/Dockerfile, deploy/kubernetes): schemas, production
# properties, and the ConfigMap's toolhost.toml loaded by the real binary when there is one.
#
#   tests/deploy/run.sh [--config-only]
#
# No cluster, Docker daemon or network beyond the first pip install. Installs
# tests/deploy/requirements.txt into the venv .venv at the repository root (PyPI only).
# TOOLHOST_BIN overrides the binary (default target/release/toolhost; absent means (d) is skipped).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh" || exit 1

venv="$root/.venv"
python_venv "$venv" "$root/tests/deploy/requirements.txt" .deploy-requirements.sha256

TOOLHOST_BIN="${TOOLHOST_BIN:-$root/target/release/toolhost}" \
    exec "$venv/bin/python" "$root/tests/deploy/check.py" "$@"
