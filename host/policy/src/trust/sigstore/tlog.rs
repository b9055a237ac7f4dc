//! The transparency log's word for an entry: the signed entry timestamp (a promise that the entry was
//! logged at its integrated time), the Merkle inclusion proof (RFC 9162) up to a root hash, and the
//! checkpoint (a signed note) that commits the log to that root. And what the entry's body records,
//! held against the bundle.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
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

/// A signed note: `origin\nsize\nroot-hash\n[more lines]\n\n— name base64(key-hint ‖ signature)`.
fn check_checkpoint(note: &str, proof: &InclusionProof, log: &Log) -> Result<(), SigstoreError> {
    let bad = |why: &str| SigstoreError::Log(format!("the checkpoint {why}"));
    let (text, signatures) = note
        .split_once("\n\n")
        .ok_or_else(|| bad("is not a signed note"))?;
    let signed = format!("{text}\n");
    let hint = log.key_id.get(..4).ok_or_else(|| bad("names no log"))?;
    let verified = signatures.lines().any(|line| {
        let Some(rest) = line.strip_prefix("\u{2014} ") else {
            return false;
        };
        let Some((_, sig)) = rest.rsplit_once(' ') else {
            return false;
        };
        match STANDARD.decode(sig) {
            Ok(raw) if raw.len() > 4 && &raw[..4] == hint => {
                log.verifies(signed.as_bytes(), &raw[4..])
            }
            _ => false,
        }
    });
    if !verified {
        return Err(bad("is not signed by the log that holds the entry"));
    }
    let mut lines = text.lines();
    let (_origin, size, root) = (lines.next(), lines.next(), lines.next());
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
    /// The signer it records: a certificate or a public key, as PEM.
    pub(super) signer_pem: Vec<u8>,
    /// For a message signature, the SHA-256 of the artifact; for an envelope, of its payload.
    pub(super) digest: String,
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
    let spec = &v["spec"];
    match (kind, version) {
        ("hashedrekord", "0.0.1") => Ok(Body {
            signature: b64(&spec["signature"]["content"])?,
            signer_pem: b64(&spec["signature"]["publicKey"]["content"])?,
            digest: sha256(&spec["data"]["hash"])?,
        }),
        ("dsse", "0.0.1") => {
            let sigs = spec["signatures"]
                .as_array()
                .ok_or_else(|| bad("lacks signatures"))?;
            let [one] = sigs.as_slice() else {
                return Err(bad("records more or fewer than one signature"));
            };
            Ok(Body {
                signature: b64(&one["signature"])?,
                signer_pem: b64(&one["verifier"])?,
                digest: sha256(&spec["payloadHash"])?,
            })
        }
        ("intoto", "0.0.2") => {
            let content = &spec["content"];
            let sigs = content["envelope"]["signatures"]
                .as_array()
                .ok_or_else(|| bad("lacks signatures"))?;
            let [one] = sigs.as_slice() else {
                return Err(bad("records more or fewer than one signature"));
            };
            // This kind encodes the signature twice in base64.
            let sig = b64(&one["sig"])?;
            let sig = STANDARD
                .decode(&sig)
                .map_err(|_| bad("holds malformed base64"))?;
            Ok(Body {
                signature: sig,
                signer_pem: b64(&one["publicKey"])?,
                digest: sha256(&content["payloadHash"])?,
            })
        }
        _ => Err(SigstoreError::Unsupported(format!(
            "log entries of kind {kind} {version} (supported: hashedrekord 0.0.1, dsse 0.0.1, intoto 0.0.2)"
        ))),
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
