//! The OCI shapes toolhost reads and writes: a component as the CNCF wasm artifact (an image
//! manifest with the `application/vnd.wasm.config.v0+json` config and one `application/wasm`
//! layer, as `wkg oci push` writes it), and cosign's signature manifest (one simple-signing layer
//! per signature). Pure: it reads manifests handed to it and says which blob to fetch; it never
//! fetches. Sigstore bundles attached as referrers: [`bundle_referrers`], [`Manifest::bundles`].

mod referrers;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::source::{Digest, DigestError};
use crate::trust::{PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION};

pub use self::referrers::{
    BUNDLE_MEDIA_TYPE, MAX_BUNDLE_BYTES, MAX_BUNDLES, bundle_referrers, referrers_tag,
};

/// An OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index: several manifests, which a component artifact is not.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The config of a wasm artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// A plain OCI image config: some tools (Wassette's) publish components with it.
pub const IMAGE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The layer that holds the component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Largest manifest read: real ones are a few KiB.
pub const MAX_MANIFEST_BYTES: usize = 256 << 10;
/// The layer annotation naming the file a layer came from (wkg sets it; so does `toolhost push`).
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// A blob named by a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the blob is.
    pub media_type: String,
    /// Its digest, checked when it is fetched.
    pub digest: Digest,
    /// Its size in bytes, as the manifest declares it.
    pub size: u64,
    /// Annotations (a signature, a file name).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// The descriptor of `bytes` as a blob of `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        Self {
            media_type: media_type.to_owned(),
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
            annotations: BTreeMap::new(),
        }
    }
}

/// A manifest to push, with the blobs it names: what `toolhost push` and `toolhost sign` upload.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The config blob.
    pub config: Vec<u8>,
    /// The layer blobs, in the manifest's order.
    pub layers: Vec<Vec<u8>>,
    /// The manifest naming them.
    pub manifest: Manifest,
}

impl Artifact {
    /// `component` as the CNCF wasm artifact, its layer titled `title` (the file name).
    pub fn component(component: Vec<u8>, title: &str) -> Self {
        let mut layer = Descriptor::of(WASM_LAYER_MEDIA_TYPE, &component);
        layer
            .annotations
            .insert(TITLE_ANNOTATION.to_owned(), title.to_owned());
        // The fields wkg's config requires (oci-wasm's `WasmConfig`: `created` too), with the epoch
        // as the time, as reproducible builds do: the same file pushed twice is the same manifest.
        let config = serde_json::json!({
            "created": "1970-01-01T00:00:00Z",
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer.digest.as_str()],
        })
        .to_string()
        .into_bytes();
        Self::new(WASM_CONFIG_MEDIA_TYPE, config, vec![(layer, component)])
    }

    /// A cosign signature manifest holding `signatures`: each a simple-signing payload and its
    /// base64 signature, in the shape cosign writes.
    pub fn signatures(signatures: Vec<(Vec<u8>, String)>) -> Self {
        let layers: Vec<(Descriptor, Vec<u8>)> = signatures
            .into_iter()
            .map(|(payload, signature)| {
                let mut d = Descriptor::of(PAYLOAD_MEDIA_TYPE, &payload);
                d.annotations
                    .insert(SIGNATURE_ANNOTATION.to_owned(), signature);
                (d, payload)
            })
            .collect();
        let diff_ids: Vec<&str> = layers.iter().map(|(d, _)| d.digest.as_str()).collect();
        let config = serde_json::json!({
            "architecture": "",
            "os": "",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        })
        .to_string()
        .into_bytes();
        Self::new(IMAGE_CONFIG_MEDIA_TYPE, config, layers)
    }

    fn new(config_type: &str, config: Vec<u8>, layers: Vec<(Descriptor, Vec<u8>)>) -> Self {
        let (descriptors, blobs) = layers.into_iter().unzip();
        Self {
            manifest: Manifest {
                schema_version: 2,
                media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
                config: Descriptor::of(config_type, &config),
                layers: descriptors,
                annotations: BTreeMap::new(),
            },
            config,
            layers: blobs,
        }
    }
}

/// An image manifest, as far as toolhost reads one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`MANIFEST_MEDIA_TYPE`], when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Manifest annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Why a manifest is not a component artifact (or a signature manifest).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Larger than any real manifest.
    #[error("the manifest is {0} bytes; the limit is {MAX_MANIFEST_BYTES}")]
    TooLarge(usize),
    /// An image index (several platforms), not one artifact.
    #[error("this is an image index, not a component artifact: name one manifest by its digest")]
    Index,
    /// Not JSON of the manifest's shape.
    #[error("not an OCI image manifest: {0}")]
    Malformed(String),
    /// The config says this is not a wasm artifact.
    #[error("the artifact's config is {0:?}, not a wasm component's ({WASM_CONFIG_MEDIA_TYPE})")]
    NotWasm(String),
    /// No layer, or more than one, holds a component.
    #[error("the artifact has {0} application/wasm layers; a component artifact has exactly one")]
    WasmLayers(usize),
    /// A digest in it is malformed.
    #[error(transparent)]
    Digest(#[from] DigestError),
}

impl Manifest {
    /// Read a manifest's exact bytes (its digest is taken over them, elsewhere).
    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(ManifestError::TooLarge(bytes.len()));
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Kind {
            media_type: Option<String>,
            manifests: Option<serde_json::Value>,
        }
        let kind: Kind =
            serde_json::from_slice(bytes).map_err(|e| ManifestError::Malformed(e.to_string()))?;
        if kind.media_type.as_deref() == Some(INDEX_MEDIA_TYPE) || kind.manifests.is_some() {
            return Err(ManifestError::Index);
        }
        let manifest: Self =
            serde_json::from_slice(bytes).map_err(|e| ManifestError::Malformed(e.to_string()))?;
        if manifest.schema_version != 2 {
            return Err(ManifestError::Malformed(format!(
                "schemaVersion {}, not 2",
                manifest.schema_version
            )));
        }
        Ok(manifest)
    }

    /// The manifest's bytes, as pushed (its digest is taken over them).
    pub fn to_bytes(&self) -> Vec<u8> {
        // A manifest of strings and numbers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The one layer that holds the component. Other layers (a policy file, say) are ignored
    /// and never fetched; the manifest digest still covers them.
    pub fn component(&self) -> Result<&Descriptor, ManifestError> {
        let config = self.config.media_type.as_str();
        if config != WASM_CONFIG_MEDIA_TYPE && config != IMAGE_CONFIG_MEDIA_TYPE {
            return Err(ManifestError::NotWasm(config.to_owned()));
        }
        let mut wasm = self
            .layers
            .iter()
            .filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE);
        match (wasm.next(), wasm.next()) {
            (Some(layer), None) => Ok(layer),
            _ => Err(ManifestError::WasmLayers(
                self.layers
                    .iter()
                    .filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE)
                    .count(),
            )),
        }
    }

    /// The signatures in a cosign signature manifest: each payload layer and its base64 signature.
    /// Layers of other kinds, or without the annotation, are skipped.
    pub fn signatures(&self) -> impl Iterator<Item = (&Descriptor, &str)> {
        self.layers.iter().filter_map(|l| {
            (l.media_type == PAYLOAD_MEDIA_TYPE)
                .then(|| l.annotations.get(SIGNATURE_ANNOTATION))
                .flatten()
                .map(|sig| (l, sig.as_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn digest(fill: char) -> String {
        format!("sha256:{}", fill.to_string().repeat(64))
    }

    /// The shape `wkg oci push` writes.
    fn artifact(config: &str, layers: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": config, "digest": digest('c'), "size": 120},
            "layers": layers,
        }))
        .unwrap()
    }

    #[test]
    fn finds_the_one_component_layer_and_ignores_others() {
        let bytes = artifact(
            WASM_CONFIG_MEDIA_TYPE,
            json!([
                {"mediaType": "application/wasm", "digest": digest('a'), "size": 204800,
                 "annotations": {"org.opencontainers.image.title": "echo.wasm"}},
                {"mediaType": "application/vnd.wasm.policy.v1+yaml", "digest": digest('b'), "size": 10},
            ]),
        );
        let m = Manifest::parse(&bytes).unwrap();
        let layer = m.component().unwrap();
        assert_eq!(layer.digest.as_str(), digest('a'));
        assert_eq!(layer.size, 204800);
    }

    #[test]
    fn refuses_what_is_not_one_component() {
        let none = artifact(WASM_CONFIG_MEDIA_TYPE, json!([]));
        assert_eq!(
            Manifest::parse(&none).unwrap().component(),
            Err(ManifestError::WasmLayers(0))
        );
        let layer = json!({"mediaType": "application/wasm", "digest": digest('a'), "size": 1});
        let two = artifact(WASM_CONFIG_MEDIA_TYPE, json!([layer, layer]));
        assert_eq!(
            Manifest::parse(&two).unwrap().component(),
            Err(ManifestError::WasmLayers(2))
        );
        let image = artifact(
            "application/vnd.docker.container.image.v1+json",
            json!([layer]),
        );
        assert!(matches!(
            Manifest::parse(&image).unwrap().component(),
            Err(ManifestError::NotWasm(_))
        ));
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": []
        }))
        .unwrap();
        assert_eq!(Manifest::parse(&index), Err(ManifestError::Index));
        let bad_digest = artifact(
            WASM_CONFIG_MEDIA_TYPE,
            json!([{"mediaType": "application/wasm", "digest": "sha256:xyz", "size": 1}]),
        );
        assert!(matches!(
            Manifest::parse(&bad_digest),
            Err(ManifestError::Malformed(_))
        ));
        let huge = vec![b' '; MAX_MANIFEST_BYTES + 1];
        assert_eq!(
            Manifest::parse(&huge),
            Err(ManifestError::TooLarge(MAX_MANIFEST_BYTES + 1))
        );
    }

    #[test]
    fn builds_what_it_reads() {
        let a = Artifact::component(b"\0asm component".to_vec(), "echo.wasm");
        let m = Manifest::parse(&a.manifest.to_bytes()).unwrap();
        let layer = m.component().unwrap();
        assert_eq!(layer.digest, Digest::of(b"\0asm component"));
        assert_eq!(layer.annotations[TITLE_ANNOTATION], "echo.wasm");
        assert_eq!(m.config.digest, Digest::of(&a.config));
        let again = Artifact::component(b"\0asm component".to_vec(), "echo.wasm");
        assert_eq!(again.manifest.to_bytes(), a.manifest.to_bytes());
        let s = Artifact::signatures(vec![(b"{}".to_vec(), "MEUC".into())]);
        let m = Manifest::parse(&s.manifest.to_bytes()).unwrap();
        let sigs: Vec<_> = m.signatures().map(|(l, s)| (l.digest.clone(), s)).collect();
        assert_eq!(sigs, vec![(Digest::of(b"{}"), "MEUC")]);
        assert_eq!(s.layers, vec![b"{}".to_vec()]);
    }

    #[test]
    fn lists_the_signatures_of_a_signature_manifest() {
        let bytes = artifact(
            IMAGE_CONFIG_MEDIA_TYPE,
            json!([
                {"mediaType": PAYLOAD_MEDIA_TYPE, "digest": digest('1'), "size": 241,
                 "annotations": {SIGNATURE_ANNOTATION: "MEUCIQ=="}},
                {"mediaType": PAYLOAD_MEDIA_TYPE, "digest": digest('2'), "size": 241},
                {"mediaType": "application/octet-stream", "digest": digest('3'), "size": 1,
                 "annotations": {SIGNATURE_ANNOTATION: "x"}},
            ]),
        );
        let m = Manifest::parse(&bytes).unwrap();
        let sigs: Vec<_> = m
            .signatures()
            .map(|(l, s)| (l.digest.as_str(), s))
            .collect();
        assert_eq!(sigs, vec![(digest('1').as_str(), "MEUCIQ==")]);
    }
}
