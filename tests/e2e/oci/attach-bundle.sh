#!/usr/bin/env bash
# Attaches a Sigstore bundle to an artifact the way cosign 3 does, with curl, not toolhost:
#
#   attach-bundle.sh REGISTRY REPOSITORY DIGEST BUNDLE [INDEX_ARTIFACT_TYPE]
#
# pushes an OCI 1.1 referrer: a manifest with artifactType application/vnd.dev.sigstore.bundle.v0.3+json,
# the empty config, the bundle as its one layer and `subject` naming DIGEST; and, for registries without
# the referrers API, the referrers tag scheme's image index under the tag sha256-<hex of DIGEST>, whose
# entry has the bundle's artifact type as cosign 3.1 writes it, or INDEX_ARTIFACT_TYPE (cosign 3.0
# wrote application/vnd.oci.empty.v1+json).
set -euo pipefail
registry=$1 repo=$2 digest=$3 bundle=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
type=application/vnd.dev.sigstore.bundle.v0.3+json
index_type=${5:-$type}

upload() {
    local file=$1 sum location sep
    sum=sha256:$(sha256sum "$file" | cut -d' ' -f1)
    location=$(curl -fsS -X POST -D - -o /dev/null "http://$registry/v2/$repo/blobs/uploads/" |
        tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
    case "$location" in http*) ;; *) location="http://$registry$location" ;; esac
    case "$location" in *\?*) sep='&' ;; *) sep='?' ;; esac
    curl -fsS -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary @"$file" "$location${sep}digest=$sum" -o /dev/null
    echo "$sum"
}

# The subject: the signed manifest's media type and size, as the registry serves it.
curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$registry/v2/$repo/manifests/$digest" -o "$tmp/subject"
printf '{}' >"$tmp/empty"
empty=$(upload "$tmp/empty")
layer=$(upload "$bundle")
cat >"$tmp/manifest" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"$type",
 "config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"$empty","size":2},
 "layers":[{"mediaType":"$type","digest":"$layer","size":$(stat -c%s "$bundle")}],
 "subject":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"$digest","size":$(stat -c%s "$tmp/subject")},
 "annotations":{"dev.sigstore.bundle.content":"message-signature"}}
JSON
referrer=sha256:$(sha256sum "$tmp/manifest" | cut -d' ' -f1)
curl -fsS -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
    --data-binary @"$tmp/manifest" "http://$registry/v2/$repo/manifests/$referrer" -o /dev/null
cat >"$tmp/index" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json",
 "manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"$referrer","size":$(stat -c%s "$tmp/manifest"),"artifactType":"$index_type"}]}
JSON
curl -fsS -X PUT -H 'Content-Type: application/vnd.oci.image.index.v1+json' \
    --data-binary @"$tmp/index" "http://$registry/v2/$repo/manifests/sha256-${digest#sha256:}" -o /dev/null
