//! [`verify`]: one bundle against the trusted root, part by part, each refusal naming its part.

use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, UnparsedPublicKey, VerificationAlgorithm,
};

use super::cert::{Curve, Leaf};
use super::model::Statement;
use super::tlog::{self, Covers, hash, hex};
use super::{Bundle, Signer, SigstoreError, TrustedRoot, Verified, timestamp};

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
    match (&entry.inclusion_proof, needs_proof) {
        (Some(proof), _) => tlog::check_inclusion(entry, proof, log)?,
        (None, true) => {
            return Err(SigstoreError::Log(
                "the entry has no inclusion proof".into(),
            ));
        }
        // A v0.1 bundle may leave the proof out; then the log's signed entry timestamp (checked
        // below, with the integrated time it signs) is the log's only word, and it must be there.
        (None, false) if entry.integrated_time.is_none() => {
            return Err(SigstoreError::Log(
                "the entry has neither an inclusion proof nor the log's signed entry timestamp"
                    .into(),
            ));
        }
        (None, false) => {}
    }
    // When it was signed decides whether the certificate was valid, and only a signed word makes a
    // time more than the bundle's: the log's signed entry timestamp over its integrated time (Rekor
    // v1), and each RFC 3161 timestamp over the signature (Rekor v2 has only these). Every such time
    // must hold.
    let signature = match &content {
        Content::Message { signature, .. } | Content::Envelope { signature, .. } => *signature,
    };
    let mut times = Vec::new();
    if let Some(time) = entry.integrated_time {
        tlog::check_promise(entry, log)?;
        times.push(time.0);
    }
    for stamp in material
        .timestamp_verification_data
        .iter()
        .flat_map(|d| &d.rfc3161_timestamps)
    {
        times.push(timestamp::verify(
            &stamp.signed_timestamp.0,
            signature,
            &root.timestamp_authorities,
        )?);
    }
    let Some(&first) = times.iter().min() else {
        return Err(SigstoreError::Log(
            "nothing dates the signature: the entry has no integrated time (Rekor v2) and the bundle no timestamp"
                .into(),
        ));
    };
    for &time in &times {
        if time > now {
            return Err(SigstoreError::Log(
                "the signature is dated in the future".into(),
            ));
        }
        if !log.valid.contains(time as i64 * 1000) {
            return Err(SigstoreError::Log(
                "the log's key was not valid when the entry was recorded".into(),
            ));
        }
    }
    let body = tlog::body(
        &entry.canonicalized_body.0,
        &entry.kind_version.kind,
        &entry.kind_version.version,
    )?;

    // The signer, and that the log recorded this signer.
    let (key_spki, verified) = match leaf {
        Some(leaf) => keyless(leaf, root, &times, signer, &body)?,
        None => {
            let Signer::Key(key) = signer else {
                return Err(SigstoreError::Identity {
                    expected: "a keyless signature (a certificate)".into(),
                    found: "a key, with no certificate".into(),
                });
            };
            if body.signer != key.spki().as_slice() {
                return Err(SigstoreError::Identity {
                    expected: format!("the key {}", key.name()),
                    found: "another key (the one the log recorded)".into(),
                });
            }
            let verified = Verified {
                signer: key.name().to_owned(),
                issuer: None,
                integrated_time: first,
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
            if body.signature != signature || body.covers != Covers::Message {
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
            let logged = match body.covers {
                Covers::Payload => hash(&[payload]),
                // Rekor v2 logs an envelope as a hashedrekord of what its signature covers.
                Covers::Message => hash(&[&message]),
            };
            if body.signature != signature || body.digest != hex(&logged) {
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
            // An envelope always reports its predicate type, empty when the statement has none.
            predicate = Some(statement.predicate_type.unwrap_or_default());
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
    times: &[u64],
    signer: Signer<'_>,
    body: &tlog::Body,
) -> Result<((Curve, Vec<u8>), Verified), SigstoreError> {
    if body.signer != leaf.der {
        return Err(SigstoreError::Log(
            "the entry records another certificate".into(),
        ));
    }
    for &time in times {
        leaf.chain(&root.authorities, time)?;
    }
    leaf.transparency(&root.authorities, &root.ct_logs)?;
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
    let found = leaf.issuer();
    if found.as_deref() != Some(issuer) {
        return Err(SigstoreError::Issuer {
            expected: issuer.to_owned(),
            found: found.unwrap_or_else(|| "no issuer".into()),
        });
    }
    let (curve, point) = leaf.key()?;
    Ok((
        (curve, point.to_vec()),
        Verified {
            signer: matched.clone(),
            issuer: found,
            integrated_time: times.iter().copied().min().unwrap_or_default(),
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
