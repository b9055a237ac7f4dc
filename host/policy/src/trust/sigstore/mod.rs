//! Sigstore bundles, verified offline: what cosign 3 and the Sigstore clients write by default.
//!
//! A bundle carries a signature (over the artifact's digest, or a DSSE envelope whose in-toto
//! statement names the artifact's digest), the signer (a short-lived Fulcio certificate, or a key
//! hint), and the transparency log's record of it. [`verify`] checks, against a [`TrustedRoot`]
//! given as Sigstore's `trusted_root.json` (configured, never fetched): the log entry's signed
//! timestamp, its inclusion proof and the checkpoint the log signed; that the entry records this
//! signature and signer; the certificate's chain to a certificate authority of the root at the time
//! the log recorded the entry; the signature itself; that it covers the artifact; and who signed
//! (the certificate's identity and OIDC issuer, or the key). Every refusal names the part that
//! failed. Pure: bytes in, a judgement out.

mod cert;
mod model;
#[cfg(test)]
mod tests;
mod tlog;

use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, ED25519, UnparsedPublicKey,
    VerificationAlgorithm,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, SubjectPublicKeyInfoDer};

use self::cert::{Curve, Leaf};
use self::model::{BundleJson, RootJson, Statement};
use self::tlog::{hash, hex};
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
        let mut logs = Vec::new();
        for (i, l) in root.tlogs.iter().enumerate() {
            let what = format!("tlogs[{i}]");
            let spki = l
                .public_key
                .raw_bytes
                .as_ref()
                .ok_or_else(|| SigstoreError::Root(format!("{what} has no public key")))?;
            logs.push(Log {
                key_id: l.log_id.key_id.0.clone(),
                spki: spki.0.clone(),
                details: l.public_key.key_details.clone(),
                valid: window(&l.public_key.valid_for, &what)?,
            });
        }
        let mut authorities = Vec::new();
        for (i, a) in root.certificate_authorities.iter().enumerate() {
            let what = format!("certificateAuthorities[{i}]");
            authorities.push(Authority {
                chain: a
                    .cert_chain
                    .certificates
                    .iter()
                    .map(|c| c.raw_bytes.0.clone())
                    .collect(),
                valid: window(&a.valid_for, &what)?,
            });
        }
        Ok(Self { logs, authorities })
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
    /// When the log recorded it (Unix seconds).
    pub integrated_time: u64,
    /// Where in the log.
    pub log_index: u64,
    /// For an envelope, the in-toto statement's predicate type (what it attests).
    pub predicate: Option<String>,
}

/// The signed content, as the bundle carries it.
enum Content<'a> {
    Message {
        digest: Option<(&'a str, &'a [u8])>,
        signature: &'a [u8],
    },
    Envelope {
        message: Vec<u8>,
        payload: &'a [u8],
        payload_type: &'a str,
        signature: &'a [u8],
    },
}

/// Verify `bundle` for the artifact whose SHA-256 is `artifact`, against `root`, signed as `signer`
/// says, at `now` (Unix seconds; a log entry from the future is refused).
pub fn verify(
    bundle: &Bundle,
    root: &TrustedRoot,
    artifact: &[u8; 32],
    signer: Signer<'_>,
    now: u64,
) -> Result<Verified, SigstoreError> {
    let b = &bundle.json;
    let needs_proof = match b.media_type.as_str() {
        "application/vnd.dev.sigstore.bundle+json;version=0.1" => false,
        "application/vnd.dev.sigstore.bundle+json;version=0.2"
        | "application/vnd.dev.sigstore.bundle+json;version=0.3"
        | "application/vnd.dev.sigstore.bundle.v0.3+json" => true,
        other => {
            return Err(SigstoreError::Malformed(format!(
                "unknown bundle version {other:?}"
            )));
        }
    };
    let content = match (&b.message_signature, &b.dsse_envelope) {
        (Some(m), None) => Content::Message {
            digest: m
                .message_digest
                .as_ref()
                .map(|d| (d.algorithm.as_str(), d.digest.0.as_slice())),
            signature: &m.signature.0,
        },
        (None, Some(e)) => {
            let [one] = e.signatures.as_slice() else {
                return Err(SigstoreError::Malformed(
                    "the envelope must hold exactly one signature".into(),
                ));
            };
            Content::Envelope {
                message: pae(&e.payload_type, &e.payload.0),
                payload: &e.payload.0,
                payload_type: &e.payload_type,
                signature: &one.sig.0,
            }
        }
        _ => {
            return Err(SigstoreError::Malformed(
                "a bundle holds a message signature or an envelope".into(),
            ));
        }
    };

    // The signer's material, before anything is taken from it.
    let material = &b.verification_material;
    let leaf = if let Some(c) = &material.certificate {
        Some(Leaf::parse(c.raw_bytes.0.clone())?)
    } else if let Some(chain) = &material.x509_certificate_chain {
        let Some((first, rest)) = chain.certificates.split_first() else {
            return Err(SigstoreError::Certificate(
                "the bundle's certificate chain is empty".into(),
            ));
        };
        for c in rest {
            if Leaf::parse(c.raw_bytes.0.clone())?.self_issued() {
                return Err(SigstoreError::Certificate(
                    "the bundle carries a root certificate; roots come from the trusted root only"
                        .into(),
                ));
            }
        }
        Some(Leaf::parse(first.raw_bytes.0.clone())?)
    } else if material.public_key.is_some() {
        None
    } else {
        return Err(SigstoreError::Malformed(
            "the bundle names no signer".into(),
        ));
    };

    // The log's record.
    let [entry] = b.verification_material.tlog_entries.as_slice() else {
        return Err(SigstoreError::Log(format!(
            "a bundle must hold exactly one log entry (this one holds {})",
            b.verification_material.tlog_entries.len()
        )));
    };
    let log = root
        .logs
        .iter()
        .find(|l| l.key_id == entry.log_id.key_id.0)
        .ok_or_else(|| {
            SigstoreError::Log("the entry comes from a log the trusted root does not name".into())
        })?;
    let Some(time) = entry.integrated_time.map(|t| t.0) else {
        return Err(SigstoreError::Unsupported(format!(
            "Rekor v2 entries ({} {}, dated by a timestamp authority instead of the log)",
            entry.kind_version.kind, entry.kind_version.version
        )));
    };
    if time > now {
        return Err(SigstoreError::Log(
            "the entry's integrated time is in the future".into(),
        ));
    }
    if !log.valid.contains(time as i64 * 1000) {
        return Err(SigstoreError::Log(
            "the log's key was not valid when the entry was recorded".into(),
        ));
    }
    match (&entry.inclusion_proof, needs_proof) {
        (Some(proof), _) => tlog::check_inclusion(entry, proof, log)?,
        (None, true) => {
            return Err(SigstoreError::Log(
                "the entry has no inclusion proof".into(),
            ));
        }
        (None, false) => {}
    }
    // The integrated time decides whether the certificate was valid: only the log's signature on it
    // (the signed entry timestamp) makes it more than the bundle's word. (RFC 3161 timestamps, the
    // other way to date a signature, are not read yet.)
    tlog::check_promise(entry, log)?;
    let body = tlog::body(
        &entry.canonicalized_body.0,
        &entry.kind_version.kind,
        &entry.kind_version.version,
    )?;

    // The signer, and that the log recorded this signer.
    let (key_spki, verified) = match leaf {
        Some(leaf) => keyless(leaf, root, time, signer, &body)?,
        None => {
            let Signer::Key(key) = signer else {
                return Err(SigstoreError::Identity {
                    expected: "a keyless signature (a certificate)".into(),
                    found: "a key, with no certificate".into(),
                });
            };
            let recorded = SubjectPublicKeyInfoDer::from_pem_slice(&body.signer_pem)
                .map_err(|_| SigstoreError::Log("the entry's public key is not PEM".into()))?;
            if recorded.as_ref() != key.spki().as_slice() {
                return Err(SigstoreError::Identity {
                    expected: format!("the key {}", key.name()),
                    found: "another key (the one the log recorded)".into(),
                });
            }
            let verified = Verified {
                signer: key.name().to_owned(),
                issuer: None,
                integrated_time: time,
                log_index: 0,
                predicate: None,
            };
            ((Curve::P256, key.point.clone()), verified)
        }
    };

    // The signature, over the artifact.
    let want = hex(artifact);
    let (curve, point) = key_spki;
    let mut predicate = None;
    match content {
        Content::Message { digest, signature } => {
            if body.signature != signature {
                return Err(SigstoreError::Log(
                    "the entry records another signature".into(),
                ));
            }
            if digest.is_some_and(|(alg, d)| alg != "SHA2_256" || d != artifact)
                || body.digest != want
            {
                return Err(SigstoreError::Artifact(format!(
                    "its digest is not sha256:{want}"
                )));
            }
            let ok = curve == Curve::P256
                && p256::ecdsa::VerifyingKey::from_sec1_bytes(&point)
                    .ok()
                    .zip(p256::ecdsa::Signature::from_der(signature).ok())
                    .is_some_and(|(k, s)| k.verify_prehash(artifact, &s).is_ok());
            if !ok {
                return Err(SigstoreError::Signature(
                    "it does not verify with the signer's key".into(),
                ));
            }
        }
        Content::Envelope {
            message,
            payload,
            payload_type,
            signature,
        } => {
            if body.signature != signature || body.digest != hex(&hash(&[payload])) {
                return Err(SigstoreError::Log(
                    "the entry records another envelope".into(),
                ));
            }
            let alg: &dyn VerificationAlgorithm = match curve {
                Curve::P256 => &ECDSA_P256_SHA256_ASN1,
                Curve::P384 => &ECDSA_P384_SHA384_ASN1,
            };
            if UnparsedPublicKey::new(alg, &point)
                .verify(&message, signature)
                .is_err()
            {
                return Err(SigstoreError::Signature(
                    "the envelope's signature does not verify".into(),
                ));
            }
            if payload_type != "application/vnd.in-toto+json" {
                return Err(SigstoreError::Artifact(format!(
                    "the envelope holds {payload_type:?}, not an in-toto statement"
                )));
            }
            let statement: Statement = serde_json::from_slice(payload).map_err(|e| {
                SigstoreError::Artifact(format!("the in-toto statement is malformed: {e}"))
            })?;
            if !statement.kind.starts_with("https://in-toto.io/Statement/") {
                return Err(SigstoreError::Artifact(
                    "the envelope holds no in-toto statement".into(),
                ));
            }
            predicate = statement.predicate_type;
            if !statement
                .subject
                .iter()
                .any(|s| s.digest.get("sha256") == Some(&want))
            {
                return Err(SigstoreError::Artifact(format!(
                    "no subject of its statement is sha256:{want}"
                )));
            }
        }
    }
    Ok(Verified {
        log_index: entry.log_index.0,
        predicate,
        ..verified
    })
}

/// Check a keyless signer: the chain, who it is, and that the log recorded this certificate.
fn keyless(
    leaf: Leaf,
    root: &TrustedRoot,
    time: u64,
    signer: Signer<'_>,
    body: &tlog::Body,
) -> Result<((Curve, Vec<u8>), Verified), SigstoreError> {
    let recorded = CertificateDer::from_pem_slice(&body.signer_pem)
        .map_err(|_| SigstoreError::Log("the entry's certificate is not PEM".into()))?;
    if recorded.as_ref() != leaf.der.as_slice() {
        return Err(SigstoreError::Log(
            "the entry records another certificate".into(),
        ));
    }
    leaf.chain(&root.authorities, time)?;
    let Signer::Identity {
        identity,
        shown,
        issuer,
    } = signer
    else {
        return Err(SigstoreError::Identity {
            expected: "a key".into(),
            found: "a keyless signature (a certificate)".into(),
        });
    };
    let names = leaf.identities();
    let Some(matched) = names.iter().find(|n| identity(n)) else {
        return Err(SigstoreError::Identity {
            expected: shown.to_owned(),
            found: if names.is_empty() {
                "no identity".into()
            } else {
                names.join(", ")
            },
        });
    };
    let found = leaf.issuer().unwrap_or_default();
    if found != issuer {
        return Err(SigstoreError::Issuer {
            expected: issuer.to_owned(),
            found,
        });
    }
    let (curve, point) = leaf.key()?;
    Ok((
        (curve, point.to_vec()),
        Verified {
            signer: matched.clone(),
            issuer: Some(found),
            integrated_time: time,
            log_index: 0,
            predicate: None,
        },
    ))
}

/// DSSE's pre-authentication encoding: what an envelope's signature covers.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
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
