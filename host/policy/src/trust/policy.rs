//! `[trust]` resolved: which keys vouch for which registry or repository prefix, and whether a
//! signature is required there. The longest matching prefix decides; once any key is configured, an
//! `oci://` source that no entry covers must be signed (and cannot be, so it is refused with what
//! to configure).

use serde::Serialize;

use super::{PublicKey, SignatureError, Subject, verify};

/// One `[trust."PREFIX"]` entry.
#[derive(Debug, Clone)]
pub struct TrustEntry {
    /// `REGISTRY` or `REGISTRY/REPOSITORY-PREFIX`, matched on path components.
    pub prefix: String,
    /// The keys whose signatures are accepted.
    pub keys: Vec<PublicKey>,
    /// Whether an artifact without a valid signature by one of them is refused.
    pub require_signature: bool,
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
    /// Whether a valid signature is required.
    pub required: bool,
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
    /// Keys are configured for it, none verified a signature, and none is required.
    Unsigned,
    /// No key is configured for it, so signatures were not looked at.
    NotChecked,
}

impl std::fmt::Display for SignatureStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Verified { key } => write!(f, "signed ({key})"),
            Self::Unsigned => f.write_str("unsigned (not required)"),
            Self::NotChecked => f.write_str("not checked (no [trust] key)"),
        }
    }
}

/// Why an artifact's signatures were not enough. Each says what to configure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// Keys are configured, but none for this repository.
    #[error(
        "{repository} is not covered by any [trust] entry, and signatures are required once any key \
         is configured: add [trust.\"{repository}\"] with its signer's public key (or \
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
    /// Judge an artifact's `signatures` (each a payload's exact bytes and its base64 signature):
    /// the first one a trusted key verifies for `subject` wins. Returns the status and, when
    /// verified, which signature it was.
    pub fn judge<'s>(
        &self,
        subject: Subject<'_>,
        signatures: impl IntoIterator<Item = (&'s [u8], &'s str)>,
    ) -> Result<(SignatureStatus, Option<usize>), TrustError> {
        if self.keys.is_empty() {
            // A required entry always has keys (the config refuses one without), so a required
            // artifact without keys is one no entry covers.
            return if self.required {
                Err(TrustError::NotTrusted {
                    repository: subject.repository.to_owned(),
                })
            } else {
                Ok((SignatureStatus::NotChecked, None))
            };
        }
        let mut reasons = Vec::new();
        for (i, (payload, signature)) in signatures.into_iter().enumerate() {
            match verify(payload, signature, self.keys, subject) {
                Ok(key) => {
                    return Ok((
                        SignatureStatus::Verified {
                            key: key.name().to_owned(),
                        },
                        Some(i),
                    ));
                }
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
}

impl TrustPolicy {
    /// The policy of these entries.
    pub fn new(mut entries: Vec<TrustEntry>) -> Self {
        entries.sort_by_key(|e| std::cmp::Reverse(e.prefix.len()));
        Self { entries }
    }

    /// Whether no key is configured at all (then signatures are neither checked nor required).
    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|e| e.keys.is_empty())
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
                required: e.require_signature,
            },
            None => Requirement {
                prefix: None,
                keys: &[],
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
                require_signature: true,
            },
            TrustEntry {
                prefix: "reg.example.com/tools".into(),
                keys: vec![key("trusted.pub")],
                require_signature: true,
            },
            TrustEntry {
                prefix: "127.0.0.1:5000/scratch".into(),
                keys: vec![],
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
