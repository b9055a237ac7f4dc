#!/usr/bin/env bash
# Regenerates the cosign simple-signing fixtures with openssl, an implementation independent of
# toolhost's: two ECDSA P-256 key pairs, a payload bound to one manifest digest and repository, and
# its signature as cosign stores it (base64 of the DER signature over the payload's exact bytes).
# Test keys only: they sign nothing but these fixtures.
set -euo pipefail
cd "$(dirname "$0")"
for k in trusted other; do
    openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$k.key"
    openssl pkey -in "$k.key" -pubout -out "$k.pub"
done
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 2>/dev/null | openssl pkey -pubout -out rsa.pub
repo=127.0.0.1:5000/tools/echo
digest=sha256:4d3c1a7b0f2e9c8d6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f
printf '{"critical":{"identity":{"docker-reference":"%s"},"image":{"docker-manifest-digest":"%s"},"type":"cosign container image signature"},"optional":null}' \
    "$repo" "$digest" > payload.json
openssl dgst -sha256 -sign trusted.key payload.json | base64 -w0 > payload.sig
openssl dgst -sha256 -verify trusted.pub -signature <(base64 -d payload.sig) payload.json
rm -f trusted.key other.key
# A pair whose private half stays, for tests of `toolhost sign` (a test key: it signs nothing else).
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out signer.key
openssl pkey -in signer.key -pubout -out signer.pub
