//! The signing certificate: its chain to a certificate authority of the trusted root at the time the
//! log recorded the entry, and the identity and issuer Fulcio wrote into it.

use der::asn1::{Ia5String, Utf8StringRef};
use der::{Decode as _, Encode as _};
use rustls_pki_types::{CertificateDer, UnixTime};
use x509_cert::Certificate;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use super::{Authority, Log, SigstoreError, sct};

/// Extended key usage Fulcio gives every signing certificate: code signing (1.3.6.1.5.5.7.3.3).
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Fulcio's OIDC issuer extensions: the DER-encoded one (1.3.6.1.4.1.57264.1.8) and the older raw one
/// (1.3.6.1.4.1.57264.1.1).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
const SAN: &str = "2.5.29.17";
const USERNAME: &str = "1.3.6.1.4.1.57264.1.7";

/// A parsed signing certificate.
pub(super) struct Leaf {
    pub(super) der: Vec<u8>,
    cert: Certificate,
}

/// The curve of an ECDSA key, which decides the algorithm its signatures use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Curve {
    P256,
    P384,
}

impl Leaf {
    pub(super) fn parse(der: Vec<u8>) -> Result<Self, SigstoreError> {
        let cert = Certificate::from_der(&der)
            .map_err(|e| SigstoreError::Certificate(format!("not a DER certificate: {e}")))?;
        Ok(Self { der, cert })
    }

    /// Whether it is its own issuer (a root, which a bundle must not carry).
    pub(super) fn self_issued(&self) -> bool {
        self.cert.tbs_certificate.issuer == self.cert.tbs_certificate.subject
    }

    /// When it became valid, in Unix seconds.
    pub(super) fn not_before(&self) -> i64 {
        self.cert
            .tbs_certificate
            .validity
            .not_before
            .to_unix_duration()
            .as_secs() as i64
    }

    /// Its public key: the curve and the uncompressed point.
    pub(super) fn key(&self) -> Result<(Curve, &[u8]), SigstoreError> {
        let spki = &self.cert.tbs_certificate.subject_public_key_info;
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<der::asn1::ObjectIdentifier>().ok())
            .map(|oid| oid.to_string());
        let curve = match curve.as_deref() {
            Some("1.2.840.10045.3.1.7") => Curve::P256,
            Some("1.3.132.0.34") => Curve::P384,
            _ => {
                return Err(SigstoreError::Certificate(
                    "the signing certificate's key is not ECDSA P-256 or P-384".into(),
                ));
            }
        };
        let point = spki.subject_public_key.as_bytes().ok_or_else(|| {
            SigstoreError::Certificate("the signing certificate's key is malformed".into())
        })?;
        Ok((curve, point))
    }

    /// Its subject alternative names that can name a signer: email addresses and URIs.
    pub(super) fn identities(&self) -> Vec<String> {
        let Some(ext) = self.extension(SAN) else {
            return Vec::new();
        };
        let Ok(SubjectAltName(names)) = SubjectAltName::from_der(ext) else {
            return Vec::new();
        };
        names
            .into_iter()
            .filter_map(|n| match n {
                GeneralName::Rfc822Name(s) => Some(s.to_string()),
                GeneralName::UniformResourceIdentifier(s) => Some(s.to_string()),
                // Fulcio's only other name: a username (`user!domain`); any other is not an identity.
                GeneralName::OtherName(o) if o.type_id.to_string() == USERNAME => o
                    .value
                    .decode_as::<Utf8StringRef<'_>>()
                    .ok()
                    .map(|s| s.to_string()),
                _ => None,
            })
            .collect()
    }

    /// The OIDC issuer Fulcio recorded.
    pub(super) fn issuer(&self) -> Option<String> {
        if let Some(v) = self.extension(ISSUER_V2) {
            return Utf8StringRef::from_der(v)
                .map(|s| s.to_string())
                .or_else(|_| Ia5String::from_der(v).map(|s| s.to_string()))
                .ok();
        }
        self.extension(ISSUER_V1)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_owned)
    }

    /// Check its embedded signed certificate timestamps against the CT `logs`; its issuer is
    /// one of `authorities`' certificates.
    pub(super) fn transparency(
        &self,
        authorities: &[Authority],
        logs: &[Log],
    ) -> Result<(), SigstoreError> {
        let issuer = &self.cert.tbs_certificate.issuer;
        let keys: Vec<Vec<u8>> = authorities
            .iter()
            .flat_map(|a| &a.chain)
            .filter_map(|der| Certificate::from_der(der).ok())
            .filter(|c| &c.tbs_certificate.subject == issuer)
            .filter_map(|c| c.tbs_certificate.subject_public_key_info.to_der().ok())
            .collect();
        sct::check(&self.cert, &keys, logs)
    }

    fn extension(&self, oid: &str) -> Option<&[u8]> {
        self.cert
            .tbs_certificate
            .extensions
            .as_ref()?
            .iter()
            .find(|e| e.extn_id.to_string() == oid)
            .map(|e| e.extn_value.as_bytes())
    }

    /// Chain it to one of `authorities` (each valid when the certificate was issued), valid at
    /// `time` (when the log recorded the entry), for code signing.
    pub(super) fn chain(&self, authorities: &[Authority], time: u64) -> Result<(), SigstoreError> {
        let leaf = CertificateDer::from(self.der.as_slice());
        let end = webpki::EndEntityCert::try_from(&leaf)
            .map_err(|e| SigstoreError::Certificate(format!("unusable certificate: {e}")))?;
        let issued = self.not_before() * 1000;
        let mut last = None;
        for ca in authorities.iter().filter(|ca| ca.valid.contains(issued)) {
            let Some((root, intermediates)) = ca.chain.split_last() else {
                continue;
            };
            let root = CertificateDer::from(root.as_slice());
            let anchor = match webpki::anchor_from_trusted_cert(&root) {
                Ok(a) => a,
                Err(e) => {
                    last = Some(format!("the trusted root's certificate is unusable: {e}"));
                    continue;
                }
            };
            let intermediates: Vec<CertificateDer<'_>> = intermediates
                .iter()
                .map(|c| CertificateDer::from(c.as_slice()))
                .collect();
            match end.verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &[anchor],
                &intermediates,
                UnixTime::since_unix_epoch(std::time::Duration::from_secs(time)),
                webpki::KeyUsage::required(CODE_SIGNING),
                None,
                None,
            ) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(describe(e)),
            }
        }
        Err(SigstoreError::Certificate(last.unwrap_or_else(|| {
            "no certificate authority of the trusted root was valid when the certificate was issued"
                .into()
        })))
    }
}

fn describe(e: webpki::Error) -> String {
    match e {
        webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
            "the certificate was not valid when the log recorded the signature".into()
        }
        webpki::Error::UnknownIssuer => {
            "the certificate does not chain to a certificate authority of the trusted root".into()
        }
        other => format!("the certificate does not chain to the trusted root: {other}"),
    }
}
