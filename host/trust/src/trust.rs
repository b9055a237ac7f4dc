//! Which signatures toolhost trusts: ECDSA P-256 public keys, and cosign's simple-signing format.
//!
//! cosign signs a small JSON payload that names the artifact's manifest digest and repository, and
//! stores it as a layer of the `sha256-<hex>.sig` manifest in the same repository, with the base64
//! DER signature over the payload's exact bytes in an annotation. [`verify`] judges such a payload:
//! first the signature against the trusted keys, then what the signed payload says. It is stricter
//! than cosign, which ignores the repository: a signature copied to another repository is refused
//! (a mirror must be signed again). Pure: it judges bytes handed to it; fetching them from a
//! registry is the host's work.

mod policy;
pub mod sigstore;

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, UnparsedPublicKey,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};
use serde::Deserialize;

pub use self::policy::{
    Evidence, Keyless, Requirement, SignatureStatus, SignedBy, TrustEntry, TrustError, TrustPolicy,
};

/// The media type of a simple-signing payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation that holds the base64 DER signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of every simple-signing payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// A P-256 SubjectPublicKeyInfo is its algorithm identifiers (id-ecPublicKey, prime256v1) and then
/// the 65-byte uncompressed point: this prefix, always.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
/// Largest payload judged: cosign's are a few hundred bytes; a registry may serve anything.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 10;

/// A trusted ECDSA P-256 public key, with the name it is known by (its file, in messages).
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    name: String,
    point: Vec<u8>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("name", &self.name)
            .finish()
    }
}

/// Why a public key file was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not a PEM `PUBLIC KEY` block.
    #[error("{name}: not a PEM public key (expected a \"-----BEGIN PUBLIC KEY-----\" block)")]
    NotPem {
        /// The key's name.
        name: String,
    },
    /// Not an unencrypted PEM `PRIVATE KEY` block.
    #[error(
        "{name}: not an unencrypted PKCS#8 private key (expected a \"-----BEGIN PRIVATE KEY-----\" block; \
         convert one with `openssl pkcs8 -topk8 -nocrypt`)"
    )]
    NotPrivate {
        /// The key's name.
        name: String,
    },
    /// A public key of another kind (RSA, another curve).
    #[error(
        "{name}: not an ECDSA P-256 public key (cosign's default; RSA and other curves are not accepted)"
    )]
    NotP256 {
        /// The key's name.
        name: String,
    },
}

impl PublicKey {
    /// The key in `pem` (a `PUBLIC KEY` block, as `cosign generate-key-pair` and `openssl pkey
    /// -pubout` write it), known as `name`.
    pub fn from_pem(name: &str, pem: &[u8]) -> Result<Self, KeyError> {
        let der = SubjectPublicKeyInfoDer::from_pem_slice(pem).map_err(|_| KeyError::NotPem {
            name: name.to_owned(),
        })?;
        let der: &[u8] = der.as_ref();
        match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
            Some(point) if point.len() == 65 && point[0] == 0x04 => Ok(Self {
                name: name.to_owned(),
                point: point.to_vec(),
            }),
            _ => Err(KeyError::NotP256 {
                name: name.to_owned(),
            }),
        }
    }

    /// The name the key is known by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key as a DER SubjectPublicKeyInfo.
    fn spki(&self) -> Vec<u8> {
        [&P256_SPKI_PREFIX[..], &self.point].concat()
    }

    fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(message, signature)
            .is_ok()
    }
}

/// A private ECDSA P-256 key that signs for `toolhost sign`.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

impl SigningKey {
    /// The key in `pem`: an unencrypted PKCS#8 `PRIVATE KEY` block, as `openssl pkcs8 -topk8
    /// -nocrypt` writes it. cosign's own encrypted key files are not read: export the key first.
    pub fn from_pem(name: &str, pem: &[u8]) -> Result<Self, KeyError> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem).map_err(|_| KeyError::NotPrivate {
            name: name.to_owned(),
        })?;
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            der.secret_pkcs8_der(),
            &SystemRandom::new(),
        )
        .map_err(|_| KeyError::NotP256 {
            name: name.to_owned(),
        })?;
        Ok(Self { pair })
    }

    /// The base64 DER signature over `payload`'s exact bytes, as cosign stores it.
    pub fn sign(&self, payload: &[u8]) -> String {
        // Signing fails only when the system's random source does.
        let signature = self
            .pair
            .sign(&SystemRandom::new(), payload)
            .expect("the system random source failed");
        STANDARD.encode(signature.as_ref())
    }
}

/// The simple-signing payload cosign signs for `subject`, byte for byte as cosign writes it.
pub fn payload(subject: Subject<'_>) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": subject.repository},
            "image": {"docker-manifest-digest": subject.digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// What a signature must be bound to: the artifact's manifest digest and its repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subject<'a> {
    /// `sha256:<hex>` of the manifest being verified.
    pub digest: &'a str,
    /// `REGISTRY/REPOSITORY`, no tag, e.g. `registry.example.com/tools/echo`.
    pub repository: &'a str,
}

/// Why a signature was not accepted. Each says what to check or configure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The payload is larger than any cosign payload.
    #[error("the signed payload is {0} bytes; a cosign payload is a few hundred")]
    TooLarge(usize),
    /// The annotation is not base64.
    #[error("the signature annotation is not base64")]
    NotBase64,
    /// No trusted key verifies the signature: signed with another key, or the payload was altered.
    #[error(
        "no trusted key verifies this signature (trusted: {trusted}); it was made with another key \
         or the payload was altered: add the signer's public key to the [trust] entry, if you trust it"
    )]
    WrongKey {
        /// The names of the keys tried.
        trusted: String,
    },
    /// The signed payload is not a simple-signing payload.
    #[error("the signed payload is not a cosign simple-signing payload: {0}")]
    NotPayload(String),
    /// The signature is for another manifest (another tag's, or an older push's).
    #[error(
        "the signature is for manifest {signed}, not {expected}: the artifact was changed after signing, or the signature belongs to another tag"
    )]
    WrongDigest {
        /// The digest the payload names.
        signed: String,
        /// The digest being verified.
        expected: String,
    },
    /// A Sigstore bundle that does not hold, for the reason it names.
    #[error("Sigstore bundle: {0}")]
    Bundle(#[from] sigstore::SigstoreError),
    /// The signature is for another repository.
    #[error(
        "the signature is for repository {signed}, not {expected}: a copy must be signed where it is published"
    )]
    WrongRepository {
        /// The repository the payload names.
        signed: String,
        /// The repository being verified.
        expected: String,
    },
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// Accept `payload` (the layer's exact bytes) with `signature` (the annotation's base64) when one
/// of `keys` verifies it and it names `subject`; returns the key that did.
pub fn verify<'k>(
    payload: &[u8],
    signature: &str,
    keys: &'k [PublicKey],
    subject: Subject<'_>,
) -> Result<&'k PublicKey, SignatureError> {
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(SignatureError::TooLarge(payload.len()));
    }
    let signature = STANDARD
        .decode(signature.trim())
        .map_err(|_| SignatureError::NotBase64)?;
    let Some(key) = keys.iter().find(|k| k.verifies(payload, &signature)) else {
        let trusted = keys.iter().map(PublicKey::name).collect::<Vec<_>>();
        return Err(SignatureError::WrongKey {
            trusted: if trusted.is_empty() {
                "none".to_owned()
            } else {
                trusted.join(", ")
            },
        });
    };
    // Only now, signed by a trusted key, is what the payload says worth reading.
    let p: Payload =
        serde_json::from_slice(payload).map_err(|e| SignatureError::NotPayload(e.to_string()))?;
    if p.critical.kind != PAYLOAD_TYPE {
        return Err(SignatureError::NotPayload(format!(
            "its type is {:?}, not {PAYLOAD_TYPE:?}",
            p.critical.kind
        )));
    }
    if p.critical.image.docker_manifest_digest != subject.digest {
        return Err(SignatureError::WrongDigest {
            signed: p.critical.image.docker_manifest_digest,
            expected: subject.digest.to_owned(),
        });
    }
    if p.critical.identity.docker_reference != subject.repository {
        return Err(SignatureError::WrongRepository {
            signed: p.critical.identity.docker_reference,
            expected: subject.repository.to_owned(),
        });
    }
    Ok(key)
}

/// The tag cosign stores the signatures of manifest `digest` under: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &str) -> Option<String> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| format!("sha256-{hex}.sig"))
}

#[cfg(test)]
mod tests;
