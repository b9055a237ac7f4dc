//! Certificate transparency: the signed certificate timestamp (RFC 6962) Fulcio embeds in each
//! certificate it issues, a CT log's promise to publish it. Checked against the CT logs of the
//! trusted root, so that a certificate the authority issued without logging it, a mis-issuance
//! nobody could have seen, is refused.

use der::asn1::OctetString;
use der::{Decode as _, Encode as _};
use x509_cert::Certificate;

use super::tlog::hash;
use super::{Log, SigstoreError};

const SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";

fn bad(why: &str) -> SigstoreError {
    SigstoreError::Certificate(format!("certificate transparency: {why}"))
}

/// Check that one of `leaf`'s embedded timestamps was signed by a CT log of `logs` (while its key
/// was valid) over the certificate as it was logged: the precertificate, which is the certificate
/// without the timestamps, issued by one of the keys whose SubjectPublicKeyInfos are `issuers`.
pub(super) fn check(
    leaf: &Certificate,
    issuers: &[Vec<u8>],
    logs: &[Log],
) -> Result<(), SigstoreError> {
    let mut tbs = leaf.tbs_certificate.clone();
    let extensions = tbs
        .extensions
        .as_mut()
        .ok_or_else(|| bad("the certificate has no extensions"))?;
    let at = extensions
        .iter()
        .position(|e| e.extn_id.to_string() == SCT_LIST)
        .ok_or_else(|| bad("the certificate carries no signed certificate timestamp"))?;
    let list = extensions.remove(at).extn_value;
    let precert = tbs
        .to_der()
        .map_err(|_| bad("the certificate cannot be re-encoded"))?;
    let list = OctetString::from_der(list.as_bytes())
        .map_err(|_| bad("the timestamp list is malformed"))?;
    let issuers: Vec<[u8; 32]> = issuers.iter().map(|k| hash(&[k])).collect();
    let mut reader = Reader(list.as_bytes());
    let mut all = Reader(
        reader
            .vector(2)
            .ok_or_else(|| bad("the timestamp list is malformed"))?,
    );
    let mut seen = false;
    while !all.0.is_empty() {
        let sct = all
            .vector(2)
            .ok_or_else(|| bad("a timestamp is malformed"))?;
        seen = true;
        if issuers.iter().any(|key| verifies(sct, &precert, key, logs)) {
            return Ok(());
        }
    }
    Err(bad(if seen {
        "no timestamp was signed by a CT log of the trusted root"
    } else {
        "the certificate carries no signed certificate timestamp"
    }))
}

/// Whether one serialized SCT (v1) verifies over the precertificate with one of `logs`.
fn verifies(sct: &[u8], precert: &[u8], issuer_key: &[u8; 32], logs: &[Log]) -> bool {
    let mut r = Reader(sct);
    let parsed = (|| {
        let version = r.take(1)?[0];
        let log_id = r.take(32)?;
        let timestamp = r.take(8)?;
        let extensions = r.vector(2)?;
        let _algorithms = r.take(2)?;
        let signature = r.vector(2)?;
        r.0.is_empty()
            .then_some((version, log_id, timestamp, extensions, signature))
    })();
    let Some((0, log_id, timestamp, extensions, signature)) = parsed else {
        return false;
    };
    let Some(log) = logs.iter().find(|l| l.key_id == log_id) else {
        return false;
    };
    let millis = u64::from_be_bytes(timestamp.try_into().unwrap_or_default());
    if !log.valid.contains(millis as i64) {
        return false;
    }
    let Ok(len) = u32::try_from(precert.len()) else {
        return false;
    };
    // RFC 6962 3.2: the signed struct of a precertificate entry.
    let mut signed = vec![0u8, 0u8];
    signed.extend_from_slice(timestamp);
    signed.extend_from_slice(&[0, 1]);
    signed.extend_from_slice(issuer_key);
    signed.extend_from_slice(&len.to_be_bytes()[1..]);
    signed.extend_from_slice(precert);
    signed.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    signed.extend_from_slice(extensions);
    len < 1 << 24 && log.verifies(&signed, signature)
}

/// A cursor over TLS-encoded bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    /// A vector whose length is written in `width` bytes.
    fn vector(&mut self, width: usize) -> Option<&'a [u8]> {
        let len = self
            .take(width)?
            .iter()
            .fold(0usize, |n, b| n << 8 | usize::from(*b));
        self.take(len)
    }
}
