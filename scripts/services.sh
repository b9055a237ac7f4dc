#!/usr/bin/env bash
# Installs the servers and tools the tests start on 127.0.0.1, from Debian packages:
#   docker-registry   the CNCF distribution server (tests/e2e/oci.rs pushes to and pulls from it)
#   openssl, curl     the independent cosign signer of those tests (tests/e2e/oci/cosign-sign.sh)
#   prometheus        scrapes the daemon's /metrics in tests/e2e/prometheus.rs
#   postgresql        the shared state store of tests/e2e/state.rs and tests/e2e/fleet.rs (the server
#                     binaries, /usr/lib/postgresql/<major>/bin; tests/e2e/services.rs runs initdb)
#   haproxy           the load balancer in front of several daemons in tests/e2e/fleet.rs
#   chromium          the headless browser of the console's tests (tests/console/), driven by npm's
#                     playwright-core
# Root, or passwordless sudo, installs what is missing (about 20 s); otherwise the script says what to
# install and exits 0, and the tests that need it print SKIPPED (or fail, with TOOLHOST_REQUIRE_SERVICES).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

missing=()
[ -x /usr/bin/docker-registry ] || command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x /usr/bin/prometheus ] || command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && { echo "services: ready"; exit 0; }

sudo=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
        echo "services: SKIPPED: not root; run 'sudo apt-get install ${missing[*]}'"
        exit 0
    fi
fi
command -v apt-get >/dev/null 2>&1 || { echo "services: SKIPPED: no apt-get; install ${missing[*]}"; exit 0; }
echo "services: apt-get install ${missing[*]}"
if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    $sudo apt-get update -q >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
        { echo "services: SKIPPED: apt-get install ${missing[*]} failed"; exit 0; }
fi
# The packages' own services (on :5000, :9090, :5432, haproxy's) are not ours: the tests start their
# own, on loopback.
$sudo systemctl disable --now docker-registry prometheus prometheus-node-exporter postgresql haproxy \
    >/dev/null 2>&1 || true
echo "services: ready"
