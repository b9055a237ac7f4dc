//! The JSON of a Sigstore bundle and of a `trusted_root.json`, as protobuf-specs' JSON mapping writes
//! them (camelCase names, 64-bit integers as strings, bytes as standard base64). Only what
//! verification reads; anything else is ignored.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde::{Deserialize, Deserializer};

/// Bytes written as base64: standard or URL-safe, padded or not, as protobuf's JSON mapping reads
/// them; line breaks are ignored, as Go's and Python's decoders ignore them (`base64` wraps its
/// output, and bundles have been written with it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct B64(pub(super) Vec<u8>);

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut text = String::deserialize(d)?;
        text.retain(|c| c != '\n' && c != '\r');
        let text = text.trim();
        [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(text).ok())
            .map(B64)
            .ok_or_else(|| serde::de::Error::custom("not base64"))
    }
}

/// An unsigned 64-bit integer written as a string (or, leniently, a number); negative values fail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Int(pub(super) u64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Number(u64),
        }
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(Int(n)),
            Either::Text(t) => t.parse().map(Int).map_err(|_| {
                serde::de::Error::custom(format!("{t:?} is not a non-negative integer"))
            }),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BundleJson {
    pub(super) media_type: String,
    pub(super) verification_material: Material,
    pub(super) message_signature: Option<MessageSignature>,
    pub(super) dsse_envelope: Option<Envelope>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Material {
    pub(super) certificate: Option<RawBytes>,
    pub(super) x509_certificate_chain: Option<CertChain>,
    pub(super) public_key: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) tlog_entries: Vec<TlogEntry>,
    pub(super) timestamp_verification_data: Option<TimestampData>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TimestampData {
    #[serde(default)]
    pub(super) rfc3161_timestamps: Vec<SignedTimestamp>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SignedTimestamp {
    pub(super) signed_timestamp: B64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawBytes {
    pub(super) raw_bytes: B64,
}

#[derive(Debug, Deserialize)]
pub(super) struct CertChain {
    #[serde(default)]
    pub(super) certificates: Vec<RawBytes>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TlogEntry {
    pub(super) log_index: Int,
    pub(super) log_id: KeyId,
    pub(super) kind_version: KindVersion,
    /// Absent in Rekor v2 entries, which a timestamp authority dates instead.
    pub(super) integrated_time: Option<Int>,
    pub(super) inclusion_promise: Option<Promise>,
    pub(super) inclusion_proof: Option<InclusionProof>,
    pub(super) canonicalized_body: B64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct KeyId {
    pub(super) key_id: B64,
}

#[derive(Debug, Deserialize)]
pub(super) struct KindVersion {
    pub(super) kind: String,
    pub(super) version: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Promise {
    pub(super) signed_entry_timestamp: B64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InclusionProof {
    pub(super) log_index: Int,
    pub(super) root_hash: B64,
    pub(super) tree_size: Int,
    #[serde(default)]
    pub(super) hashes: Vec<B64>,
    pub(super) checkpoint: Option<Checkpoint>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Checkpoint {
    pub(super) envelope: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MessageSignature {
    pub(super) message_digest: Option<MessageDigest>,
    pub(super) signature: B64,
}

#[derive(Debug, Deserialize)]
pub(super) struct MessageDigest {
    pub(super) algorithm: String,
    pub(super) digest: B64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Envelope {
    pub(super) payload: B64,
    pub(super) payload_type: String,
    #[serde(default)]
    pub(super) signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Deserialize)]
pub(super) struct EnvelopeSignature {
    pub(super) sig: B64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RootJson {
    pub(super) media_type: String,
    #[serde(default)]
    pub(super) tlogs: Vec<LogJson>,
    #[serde(default)]
    pub(super) ctlogs: Vec<LogJson>,
    #[serde(default)]
    pub(super) certificate_authorities: Vec<AuthorityJson>,
    #[serde(default)]
    pub(super) timestamp_authorities: Vec<AuthorityJson>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogJson {
    pub(super) public_key: KeyJson,
    pub(super) log_id: KeyId,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct KeyJson {
    pub(super) raw_bytes: Option<B64>,
    #[serde(default)]
    pub(super) key_details: String,
    pub(super) valid_for: Option<ValidFor>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuthorityJson {
    pub(super) cert_chain: CertChain,
    pub(super) valid_for: Option<ValidFor>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ValidFor {
    pub(super) start: Option<String>,
    pub(super) end: Option<String>,
}

/// The in-toto statement a DSSE envelope carries: only its subjects' digests matter here.
#[derive(Debug, Deserialize)]
pub(super) struct Statement {
    #[serde(rename = "_type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) subject: Vec<StatementSubject>,
    #[serde(rename = "predicateType")]
    pub(super) predicate_type: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct StatementSubject {
    #[serde(default)]
    pub(super) digest: std::collections::BTreeMap<String, String>,
}
