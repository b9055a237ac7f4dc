#!/usr/bin/env bash
# Signs an artifact in cosign's format with tools other than toolhost (openssl and curl), so the
# tests prove toolhost reads what cosign writes rather than agreeing with itself:
#
#   cosign-sign.sh REGISTRY REPOSITORY DIGEST KEY [SIGNED_REPOSITORY [SIGNED_DIGEST]]
#
# writes the simple-signing payload naming SIGNED_REPOSITORY (default REGISTRY/REPOSITORY) and
# SIGNED_DIGEST (default DIGEST), signs it with KEY (PEM, ECDSA P-256), and pushes it with plain
# HTTP calls as the layer of the manifest tagged sha256-<hex of DIGEST>.sig, the signature base64 in
# the layer's dev.cosignproject.cosign/signature annotation. $REGISTRY_AUTH (USER:PASSWORD), when
# set, is sent as basic auth.
set -euo pipefail
registry=$1 repo=$2 digest=$3 key=$4
signed_repo=${5:-$registry/$repo}
signed_digest=${6:-$digest}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
auth=()
[ -n "${REGISTRY_AUTH:-}" ] && auth=(-u "$REGISTRY_AUTH")

printf '{"critical":{"identity":{"docker-reference":"%s"},"image":{"docker-manifest-digest":"%s"},"type":"cosign container image signature"},"optional":null}' \
    "$signed_repo" "$signed_digest" >"$tmp/payload"
signature=$(openssl dgst -sha256 -sign "$key" "$tmp/payload" | base64 -w0)

# A monolithic upload: POST for a session, PUT the bytes with their digest.
upload() {
    local file=$1 sum location sep
    sum=sha256:$(sha256sum "$file" | cut -d' ' -f1)
    location=$(curl -fsS "${auth[@]}" -X POST -D - -o /dev/null "http://$registry/v2/$repo/blobs/uploads/" |
        tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
    case "$location" in http*) ;; *) location="http://$registry$location" ;; esac
    case "$location" in *\?*) sep='&' ;; *) sep='?' ;; esac
    curl -fsS "${auth[@]}" -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary @"$file" "$location${sep}digest=$sum" -o /dev/null
    echo "$sum"
}

printf '{"architecture":"","config":{},"os":"","rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$(sha256sum "$tmp/payload" | cut -d' ' -f1)" >"$tmp/config"
config_digest=$(upload "$tmp/config")
payload_digest=$(upload "$tmp/payload")
cat >"$tmp/manifest" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
 "config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"$config_digest","size":$(stat -c%s "$tmp/config")},
 "layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"$payload_digest","size":$(stat -c%s "$tmp/payload"),
   "annotations":{"dev.cosignproject.cosign/signature":"$signature"}}]}
JSON
curl -fsS "${auth[@]}" -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
    --data-binary @"$tmp/manifest" "http://$registry/v2/$repo/manifests/sha256-${digest#sha256:}.sig" -o /dev/null
