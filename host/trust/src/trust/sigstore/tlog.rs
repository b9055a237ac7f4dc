//! The transparency log's word for an entry: the signed entry timestamp (a promise that the entry was
//! logged at its integrated time), the Merkle inclusion proof (RFC 9162) up to a root hash, and the
//! checkpoint (a signed note) that commits the log to that root. And what the entry's body records,
//! held against the bundle.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, SubjectPublicKeyInfoDer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::model::{InclusionProof, TlogEntry};
use super::{Log, SigstoreError};

/// Check the entry's signed entry timestamp against `log`'s key: ECDSA over the canonical JSON of
/// the body, the integrated time, the log's ID and the index.
pub(super) fn check_promise(entry: &TlogEntry, log: &Log) -> Result<(), SigstoreError> {
    let Some(promise) = &entry.inclusion_promise else {
        return Err(SigstoreError::Log(
            "the entry has no signed entry timestamp".into(),
        ));
    };
    // Keys in sorted order, no spaces: the canonical form Rekor signed.
    let message = format!(
        r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
        STANDARD.encode(&entry.canonicalized_body.0),
        entry.integrated_time.unwrap_or_default().0,
        hex(&entry.log_id.key_id.0),
        entry.log_index.0
    );
    if log.verifies(message.as_bytes(), &promise.signed_entry_timestamp.0) {
        Ok(())
    } else {
        Err(SigstoreError::Log(
            "the signed entry timestamp does not verify with the log's key".into(),
        ))
    }
}

/// Check the inclusion proof from the entry's leaf up to its root hash, and the checkpoint that
/// the log signed for that root.
pub(super) fn check_inclusion(
    entry: &TlogEntry,
    proof: &InclusionProof,
    log: &Log,
) -> Result<(), SigstoreError> {
    let leaf = hash(&[&[0u8], &entry.canonicalized_body.0]);
    let root = root_from_proof(proof.log_index.0, proof.tree_size.0, leaf, &proof.hashes)
        .ok_or_else(|| SigstoreError::Log("the inclusion proof is malformed".into()))?;
    if root.as_slice() != proof.root_hash.0 {
        return Err(SigstoreError::Log(
            "the inclusion proof does not lead to the log's root hash".into(),
        ));
    }
    let Some(checkpoint) = &proof.checkpoint else {
        return Err(SigstoreError::Log(
            "the inclusion proof has no checkpoint".into(),
        ));
    };
    check_checkpoint(&checkpoint.envelope, proof, log)
}

/// A signed note: `origin\nsize\nroot-hash\n[more lines]\n\n— name base64(key-hint ‖ signature)`,
/// perhaps with witnesses' cosignatures beside the log's.
fn check_checkpoint(note: &str, proof: &InclusionProof, log: &Log) -> Result<(), SigstoreError> {
    let bad = |why: &str| SigstoreError::Log(format!("the checkpoint {why}"));
    let (text, signatures) = note
        .split_once("\n\n")
        .ok_or_else(|| bad("is not a signed note"))?;
    let signed = format!("{text}\n");
    let hint = log.key_id.get(..4).ok_or_else(|| bad("names no log"))?;
    let mut lines = text.lines();
    let (origin, size, root) = (lines.next(), lines.next(), lines.next());
    // The log signs as its name: the origin, less the tree ID Rekor v1 appends to it. A signature
    // under another name is a witness's (or a forger's), not the log's.
    let name = origin
        .filter(|o| !o.is_empty())
        .map(|o| o.split(" - ").next().unwrap_or(o))
        .ok_or_else(|| bad("has no origin"))?;
    let verified = signatures.lines().any(|line| {
        let Some((who, sig)) = line
            .strip_prefix("\u{2014} ")
            .and_then(|rest| rest.rsplit_once(' '))
        else {
            return false;
        };
        match STANDARD.decode(sig) {
            Ok(raw) if who == name && raw.len() > 4 && &raw[..4] == hint => {
                log.verifies(signed.as_bytes(), &raw[4..])
            }
            _ => false,
        }
    });
    if !verified {
        return Err(bad(
            "is not signed by the log that holds the entry, under its name",
        ));
    }
    if size.and_then(|s| s.parse::<u64>().ok()) != Some(proof.tree_size.0) {
        return Err(bad("is for another tree size than the inclusion proof"));
    }
    if root.and_then(|r| STANDARD.decode(r).ok()).as_deref() != Some(proof.root_hash.0.as_slice()) {
        return Err(bad("commits to another root hash than the inclusion proof"));
    }
    Ok(())
}

/// RFC 9162, 2.1.3.2: the root hash a proof leads to from leaf `index` of a tree of `size` leaves.
fn root_from_proof(
    index: u64,
    size: u64,
    leaf: [u8; 32],
    path: &[super::model::B64],
) -> Option<[u8; 32]> {
    if index >= size {
        return None;
    }
    let (mut f, mut s, mut r) = (index, size - 1, leaf);
    for p in path {
        let p: &[u8] = &p.0;
        if s == 0 || p.len() != 32 {
            return None;
        }
        if f & 1 == 1 || f == s {
            r = hash(&[&[1u8], p, &r]);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            r = hash(&[&[1u8], &r, p]);
        }
        f >>= 1;
        s >>= 1;
    }
    (s == 0).then_some(r)
}

/// What the entry's body says was logged, for the checks against the bundle.
pub(super) struct Body {
    /// The signature bytes it records.
    pub(super) signature: Vec<u8>,
    /// The signer it records: a certificate or a public key (SubjectPublicKeyInfo), as DER.
    pub(super) signer: Vec<u8>,
    /// The SHA-256 it records, in hex: of what [`Self::covers`] says.
    pub(super) digest: String,
    pub(super) covers: Covers,
}

/// What an entry's digest is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Covers {
    /// What the signature signs: the artifact, or an envelope's pre-authentication encoding
    /// (hashedrekord).
    Message,
    /// An envelope's payload (dsse, intoto).
    Payload,
}

/// Read the body of an entry of `kind` and `version`.
pub(super) fn body(raw: &[u8], kind: &str, version: &str) -> Result<Body, SigstoreError> {
    let bad = |why: &str| SigstoreError::Log(format!("the log entry's body {why}"));
    let v: Value = serde_json::from_slice(raw).map_err(|_| bad("is not JSON"))?;
    if v["kind"] != kind || v["apiVersion"] != version {
        return Err(bad("is of another kind than the entry says"));
    }
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| bad("lacks a field"))
    };
    let b64 = |v: &Value| {
        v.as_str()
            .and_then(|s| STANDARD.decode(s).ok())
            .ok_or_else(|| bad("holds malformed base64"))
    };
    let sha256 = |v: &Value| {
        if v["algorithm"] != "sha256" {
            return Err(bad("uses another hash than SHA-256"));
        }
        text(&v["value"])
    };
    // Version 0.0.2 (Rekor v2) names the algorithm as Sigstore's protobufs do, in base64.
    let sha256_v2 = |v: &Value| {
        if v["algorithm"] != "SHA2_256" {
            return Err(bad("uses another hash than SHA-256"));
        }
        Ok(hex(&b64(&v["digest"])?))
    };
    let pem = |v: &Value| {
        let pem = b64(v)?;
        CertificateDer::from_pem_slice(&pem)
            .map(|c| c.to_vec())
            .or_else(|_| SubjectPublicKeyInfoDer::from_pem_slice(&pem).map(|k| k.to_vec()))
            .map_err(|_| bad("records a signer that is neither a PEM certificate nor a PEM key"))
    };
    let verifier = |v: &Value| {
        b64(&v["x509Certificate"]["rawBytes"]).or_else(|_| b64(&v["publicKey"]["rawBytes"]))
    };
    let spec = &v["spec"];
    match (kind, version) {
        ("hashedrekord", "0.0.1") => Ok(Body {
            signature: b64(&spec["signature"]["content"])?,
            signer: pem(&spec["signature"]["publicKey"]["content"])?,
            digest: sha256(&spec["data"]["hash"])?,
            covers: Covers::Message,
        }),
        ("hashedrekord", "0.0.2") => {
            let spec = &spec["hashedRekordV002"];
            Ok(Body {
                signature: b64(&spec["signature"]["content"])?,
                signer: verifier(&spec["signature"]["verifier"])?,
                digest: sha256_v2(&spec["data"])?,
                covers: Covers::Message,
            })
        }
        ("dsse", "0.0.2") => {
            let spec = &spec["dsseV002"];
            let one = only_signature(&spec["signatures"])?;
            Ok(Body {
                signature: b64(&one["content"])?,
                signer: verifier(&one["verifier"])?,
                digest: sha256_v2(&spec["payloadHash"])?,
                covers: Covers::Payload,
            })
        }
        ("dsse", "0.0.1") => {
            let one = only_signature(&spec["signatures"])?;
            Ok(Body {
                signature: b64(&one["signature"])?,
                signer: pem(&one["verifier"])?,
                digest: sha256(&spec["payloadHash"])?,
                covers: Covers::Payload,
            })
        }
        ("intoto", "0.0.2") => {
            let content = &spec["content"];
            let one = only_signature(&content["envelope"]["signatures"])?;
            // This kind encodes the signature twice in base64.
            let sig = b64(&one["sig"])?;
            let sig = STANDARD
                .decode(&sig)
                .map_err(|_| bad("holds malformed base64"))?;
            Ok(Body {
                signature: sig,
                signer: pem(&one["publicKey"])?,
                digest: sha256(&content["payloadHash"])?,
                covers: Covers::Payload,
            })
        }
        _ => Err(SigstoreError::Unsupported(format!(
            "log entries of kind {kind} {version} (supported: hashedrekord 0.0.1 and 0.0.2, dsse 0.0.1 and 0.0.2, intoto 0.0.2)"
        ))),
    }
}

/// The one signature of a body's list: an entry records exactly one.
fn only_signature(list: &Value) -> Result<&Value, SigstoreError> {
    let bad = |why: &str| SigstoreError::Log(format!("the log entry's body {why}"));
    match list.as_array().map(Vec::as_slice) {
        Some([one]) => Ok(one),
        Some(_) => Err(bad("records more or fewer than one signature")),
        None => Err(bad("lacks signatures")),
    }
}

pub(super) fn hash(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
