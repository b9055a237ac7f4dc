//! Where a plugin comes from besides the plugins folder: an OCI registry (`oci://REGISTRY/REPO:TAG`
//! or `@sha256:…`) or an HTTPS URL pinned by its sha256; and content digests, the names pulled
//! bytes are checked against on every load. Pure: parsing and checking, no fetching.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// The largest plugin file accepted, from the plugins folder or a registry: a component is a few
/// MiB to a few dozen; anything near this is a mistake or an attack on the host's memory.
pub const MAX_PLUGIN_BYTES: u64 = 512 << 20;

/// A `sha256:<64 lowercase hex>` content digest: the only algorithm accepted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

/// Why a text is not a digest, or bytes do not match one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// Not `sha256:` and 64 lowercase hex digits.
    #[error("{0:?} is not a digest: expected sha256: and 64 lowercase hex digits")]
    Malformed(String),
    /// The bytes are not what the digest names: changed in transit or in the store.
    #[error("content does not match its digest: expected {expected}, got {actual}")]
    Mismatch {
        /// The digest the content should have.
        expected: Digest,
        /// The digest it has.
        actual: Digest,
    },
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let hash = Sha256::digest(bytes);
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        Self(format!("sha256:{hex}"))
    }

    /// `Ok` when `bytes` are what this digest names.
    pub fn check(&self, bytes: &[u8]) -> Result<(), DigestError> {
        let actual = Self::of(bytes);
        if actual == *self {
            Ok(())
        } else {
            Err(DigestError::Mismatch {
                expected: self.clone(),
                actual,
            })
        }
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Self, DigestError> {
        match s.strip_prefix("sha256:") {
            Some(hex)
                if hex.len() == 64
                    && hex
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
            {
                Ok(Self(s.to_owned()))
            }
            _ => Err(DigestError::Malformed(s.to_owned())),
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// An artifact in an OCI registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    /// `host[:port]`.
    pub registry: String,
    /// The repository path, lowercase, e.g. `tools/echo`.
    pub repository: String,
    /// A tag (which may move) or a digest (which may not).
    pub reference: Reference,
}

/// Which version of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A tag: resolved to a digest by `toolhost pull`, and locked.
    Tag(String),
    /// A manifest digest.
    Digest(Digest),
}

/// Why a source was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Not `oci://` (or `https://`, handled by the config).
    #[error(
        "{0:?} is not an OCI reference: expected oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:…"
    )]
    NotOci(String),
    /// The registry part is empty or not a host name with an optional port.
    #[error("{0:?}: the registry must be a host name or address with an optional port")]
    Registry(String),
    /// The repository is not lowercase path components of letters, digits and separators.
    #[error(
        "{0:?}: the repository must be lowercase path components (letters, digits, '.', '_', '-')"
    )]
    Repository(String),
    /// The tag is empty, too long, or has characters OCI does not allow.
    #[error("{0:?}: a tag is 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'")]
    Tag(String),
    /// The digest is malformed.
    #[error(transparent)]
    Digest(#[from] DigestError),
}

impl OciRef {
    /// `REGISTRY/REPOSITORY`: what a cosign signature names.
    pub fn repository_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

impl FromStr for OciRef {
    type Err = SourceError;

    fn from_str(s: &str) -> Result<Self, SourceError> {
        let rest = s
            .strip_prefix("oci://")
            .ok_or_else(|| SourceError::NotOci(s.to_owned()))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| SourceError::NotOci(s.to_owned()))?;
        if !is_registry(registry) {
            return Err(SourceError::Registry(registry.to_owned()));
        }
        let (repository, reference) = match path.split_once('@') {
            Some((repo, digest)) => (repo, Reference::Digest(digest.parse()?)),
            None => match path.rsplit_once(':') {
                Some((repo, tag)) if !tag.contains('/') => {
                    if !is_tag(tag) {
                        return Err(SourceError::Tag(tag.to_owned()));
                    }
                    (repo, Reference::Tag(tag.to_owned()))
                }
                _ => (path, Reference::Tag("latest".to_owned())),
            },
        };
        if !is_repository(repository) {
            return Err(SourceError::Repository(repository.to_owned()));
        }
        Ok(Self {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            reference,
        })
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        match &self.reference {
            Reference::Tag(t) => write!(f, ":{t}"),
            Reference::Digest(d) => write!(f, "@{d}"),
        }
    }
}

/// `host[:port]`: a host name or IPv4 address (letters, digits, '.', '-'), an optional numeric
/// port. IPv6 literals are not accepted.
pub fn is_registry(s: &str) -> bool {
    let (host, port) = s.split_once(':').map_or((s, None), |(h, p)| (h, Some(p)));
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// OCI's `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`, checked
/// component by component.
pub fn is_repository(s: &str) -> bool {
    s.len() <= 255
        && s.split('/').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|&x| x.is_ascii_lowercase() || x.is_ascii_digit() || b"._-".contains(&x))
        })
}

/// OCI's `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn is_tag(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=128).contains(&b.len())
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|&x| x.is_ascii_alphanumeric() || b"._-".contains(&x))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "4d3c1a7b0f2e9c8d6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f";

    #[test]
    fn parses_tags_digests_and_ports() {
        let r: OciRef = "oci://127.0.0.1:5000/tools/echo:1.0".parse().unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "tools/echo");
        assert_eq!(r.reference, Reference::Tag("1.0".into()));
        assert_eq!(r.repository_name(), "127.0.0.1:5000/tools/echo");
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/tools/echo:1.0");
        let d: OciRef = format!("oci://ghcr.io/org/tool@sha256:{HEX}")
            .parse()
            .unwrap();
        assert_eq!(
            d.reference,
            Reference::Digest(format!("sha256:{HEX}").parse().unwrap())
        );
        assert_eq!(
            d.to_string(),
            format!("oci://ghcr.io/org/tool@sha256:{HEX}")
        );
        let latest: OciRef = "oci://registry.example.com/echo".parse().unwrap();
        assert_eq!(latest.reference, Reference::Tag("latest".into()));
    }

    #[test]
    fn refuses_malformed_references() {
        for bad in [
            "https://ghcr.io/org/tool:1",
            "oci://ghcr.io",
            "oci:///tools/echo:1",
            "oci://ghcr.io/Tools/Echo:1",
            "oci://ghcr.io/tools//echo:1",
            "oci://ghcr.io/tools/../echo:1",
            "oci://ghcr.io/tools/echo:-bad",
            "oci://ghcr.io/tools/echo:",
            "oci://ghcr.io/tools/echo@sha256:abc",
            "oci://ghcr.io/tools/echo@md5:00",
            "oci://gh cr.io/tools/echo:1",
            "oci://ghcr.io:port/tools/echo:1",
        ] {
            assert!(bad.parse::<OciRef>().is_err(), "{bad}");
        }
    }

    #[test]
    fn digests_check_content() {
        let d = Digest::of(b"hello");
        assert_eq!(
            d.as_str(),
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert!(d.check(b"hello").is_ok());
        assert!(matches!(
            d.check(b"hellO"),
            Err(DigestError::Mismatch { .. })
        ));
        assert!(
            format!("sha256:{}", HEX.to_uppercase())
                .parse::<Digest>()
                .is_err()
        );
        assert_eq!(d.hex().len(), 64);
    }
}
