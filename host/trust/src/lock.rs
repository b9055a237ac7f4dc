//! `toolhost.lock`: every pulled plugin's source resolved to the digests it was pulled at, so that
//! `serve` loads exactly those bytes (from the local store, offline) and never follows a moved
//! tag unless `toolhost pull --update` rewrites the lock. Pure: the format and its checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::source::Digest;

/// The lockfile format this toolhost writes and reads.
pub const LOCK_VERSION: u32 = 1;

/// The whole lockfile.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    /// [`LOCK_VERSION`].
    pub version: u32,
    /// Locked plugins by name.
    #[serde(default, rename = "plugin")]
    pub plugins: BTreeMap<String, Locked>,
}

/// One plugin as it was pulled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Locked {
    /// The source as configured (`oci://…:TAG`, `https://…`), to notice when the config changes.
    pub source: String,
    /// The manifest digest the tag resolved to (OCI sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Digest>,
    /// The component's digest: what is loaded, checked on every load.
    pub component: Digest,
    /// The cosign signature verified at pull, kept so that `serve` verifies it again offline
    /// against the keys trusted then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<LockedSignature>,
    /// The Sigstore bundle verified at pull (kept in the store), and whom it showed: `serve`
    /// verifies it again offline against the trusted root and signers configured then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<LockedBundle>,
}

/// A Sigstore bundle as pulled: the bundle is in the store, by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedBundle {
    /// The bundle's digest.
    pub digest: Digest,
    /// The certificate's identity (keyless) or the key's name.
    pub signer: String,
    /// The OIDC issuer, for a keyless signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
}

/// A signature as pulled: its payload is in the store, by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedSignature {
    /// The simple-signing payload's digest.
    pub payload: Digest,
    /// The base64 signature over it.
    pub value: String,
}

/// Why a lockfile was refused.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Not TOML of this shape (a digest that is not one included).
    #[error("toolhost.lock is not a lockfile: {0}")]
    Parse(String),
    /// Written by a toolhost with another format.
    #[error(
        "toolhost.lock has format version {0}; this toolhost reads version {LOCK_VERSION}: run `toolhost pull --update`"
    )]
    Version(u32),
}

impl Lockfile {
    /// An empty lockfile of the current version.
    pub fn new() -> Self {
        Self {
            version: LOCK_VERSION,
            plugins: BTreeMap::new(),
        }
    }

    /// Read a lockfile's text.
    pub fn parse(text: &str) -> Result<Self, LockError> {
        let lock: Self = toml::from_str(text).map_err(|e| LockError::Parse(e.to_string()))?;
        if lock.version != LOCK_VERSION {
            return Err(LockError::Version(lock.version));
        }
        Ok(lock)
    }

    /// The lockfile's text: a header saying what it is, then the plugins in name order, so that
    /// it diffs well under version control.
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!("# toolhost.lock: written by `toolhost pull`; do not edit.\n{body}")
    }

    /// The locked entry of `plugin` when it was pulled from `source` (a changed source is not locked).
    pub fn get(&self, plugin: &str, source: &str) -> Option<&Locked> {
        self.plugins.get(plugin).filter(|l| l.source == source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(fill: char) -> Digest {
        format!("sha256:{}", fill.to_string().repeat(64))
            .parse()
            .unwrap()
    }

    #[test]
    fn round_trips_and_keys_entries_by_source() {
        let mut lock = Lockfile::new();
        lock.plugins.insert(
            "echo".into(),
            Locked {
                source: "oci://127.0.0.1:5000/tools/echo:1.0".into(),
                manifest: Some(digest('a')),
                component: digest('b'),
                signature: Some(LockedSignature {
                    payload: digest('c'),
                    value: "MEUCIQ==".into(),
                }),
                bundle: Some(LockedBundle {
                    digest: digest('d'),
                    signer:
                        "https://github.com/org/repo/.github/workflows/release.yml@refs/tags/v1"
                            .into(),
                    issuer: Some("https://token.actions.githubusercontent.com".into()),
                }),
            },
        );
        let text = lock.to_text();
        assert!(text.starts_with("# toolhost.lock"));
        assert!(text.contains("[plugin.echo]"), "{text}");
        let back = Lockfile::parse(&text).unwrap();
        assert_eq!(back, lock);
        assert!(
            back.get("echo", "oci://127.0.0.1:5000/tools/echo:1.0")
                .is_some()
        );
        assert!(
            back.get("echo", "oci://127.0.0.1:5000/tools/echo:2.0")
                .is_none()
        );
    }

    #[test]
    fn refuses_other_versions_bad_digests_and_unknown_fields() {
        assert!(matches!(
            Lockfile::parse("version = 2\n"),
            Err(LockError::Version(2))
        ));
        let bad = "version = 1\n[plugin.echo]\nsource = \"x\"\ncomponent = \"sha256:abc\"\n";
        assert!(matches!(Lockfile::parse(bad), Err(LockError::Parse(_))));
        let extra = format!(
            "version = 1\n[plugin.echo]\nsource = \"x\"\ncomponent = \"{}\"\nfollow = true\n",
            digest('c')
        );
        assert!(matches!(Lockfile::parse(&extra), Err(LockError::Parse(_))));
    }
}
