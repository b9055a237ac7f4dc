//! Sigstore bundles, verified offline: what cosign 3 and the Sigstore clients write by default.
//!
//! A bundle carries a signature (over the artifact's digest, or a DSSE envelope whose in-toto
//! statement names the artifact's digest), the signer (a short-lived Fulcio certificate, or a key
//! hint), and the transparency log's record of it. [`verify`] checks, against a [`TrustedRoot`]
//! given as Sigstore's `trusted_root.json` (configured, never fetched): when the signature was made
//! (the log's signed entry timestamp for Rekor v1, RFC 3161 timestamps for Rekor v2, which has no
//! integrated time), the entry's inclusion proof and the checkpoint the log signed; that the entry
//! records this signature and signer; the certificate's chain to a certificate authority of the root
//! at every such time; the signature itself; that it covers the artifact; and who signed (the
//! certificate's identity and OIDC issuer, or the key). Every refusal names the part that failed.
//! Pure: bytes in, a judgement out.

mod cert;
mod model;
mod sct;
#[cfg(test)]
mod tests;
mod timestamp;
mod tlog;
mod verify;

use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, ED25519, UnparsedPublicKey,
    VerificationAlgorithm,
};

use self::model::{BundleJson, RootJson};
use self::tlog::{hash, hex};
pub use self::verify::verify;
use super::PublicKey;

/// Why a bundle was not accepted; each names the part that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigstoreError {
    /// Not a bundle, or one of a version this verifier does not know.
    #[error("not a usable Sigstore bundle: {0}")]
    Malformed(String),
    /// Something this verifier does not support (yet).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The trusted root itself is unusable.
    #[error("the trusted root is unusable: {0}")]
    Root(String),
    /// The transparency log's record does not hold.
    #[error("transparency log: {0}")]
    Log(String),
    /// An RFC 3161 timestamp does not hold.
    #[error("timestamp: {0}")]
    Timestamp(String),
    /// The signing certificate does not hold.
    #[error("certificate: {0}")]
    Certificate(String),
    /// Signed by someone else than the policy names.
    #[error("signed by {found}, not {expected}")]
    Identity {
        /// The identity the policy asks for.
        expected: String,
        /// The certificate's identities.
        found: String,
    },
    /// Signed through another OIDC issuer than the policy names.
    #[error("signed through the issuer {found}, not {expected}")]
    Issuer {
        /// The issuer the policy asks for.
        expected: String,
        /// The certificate's issuer.
        found: String,
    },
    /// The signature does not verify.
    #[error("signature: {0}")]
    Signature(String),
    /// A valid signature, over something else.
    #[error("the bundle signs another artifact: {0}")]
    Artifact(String),
}

/// A time window of the trusted root, in Unix milliseconds, both ends included.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    end: Option<i64>,
}

impl Window {
    fn contains(&self, ms: i64) -> bool {
        ms >= self.start && self.end.is_none_or(|e| ms <= e)
    }
}

/// A transparency log of the trusted root.
#[derive(Debug, Clone)]
struct Log {
    key_id: Vec<u8>,
    spki: Vec<u8>,
    details: String,
    valid: Window,
}

impl Log {
    fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let Some((alg, key)) = spki_key(&self.spki, &self.details) else {
            return false;
        };
        UnparsedPublicKey::new(alg, key)
            .verify(message, signature)
            .is_ok()
    }
}

/// A certificate authority of the trusted root: its chain, intermediates first, the root last.
#[derive(Debug, Clone)]
struct Authority {
    chain: Vec<Vec<u8>>,
    valid: Window,
}

/// Sigstore's trusted root (`trusted_root.json`): the transparency logs and certificate
/// authorities whose word is taken, each with the time it may be taken for.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    logs: Vec<Log>,
    authorities: Vec<Authority>,
    timestamp_authorities: Vec<Authority>,
    ct_logs: Vec<Log>,
}

impl TrustedRoot {
    /// Read a `trusted_root.json`.
    pub fn from_json(bytes: &[u8]) -> Result<Self, SigstoreError> {
        let root: RootJson = serde_json::from_slice(bytes)
            .map_err(|e| SigstoreError::Root(format!("not a trusted_root.json: {e}")))?;
        if !root
            .media_type
            .starts_with("application/vnd.dev.sigstore.trustedroot")
        {
            return Err(SigstoreError::Root(format!(
                "unknown media type {:?}",
                root.media_type
            )));
        }
        let window = |v: &Option<model::ValidFor>, what: &str| -> Result<Window, SigstoreError> {
            let v = v.as_ref();
            let start = v
                .and_then(|v| v.start.as_deref())
                .ok_or_else(|| SigstoreError::Root(format!("{what} has no start of validity")))?;
            let end = v.and_then(|v| v.end.as_deref());
            Ok(Window {
                start: millis(start)
                    .ok_or_else(|| SigstoreError::Root(format!("{what}: bad time {start:?}")))?,
                end: match end {
                    None => None,
                    Some(e) => {
                        Some(millis(e).ok_or_else(|| {
                            SigstoreError::Root(format!("{what}: bad time {e:?}"))
                        })?)
                    }
                },
            })
        };
        let logs = |list: &[model::LogJson], field: &str| {
            let mut out = Vec::new();
            for (i, l) in list.iter().enumerate() {
                let what = format!("{field}[{i}]");
                let spki = l
                    .public_key
                    .raw_bytes
                    .as_ref()
                    .ok_or_else(|| SigstoreError::Root(format!("{what} has no public key")))?;
                out.push(Log {
                    key_id: l.log_id.key_id.0.clone(),
                    spki: spki.0.clone(),
                    details: l.public_key.key_details.clone(),
                    valid: window(&l.public_key.valid_for, &what)?,
                });
            }
            Ok::<_, SigstoreError>(out)
        };
        let authorities = |list: &[model::AuthorityJson], field: &str| {
            let mut out = Vec::new();
            for (i, a) in list.iter().enumerate() {
                out.push(Authority {
                    chain: a
                        .cert_chain
                        .certificates
                        .iter()
                        .map(|c| c.raw_bytes.0.clone())
                        .collect(),
                    valid: window(&a.valid_for, &format!("{field}[{i}]"))?,
                });
            }
            Ok::<_, SigstoreError>(out)
        };
        Ok(Self {
            logs: logs(&root.tlogs, "tlogs")?,
            ct_logs: logs(&root.ctlogs, "ctlogs")?,
            authorities: authorities(&root.certificate_authorities, "certificateAuthorities")?,
            timestamp_authorities: authorities(
                &root.timestamp_authorities,
                "timestampAuthorities",
            )?,
        })
    }
}

/// A bundle as read, and the SHA-256 of its bytes (which the lockfile records).
#[derive(Debug)]
pub struct Bundle {
    json: BundleJson,
    /// `sha256:<hex>` of the bundle's bytes.
    pub digest: String,
}

impl Bundle {
    /// Read a bundle (v0.1 to v0.3).
    pub fn from_json(bytes: &[u8]) -> Result<Self, SigstoreError> {
        let json: BundleJson =
            serde_json::from_slice(bytes).map_err(|e| SigstoreError::Malformed(e.to_string()))?;
        Ok(Self {
            json,
            digest: format!("sha256:{}", hex(&hash(&[bytes]))),
        })
    }
}

/// Who must have signed.
#[derive(Clone, Copy)]
pub enum Signer<'a> {
    /// A keyless signature: a certificate whose identity (an email address or URI) `identity`
    /// matches and whose OIDC issuer is `issuer`.
    Identity {
        /// Matches the certificate's identity.
        identity: &'a dyn Fn(&str) -> bool,
        /// The identity asked for, for messages.
        shown: &'a str,
        /// The OIDC issuer, exactly.
        issuer: &'a str,
    },
    /// A signature by this key.
    Key(&'a PublicKey),
}

/// What a verified bundle showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The certificate's identity that matched, or the key's name.
    pub signer: String,
    /// The OIDC issuer, for a keyless signature.
    pub issuer: Option<String>,
    /// When it was signed, by the earliest word of the log (its integrated time) or of a
    /// timestamp authority (Unix seconds).
    pub integrated_time: u64,
    /// Where in the log.
    pub log_index: u64,
    /// For an envelope, the in-toto statement's predicate type (what it attests; empty when the
    /// statement names none); `None` for a signature over the artifact itself.
    pub predicate: Option<String>,
}

/// The algorithm and raw key of a SubjectPublicKeyInfo a trusted root gives, by its `keyDetails`.
fn spki_key<'a>(
    spki: &'a [u8],
    details: &str,
) -> Option<(&'static dyn VerificationAlgorithm, &'a [u8])> {
    // The key is the DER's last field, a BIT STRING: for these algorithms, the SPKI's tail.
    let (alg, len): (&'static dyn VerificationAlgorithm, usize) = match details {
        "PKIX_ECDSA_P256_SHA_256" => (&ECDSA_P256_SHA256_ASN1, 65),
        "PKIX_ECDSA_P384_SHA_384" => (&ECDSA_P384_SHA384_ASN1, 97),
        "PKIX_ED25519" => (&ED25519, 32),
        _ => return None,
    };
    spki.len().checked_sub(len).map(|at| (alg, &spki[at..]))
}

/// RFC 3339 to Unix milliseconds.
fn millis(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}
