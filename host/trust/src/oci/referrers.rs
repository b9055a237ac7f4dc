//! Sigstore bundles attached to a manifest the ways cosign 3 attaches them: as OCI 1.1 referrers (an
//! artifact manifest whose `subject` is the signed manifest and whose layer is the bundle), listed
//! by the registry's referrers API or, where a registry has none, by the referrers tag scheme's image
//! index under the tag `sha256-<hex>`.

use serde::Deserialize;

use super::{Descriptor, Manifest};

/// The media type (and artifact type) of a Sigstore bundle, v0.3 and later.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Every bundle media type starts so (v0.1 and v0.2 were `…bundle+json;version=0.x`).
const BUNDLE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The empty descriptor's media type, which cosign 3.0 gave its bundles' index entries.
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// The most bundle referrers judged: a registry may list any number.
pub const MAX_BUNDLES: usize = 16;
/// Largest bundle read: one holds a certificate, a log entry and a proof, a few kilobytes.
pub const MAX_BUNDLE_BYTES: u64 = 256 << 10;

/// The tag the referrers tag scheme lists `digest`'s referrers under: `sha256-<hex>`.
pub fn referrers_tag(digest: &str) -> Option<String> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| format!("sha256-{hex}"))
}

/// The referrers an image index (the referrers API's answer, or the tag scheme's index) lists that
/// are Sigstore bundles, newest last as listed, at most [`MAX_BUNDLES`].
pub fn bundle_referrers(index: &[u8]) -> Vec<Descriptor> {
    #[derive(Deserialize)]
    struct Index {
        #[serde(default)]
        manifests: Vec<Entry>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        #[serde(flatten)]
        descriptor: Descriptor,
        artifact_type: Option<String>,
    }
    let Ok(index) = serde_json::from_slice::<Index>(index) else {
        return Vec::new();
    };
    // cosign 3.0 lists its bundles in the tag scheme's index with the empty artifact type (3.1 with
    // the bundle's): each such referrer is fetched and its layer's media type decides, as cosign does.
    let bundles: Vec<Descriptor> = index
        .manifests
        .into_iter()
        .filter(|e| match e.artifact_type.as_deref() {
            None | Some(EMPTY_MEDIA_TYPE) => true,
            Some(t) => t.starts_with(BUNDLE_PREFIX),
        })
        .map(|e| e.descriptor)
        .collect();
    let skip = bundles.len().saturating_sub(MAX_BUNDLES);
    bundles.into_iter().skip(skip).collect()
}

impl Manifest {
    /// The bundle layers of a referrer manifest.
    pub fn bundles(&self) -> impl Iterator<Item = &Descriptor> {
        self.layers
            .iter()
            .filter(|l| l.media_type.starts_with(BUNDLE_PREFIX) && l.size <= MAX_BUNDLE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_are_found_among_referrers() {
        let d = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let index = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
              {{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":500,
                "artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"}},
              {{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":400,
                "artifactType":"application/spdx+json"}},
              {{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":300}},
              {{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":300,
                "artifactType":"application/vnd.oci.empty.v1+json"}}]}}"#,
            d('a'),
            d('b'),
            d('c'),
            d('d')
        );
        // The SBOM is skipped; an untyped referrer and cosign 3.0's empty type are fetched, and
        // their layers decide.
        let found = bundle_referrers(index.as_bytes());
        let found: Vec<&str> = found.iter().map(|d| d.digest.as_str()).collect();
        assert_eq!(found, [d('a'), d('c'), d('d')]);
        assert!(bundle_referrers(b"not json").is_empty());
        assert_eq!(
            referrers_tag(&d('a')).unwrap(),
            format!("sha256-{}", "a".repeat(64))
        );
        assert_eq!(referrers_tag("sha256:xyz"), None);
    }
}
