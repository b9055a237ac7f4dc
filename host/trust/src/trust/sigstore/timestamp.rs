//! RFC 3161 timestamps: a timestamp authority's signed word that a signature existed at a time.
//! Rekor v2 entries carry no integrated time, so a timestamp is what dates their signature (and so
//! decides whether the signing certificate was valid); a Rekor v1 bundle may carry them too.
//!
//! A timestamp is taken when: the authority's response granted it; the token is CMS signed data
//! over a `TSTInfo` whose message imprint is the hash of the bundle's signature; its one signer
//! signed the attributes that bind that `TSTInfo` (its content type and digest); and the signer's
//! certificate (embedded in the token, or the authority's own from the trusted root) chains to a
//! timestamp authority of the trusted root, for time stamping, at the time it states, which lies
//! inside that authority's validity in the trusted root.

use cms::cert::CertificateChoices;
use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier};
use der::asn1::{ObjectIdentifier, OctetString};
use der::{Decode as _, Encode as _};
use rustls_pki_types::{CertificateDer, SignatureVerificationAlgorithm, UnixTime};
use sha2::{Digest as _, Sha256, Sha384, Sha512};
use x509_cert::Certificate;
use x509_tsp::{TimeStampResp, TstInfo};

use super::{Authority, SigstoreError};

/// Extended key usage of a timestamp authority's certificate: time stamping (1.3.6.1.5.5.7.3.8).
const TIME_STAMPING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08];
const SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");

fn bad(why: impl std::fmt::Display) -> SigstoreError {
    SigstoreError::Timestamp(why.to_string())
}

/// Verify one timestamp (the authority's whole response, as bundles hold it) over `signature`:
/// the time it states, in Unix seconds.
pub(super) fn verify(
    response: &[u8],
    signature: &[u8],
    authorities: &[Authority],
) -> Result<u64, SigstoreError> {
    let response = TimeStampResp::from_der(response)
        .map_err(|e| bad(format!("not a timestamp response: {e}")))?;
    // granted (0) or granted with modifications (1)
    if (response.status.status as u8) > 1 {
        return Err(bad("the authority did not grant it"));
    }
    let token: ContentInfo = response
        .time_stamp_token
        .ok_or_else(|| bad("the response holds no token"))?;
    if token.content_type != SIGNED_DATA {
        return Err(bad("the token is not CMS signed data"));
    }
    let signed: SignedData = token
        .content
        .decode_as()
        .map_err(|e| bad(format!("the token's signed data is malformed: {e}")))?;
    if signed.encap_content_info.econtent_type != TST_INFO {
        return Err(bad("the token does not hold a TSTInfo"));
    }
    let content: OctetString = signed
        .encap_content_info
        .econtent
        .as_ref()
        .ok_or_else(|| bad("the token's TSTInfo is missing"))?
        .decode_as()
        .map_err(|e| bad(format!("the token's content is malformed: {e}")))?;
    let content = content.as_bytes();
    let info =
        TstInfo::from_der(content).map_err(|e| bad(format!("the TSTInfo is malformed: {e}")))?;

    // What it stamps: the bundle's signature.
    let imprint = &info.message_imprint;
    let stamped = digest(&imprint.hash_algorithm.oid, signature)
        .ok_or_else(|| bad("the message imprint uses an unknown hash"))?;
    if imprint.hashed_message.as_bytes() != stamped.as_slice() {
        return Err(bad("it stamps something else than the bundle's signature"));
    }
    let time = info.gen_time.to_unix_duration().as_secs();

    // Who signed it, over what.
    let [signer] = signed.signer_infos.0.as_slice() else {
        return Err(bad("the token must have exactly one signer"));
    };
    let attributes = signer
        .signed_attrs
        .as_ref()
        .ok_or_else(|| bad("the token's signer signed no attributes"))?;
    let attribute = |oid: ObjectIdentifier| {
        let found: Vec<_> = attributes.iter().filter(|a| a.oid == oid).collect();
        match found.as_slice() {
            [one] if one.values.len() == 1 => Ok(one.values.get(0).cloned()),
            _ => Err(bad(format!("the signed attribute {oid} must appear once"))),
        }
    };
    let kind: ObjectIdentifier = attribute(CONTENT_TYPE)?
        .and_then(|v| v.decode_as().ok())
        .ok_or_else(|| bad("the signed content type is malformed"))?;
    if kind != TST_INFO {
        return Err(bad("the signed content type is not TSTInfo"));
    }
    let bound: OctetString = attribute(MESSAGE_DIGEST)?
        .and_then(|v| v.decode_as().ok())
        .ok_or_else(|| bad("the signed message digest is malformed"))?;
    let content_digest = digest(&signer.digest_alg.oid, content)
        .ok_or_else(|| bad("the signer uses an unknown hash"))?;
    if bound.as_bytes() != content_digest.as_slice() {
        return Err(bad("the signed attributes are for another TSTInfo"));
    }
    // The signature covers the attributes' DER, tagged as a SET OF.
    let message = attributes
        .to_der()
        .map_err(|e| bad(format!("the signed attributes are malformed: {e}")))?;
    let algorithms = algorithms(&signer.signature_algorithm.oid, &signer.digest_alg.oid);
    if algorithms.is_empty() {
        return Err(bad(format!(
            "the signature algorithm {} is not supported",
            signer.signature_algorithm.oid
        )));
    }

    // The signer's certificate: embedded, or the authority's own.
    let embedded: Vec<Vec<u8>> = signed
        .certificates
        .iter()
        .flat_map(|set| set.0.iter())
        .filter_map(|c| match c {
            CertificateChoices::Certificate(c) => c.to_der().ok(),
            CertificateChoices::Other(_) => None,
        })
        .collect();
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(time));
    let mut last = bad("no timestamp authority of the trusted root was valid at its time");
    for authority in authorities
        .iter()
        .filter(|a| a.valid.contains(time as i64 * 1000))
    {
        let Some((root, rest)) = authority.chain.split_last() else {
            continue;
        };
        let candidates: Vec<&[u8]> = if embedded.is_empty() {
            rest.first()
                .or(Some(root))
                .map(Vec::as_slice)
                .into_iter()
                .collect()
        } else {
            embedded.iter().map(Vec::as_slice).collect()
        };
        let intermediates: Vec<CertificateDer<'_>> = rest
            .iter()
            .chain(&embedded)
            .map(|c| CertificateDer::from(c.as_slice()))
            .collect();
        let anchor = CertificateDer::from(root.as_slice());
        let Ok(anchor) = webpki::anchor_from_trusted_cert(&anchor) else {
            last = bad("the trusted root's timestamp authority certificate is unusable");
            continue;
        };
        // Until a certificate answers to the signer's identifier, that is the reason.
        last = bad("its signer is not a certificate of a timestamp authority of the trusted root");
        for candidate in candidates.iter().filter(|c| identifies(&signer.sid, c)) {
            let der = CertificateDer::from(*candidate);
            let Ok(end) = webpki::EndEntityCert::try_from(&der) else {
                continue;
            };
            let chained = end.verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                std::slice::from_ref(&anchor),
                &intermediates,
                at,
                webpki::KeyUsage::required(TIME_STAMPING),
                None,
                None,
            );
            if let Err(e) = chained {
                last = bad(match e {
                    webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
                        "the authority's certificate was not valid at the time it states".into()
                    }
                    webpki::Error::UnknownIssuer => {
                        "its signer does not chain to a timestamp authority of the trusted root"
                            .into()
                    }
                    other => format!("its signer's certificate does not hold: {other}"),
                });
                continue;
            }
            if algorithms.iter().any(|alg| {
                end.verify_signature(*alg, &message, signer.signature.as_bytes())
                    .is_ok()
            }) {
                return Ok(time);
            }
            last = bad("the authority's signature does not verify");
        }
    }
    Err(last)
}

/// Whether `cert` is the one the signer identifier names.
fn identifies(sid: &SignerIdentifier, cert: &[u8]) -> bool {
    let Ok(cert) = Certificate::from_der(cert) else {
        return false;
    };
    let tbs = &cert.tbs_certificate;
    match sid {
        SignerIdentifier::IssuerAndSerialNumber(i) => {
            i.issuer == tbs.issuer && i.serial_number == tbs.serial_number
        }
        SignerIdentifier::SubjectKeyIdentifier(id) => {
            let Some(ext) = tbs
                .extensions
                .iter()
                .flatten()
                .find(|e| e.extn_id == ObjectIdentifier::new_unwrap("2.5.29.14"))
            else {
                return false;
            };
            OctetString::from_der(ext.extn_value.as_bytes())
                .is_ok_and(|v| v.as_bytes() == id.0.as_bytes())
        }
    }
}

/// `data` hashed with the SHA-2 function `oid` names.
fn digest(oid: &ObjectIdentifier, data: &[u8]) -> Option<Vec<u8>> {
    Some(match oid.to_string().as_str() {
        "2.16.840.1.101.3.4.2.1" => Sha256::digest(data).to_vec(),
        "2.16.840.1.101.3.4.2.2" => Sha384::digest(data).to_vec(),
        "2.16.840.1.101.3.4.2.3" => Sha512::digest(data).to_vec(),
        _ => return None,
    })
}

/// The verification algorithms a signer's signature algorithm and digest may mean: ECDSA names its
/// hash but not its curve; RSA is named with its hash, or as bare `rsaEncryption` beside the digest.
fn algorithms(
    signature: &ObjectIdentifier,
    digest: &ObjectIdentifier,
) -> Vec<&'static dyn SignatureVerificationAlgorithm> {
    use webpki::ring as alg;
    match (signature.to_string().as_str(), digest.to_string().as_str()) {
        ("1.2.840.10045.4.3.2", _) => vec![alg::ECDSA_P256_SHA256, alg::ECDSA_P384_SHA256],
        ("1.2.840.10045.4.3.3", _) => vec![alg::ECDSA_P384_SHA384, alg::ECDSA_P256_SHA384],
        ("1.2.840.113549.1.1.11", _) | ("1.2.840.113549.1.1.1", "2.16.840.1.101.3.4.2.1") => {
            vec![alg::RSA_PKCS1_2048_8192_SHA256]
        }
        ("1.2.840.113549.1.1.12", _) | ("1.2.840.113549.1.1.1", "2.16.840.1.101.3.4.2.2") => {
            vec![alg::RSA_PKCS1_2048_8192_SHA384]
        }
        ("1.2.840.113549.1.1.13", _) | ("1.2.840.113549.1.1.1", "2.16.840.1.101.3.4.2.3") => {
            vec![alg::RSA_PKCS1_2048_8192_SHA512]
        }
        _ => Vec::new(),
    }
}
