//! `[trust]` resolved: which keys or keyless identities vouch for which registry or repository prefix,
//! and whether a signature is required there. The longest matching prefix decides; once any signer is
//! configured, an `oci://` source that no entry covers must be signed (and cannot be, so it is refused
//! with what to configure).

use std::sync::Arc;

use serde::Serialize;

use super::sigstore::{self, Bundle, Signer, TrustedRoot};
use super::{PublicKey, SignatureError, Subject, verify};

/// A keyless signer: whom Fulcio certified, and through which OIDC issuer.
#[derive(Debug, Clone)]
pub struct Keyless {
    /// The certificate's identity (an email address or a URI), exactly or as a glob.
    pub identity: String,
    matcher: Matcher,
    /// The OIDC issuer, exactly.
    pub issuer: String,
}

#[derive(Debug, Clone)]
enum Matcher {
    Exact,
    Glob(globset::GlobMatcher),
}

impl Keyless {
    /// `identity` is matched exactly unless it holds a glob character (`*`, `?`, `[`, `{`). In a glob,
    /// `*` and `?` stop at `/` and `**` crosses it: so `…/org/*/.github/workflows/release.yml@…`
    /// names one repository's workflow, and a branch whose name repeats that path (`x/.github/…`)
    /// cannot stand in for it.
    pub fn new(identity: &str, issuer: &str) -> Result<Self, String> {
        if identity.trim().is_empty() || issuer.trim().is_empty() {
            return Err("an identity and its issuer must not be empty".into());
        }
        let matcher = if identity.contains(['*', '?', '[', '{']) {
            let glob = globset::GlobBuilder::new(identity)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("{identity:?} is not a valid glob: {e}"))?;
            Matcher::Glob(glob.compile_matcher())
        } else {
            Matcher::Exact
        };
        Ok(Self {
            identity: identity.to_owned(),
            matcher,
            issuer: issuer.to_owned(),
        })
    }

    /// Whether a certificate's identity is this signer's.
    pub fn matches(&self, identity: &str) -> bool {
        match &self.matcher {
            Matcher::Exact => identity == self.identity,
            Matcher::Glob(glob) => glob.is_match(identity),
        }
    }
}

/// One `[trust."PREFIX"]` entry.
#[derive(Debug, Clone)]
pub struct TrustEntry {
    /// `REGISTRY` or `REGISTRY/REPOSITORY-PREFIX`, matched on path components.
    pub prefix: String,
    /// The keys whose signatures are accepted.
    pub keys: Vec<PublicKey>,
    /// The keyless signer whose Sigstore bundles are accepted.
    pub keyless: Option<Keyless>,
    /// The Sigstore trusted root bundles are verified against (required for bundles).
    pub root: Option<Arc<TrustedRoot>>,
    /// Whether an artifact without a valid signature by one of them is refused.
    pub require_signature: bool,
}

impl TrustEntry {
    fn has_signers(&self) -> bool {
        !self.keys.is_empty() || self.keyless.is_some()
    }
}

/// Every `[trust]` entry.
#[derive(Debug, Clone, Default)]
pub struct TrustPolicy {
    /// Longest prefix first, so the first match is the most specific.
    entries: Vec<TrustEntry>,
}

/// What an artifact of one repository must show.
#[derive(Debug, Clone, Copy)]
pub struct Requirement<'a> {
    /// The entry that applies, if any.
    pub prefix: Option<&'a str>,
    /// The keys its signatures are verified against.
    pub keys: &'a [PublicKey],
    /// The keyless signer its bundles are verified against.
    pub keyless: Option<&'a Keyless>,
    /// The trusted root for bundles.
    pub root: Option<&'a TrustedRoot>,
    /// Whether a valid signature is required.
    pub required: bool,
}

/// One piece of evidence that an artifact is signed.
#[derive(Debug, Clone, Copy)]
pub enum Evidence<'a> {
    /// cosign's legacy format: a simple-signing payload's exact bytes and its base64 signature.
    Legacy {
        /// The payload.
        payload: &'a [u8],
        /// The signature annotation.
        signature: &'a str,
    },
    /// A Sigstore bundle's bytes.
    Bundle(&'a [u8]),
}

/// What the signatures of an accepted artifact showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SignatureStatus {
    /// A trusted key verified a signature bound to the artifact.
    Verified {
        /// The key's name (its file).
        key: String,
    },
    /// A Sigstore bundle verified: keyless (an identity and its issuer) or by a key.
    Sigstore(Box<SignedBy>),
    /// Signers are configured for it, none verified a signature, and none is required.
    Unsigned,
    /// No signer is configured for it, so signatures were not looked at.
    NotChecked,
}

/// Who signed a verified Sigstore bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedBy {
    /// The certificate's identity that matched, or the key's name.
    pub signer: String,
    /// The OIDC issuer, for a keyless signature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// `sha256:<hex>` of the bundle.
    pub bundle: String,
}

impl std::fmt::Display for SignatureStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Verified { key } => write!(f, "signed ({key})"),
            Self::Sigstore(by) => match &by.issuer {
                Some(issuer) => write!(f, "signed keyless by {} ({issuer})", by.signer),
                None => write!(f, "signed ({}, Sigstore bundle)", by.signer),
            },
            Self::Unsigned => f.write_str("unsigned (not required)"),
            Self::NotChecked => f.write_str("not checked (no [trust] signer)"),
        }
    }
}

/// Why an artifact's signatures were not enough. Each says what to configure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// Keys are configured, but none for this repository.
    #[error(
        "{repository} is not covered by any [trust] entry, and signatures are required once any key \
         is configured: add [trust.\"{repository}\"] with its signer's public key or keyless identity (or \
         require-signature = false there, to accept it unsigned)"
    )]
    NotTrusted {
        /// `REGISTRY/REPOSITORY`.
        repository: String,
    },
    /// No signature at all.
    #[error(
        "{repository}@{digest} is not signed, and [trust.\"{prefix}\"] requires a signature: sign \
         it (`toolhost sign` or `cosign sign --key`), or set require-signature = false there"
    )]
    Unsigned {
        /// `REGISTRY/REPOSITORY`.
        repository: String,
        /// The manifest digest.
        digest: String,
        /// The trust entry that requires it.
        prefix: String,
    },
    /// Signatures, but none accepted: each one's reason.
    #[error("{repository}@{digest}: no signature accepted: {}", .reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Rejected {
        /// `REGISTRY/REPOSITORY`.
        repository: String,
        /// The manifest digest.
        digest: String,
        /// Why each signature was refused.
        reasons: Vec<SignatureError>,
    },
}

impl Requirement<'_> {
    /// Judge an artifact's `evidence` at `now` (Unix seconds): the first piece a trusted signer
    /// verifies for `subject` wins. Returns the status and, when verified, which piece it was.
    pub fn judge<'e>(
        &self,
        subject: Subject<'_>,
        evidence: impl IntoIterator<Item = Evidence<'e>>,
        now: u64,
    ) -> Result<(SignatureStatus, Option<usize>), TrustError> {
        if self.keys.is_empty() && self.keyless.is_none() {
            // A required entry always has signers (the config refuses one without), so a required
            // artifact without signers is one no entry covers.
            return if self.required {
                Err(TrustError::NotTrusted {
                    repository: subject.repository.to_owned(),
                })
            } else {
                Ok((SignatureStatus::NotChecked, None))
            };
        }
        let mut reasons = Vec::new();
        for (i, piece) in evidence.into_iter().enumerate() {
            let judged = match piece {
                Evidence::Legacy { payload, signature } => {
                    verify(payload, signature, self.keys, subject).map(|key| {
                        SignatureStatus::Verified {
                            key: key.name().to_owned(),
                        }
                    })
                }
                Evidence::Bundle(bytes) => self.judge_bundle(subject, bytes, now),
            };
            match judged {
                Ok(status) => return Ok((status, Some(i))),
                Err(e) => reasons.push(e),
            }
        }
        match (self.required, reasons.is_empty()) {
            (false, _) => Ok((SignatureStatus::Unsigned, None)),
            (true, true) => Err(TrustError::Unsigned {
                repository: subject.repository.to_owned(),
                digest: subject.digest.to_owned(),
                prefix: self.prefix.unwrap_or_default().to_owned(),
            }),
            (true, false) => Err(TrustError::Rejected {
                repository: subject.repository.to_owned(),
                digest: subject.digest.to_owned(),
                reasons,
            }),
        }
    }

    /// A bundle, for the keyless signer first, then for each key.
    fn judge_bundle(
        &self,
        subject: Subject<'_>,
        bytes: &[u8],
        now: u64,
    ) -> Result<SignatureStatus, SignatureError> {
        let Some(root) = self.root else {
            return Err(sigstore::SigstoreError::Root(
                "none is configured for this [trust] entry: set `trusted-root` to a trusted_root.json".into(),
            )
            .into());
        };
        let artifact = subject
            .digest
            .strip_prefix("sha256:")
            .and_then(unhex)
            .ok_or_else(|| SignatureError::WrongDigest {
                signed: String::new(),
                expected: subject.digest.to_owned(),
            })?;
        let bundle = Bundle::from_json(bytes)?;
        let mut last = None;
        if let Some(k) = self.keyless {
            let matches = |s: &str| k.matches(s);
            let signer = Signer::Identity {
                identity: &matches,
                shown: &k.identity,
                issuer: &k.issuer,
            };
            match sigstore::verify(&bundle, root, &artifact, signer, now).and_then(a_signature) {
                Ok(v) => {
                    return Ok(SignatureStatus::Sigstore(Box::new(SignedBy {
                        signer: v.signer,
                        issuer: v.issuer,
                        bundle: bundle.digest,
                    })));
                }
                Err(e) => last = Some(e),
            }
        }
        for key in self.keys {
            match sigstore::verify(&bundle, root, &artifact, Signer::Key(key), now)
                .and_then(a_signature)
            {
                Ok(v) => {
                    return Ok(SignatureStatus::Sigstore(Box::new(SignedBy {
                        signer: v.signer,
                        issuer: None,
                        bundle: bundle.digest,
                    })));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(
            || SignatureError::WrongKey {
                trusted: "none".into(),
            },
            Into::into,
        ))
    }
}

/// What `cosign sign` attests of an image: that its signer signed it, nothing more.
const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// A bundle vouches for an artifact as a signature only when it signs the digest itself or its
/// statement is cosign's signature predicate: an SBOM or a provenance attestation by the same
/// signer names the artifact too, and is no signature of it.
fn a_signature(v: sigstore::Verified) -> Result<sigstore::Verified, sigstore::SigstoreError> {
    match v.predicate.as_deref() {
        None | Some(COSIGN_SIGN_PREDICATE) => Ok(v),
        Some("") => Err(sigstore::SigstoreError::Artifact(format!(
            "the bundle's statement names no predicate type, so it is no signature \
             ({COSIGN_SIGN_PREDICATE}, as `cosign sign` writes)"
        ))),
        Some(other) => Err(sigstore::SigstoreError::Artifact(format!(
            "the bundle is an attestation of {other}, not a signature ({COSIGN_SIGN_PREDICATE}, \
             as `cosign sign` writes)"
        ))),
    }
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl TrustPolicy {
    /// The policy of these entries.
    pub fn new(mut entries: Vec<TrustEntry>) -> Self {
        entries.sort_by_key(|e| std::cmp::Reverse(e.prefix.len()));
        Self { entries }
    }

    /// Whether no signer is configured at all (then signatures are neither checked nor required).
    pub fn is_empty(&self) -> bool {
        !self.entries.iter().any(TrustEntry::has_signers)
    }

    /// What an artifact of `repository` (`REGISTRY/REPOSITORY`) must show.
    pub fn requirement(&self, repository: &str) -> Requirement<'_> {
        let matched = self.entries.iter().find(|e| {
            repository == e.prefix
                || repository
                    .strip_prefix(e.prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        match matched {
            Some(e) => Requirement {
                prefix: Some(&e.prefix),
                keys: &e.keys,
                keyless: e.keyless.as_ref(),
                root: e.root.as_deref(),
                required: e.require_signature,
            },
            None => Requirement {
                prefix: None,
                keys: &[],
                keyless: None,
                root: None,
                required: !self.is_empty(),
            },
        }
    }

    /// Every entry, most specific first.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> PublicKey {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden/cosign")
            .join(name);
        PublicKey::from_pem(name, &std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn the_longest_prefix_on_a_component_boundary_decides() {
        let policy = TrustPolicy::new(vec![
            TrustEntry {
                prefix: "reg.example.com".into(),
                keys: vec![key("other.pub")],
                keyless: None,
                root: None,
                require_signature: true,
            },
            TrustEntry {
                prefix: "reg.example.com/tools".into(),
                keys: vec![key("trusted.pub")],
                keyless: None,
                root: None,
                require_signature: true,
            },
            TrustEntry {
                prefix: "127.0.0.1:5000/scratch".into(),
                keys: vec![],
                keyless: None,
                root: None,
                require_signature: false,
            },
        ]);
        let r = policy.requirement("reg.example.com/tools/echo");
        assert_eq!(r.prefix, Some("reg.example.com/tools"));
        assert_eq!(r.keys[0].name(), "trusted.pub");
        // "tools-extra" is not under "tools".
        let r = policy.requirement("reg.example.com/tools-extra/echo");
        assert_eq!(r.prefix, Some("reg.example.com"));
        let r = policy.requirement("127.0.0.1:5000/scratch/echo");
        assert!(!r.required && r.keys.is_empty());
        // Keys are configured, so what no entry covers must be signed, by no key: refused.
        let r = policy.requirement("ghcr.io/someone/tool");
        assert!(r.required && r.keys.is_empty() && r.prefix.is_none());
        // No keys anywhere: nothing is checked.
        let none = TrustPolicy::default();
        assert!(!none.requirement("ghcr.io/someone/tool").required);
    }
}
