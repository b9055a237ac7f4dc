//! Plugins from elsewhere: `[plugins.NAME] source` (and `sha256`), `[registries."HOST"]` and
//! `[trust."PREFIX"]` as written, and their validation into [`PluginSource`]s and [`Sources`]. Key
//! files are read and parsed here, so a bad key stops the daemon at start (exit 2).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toolhost_trust::source::{Digest, OciRef, is_registry, is_repository};
use toolhost_trust::trust::sigstore::TrustedRoot;
use toolhost_trust::trust::{Keyless, PublicKey, TrustEntry, TrustPolicy};

use super::{ConfigError, invalid};

/// `[registries."HOST[:PORT]"]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawRegistry {
    /// Plain HTTP instead of HTTPS (a registry on loopback, in tests).
    #[serde(default)]
    pub insecure: bool,
    /// The environment variable holding the user name (with `password-env`).
    pub username_env: Option<String>,
    /// The environment variable holding the password or token.
    pub password_env: Option<String>,
}

/// `[trust."REGISTRY[/PREFIX]"]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawTrust {
    /// PEM files of ECDSA P-256 public keys, relative to the config file.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// Refuse artifacts without a valid signature by one of the keys. Default true.
    pub require_signature: Option<bool>,
    /// A keyless signer: the Fulcio certificate's identity (exact, or a glob), with `issuer`.
    pub identity: Option<String>,
    /// The OIDC issuer of `identity`, exactly.
    pub issuer: Option<String>,
    /// Sigstore's `trusted_root.json` (relative to the config file), for Sigstore bundles.
    pub trusted_root: Option<PathBuf>,
}

/// Where a plugin's component comes from, when not from the plugins folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// An OCI registry.
    Oci(OciRef),
    /// An HTTPS URL, pinned by the digest of what it serves.
    Https {
        /// The URL.
        url: String,
        /// The digest its body must have.
        digest: Digest,
    },
}

impl fmt::Display for PluginSource {
    /// As configured: the key the lockfile records it under.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Oci(r) => r.fmt(f),
            Self::Https { url, .. } => f.write_str(url),
        }
    }
}

/// How to reach one registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Plain HTTP.
    pub insecure: bool,
    /// The environment variables holding the user name and password, if configured.
    pub credentials_env: Option<(String, String)>,
}

/// Everything pulling and loading sourced plugins needs.
#[derive(Debug, Clone)]
pub struct Sources {
    /// `toolhost.lock`, beside the config file.
    pub lock_path: PathBuf,
    /// The content-addressed store of pulled blobs.
    pub store_dir: PathBuf,
    /// Settings by registry (`host[:port]`); a registry not listed gets the defaults.
    pub registries: BTreeMap<String, RegistrySettings>,
    /// Which signatures are trusted where.
    pub trust: TrustPolicy,
}

impl Sources {
    /// The settings of `registry`.
    pub fn registry(&self, registry: &str) -> RegistrySettings {
        self.registries.get(registry).cloned().unwrap_or_default()
    }
}

/// Check `[plugins.NAME] source` and `sha256`.
pub(super) fn resolve_source(
    source: Option<&str>,
    sha256: Option<&str>,
    key: &str,
) -> Result<Option<PluginSource>, ConfigError> {
    let Some(source) = source else {
        return match sha256 {
            Some(_) => Err(invalid(
                format!("{key}.sha256"),
                "pins the digest of a `source`; this plugin has none",
            )),
            None => Ok(None),
        };
    };
    if source.starts_with("oci://") {
        if sha256.is_some() {
            return Err(invalid(
                format!("{key}.sha256"),
                "is for https:// sources; pin an oci:// source with @sha256:… in the reference",
            ));
        }
        let r = source
            .parse()
            .map_err(|e: toolhost_trust::source::SourceError| {
                invalid(format!("{key}.source"), e.to_string())
            })?;
        return Ok(Some(PluginSource::Oci(r)));
    }
    if let Some(rest) = source.strip_prefix("https://") {
        let uri: http::Uri = source
            .parse()
            .map_err(|e| invalid(format!("{key}.source"), format!("not a URL: {e}")))?;
        if uri.host().is_none_or(str::is_empty) || rest.contains('@') {
            return Err(invalid(
                format!("{key}.source"),
                "needs a host and no user name or password in the URL",
            ));
        }
        let Some(sha256) = sha256 else {
            return Err(invalid(
                format!("{key}.sha256"),
                "is required for an https:// source: the digest of the component it serves \
                 (`sha256sum FILE.wasm`)",
            ));
        };
        let pinned = if sha256.starts_with("sha256:") {
            sha256.to_owned()
        } else {
            format!("sha256:{sha256}")
        };
        let digest = pinned
            .parse()
            .map_err(|e: toolhost_trust::source::DigestError| {
                invalid(format!("{key}.sha256"), e.to_string())
            })?;
        return Ok(Some(PluginSource::Https {
            url: source.to_owned(),
            digest,
        }));
    }
    Err(invalid(
        format!("{key}.source"),
        format!(
            "{source:?} is neither oci://REGISTRY/REPOSITORY[:TAG|@sha256:…] nor https://… \
             (plain http:// is not accepted)"
        ),
    ))
}

/// Check `[registries]` and `[trust]`, reading each key file.
pub(super) fn resolve_sources(
    registries: &BTreeMap<String, RawRegistry>,
    trust: &BTreeMap<String, RawTrust>,
    base: &Path,
) -> Result<Sources, ConfigError> {
    let mut resolved = BTreeMap::new();
    for (host, r) in registries {
        let key = format!("registries.{host:?}");
        if !is_registry(host) {
            return Err(invalid(
                key,
                "name a registry as HOST or HOST:PORT, e.g. \"ghcr.io\" or \"127.0.0.1:5000\"",
            ));
        }
        let credentials_env = match (&r.username_env, &r.password_env) {
            (Some(u), Some(p)) => Some((u.clone(), p.clone())),
            (None, None) => None,
            _ => {
                return Err(invalid(
                    key,
                    "set both `username-env` and `password-env`, or neither",
                ));
            }
        };
        resolved.insert(
            host.clone(),
            RegistrySettings {
                insecure: r.insecure,
                credentials_env,
            },
        );
    }
    let mut entries = Vec::new();
    for (prefix, t) in trust {
        let key = format!("trust.{prefix:?}");
        let valid = match prefix.split_once('/') {
            Some((registry, repo)) => is_registry(registry) && is_repository(repo),
            None => is_registry(prefix),
        };
        if !valid {
            return Err(invalid(
                key,
                "name a registry or a repository prefix, e.g. \"ghcr.io/org\" (lowercase, no scheme, no tag)",
            ));
        }
        let keyless = match (&t.identity, &t.issuer) {
            (Some(identity), Some(issuer)) => Some(
                Keyless::new(identity, issuer)
                    .map_err(|e| invalid(format!("{key}.identity"), e))?,
            ),
            (None, None) => None,
            (Some(_), None) => {
                return Err(invalid(
                    format!("{key}.issuer"),
                    "is required with `identity`: the OIDC issuer that certified it, e.g. \
                     \"https://token.actions.githubusercontent.com\"",
                ));
            }
            (None, Some(_)) => {
                return Err(invalid(
                    format!("{key}.identity"),
                    "is required with `issuer`: the signer's identity, an email address or a URI",
                ));
            }
        };
        let require_signature = t.require_signature.unwrap_or(true);
        if require_signature && t.keys.is_empty() && keyless.is_none() {
            return Err(invalid(
                format!("{key}.keys"),
                "is empty, so nothing from here could load: list the signers' public keys or set a \
                 keyless `identity` with its `issuer`, or set `require-signature = false`",
            ));
        }
        let root = match &t.trusted_root {
            Some(file) => {
                let path = base.join(file);
                let bytes = std::fs::read(&path).map_err(|e| {
                    invalid(
                        format!("{key}.trusted-root"),
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?;
                Some(Arc::new(TrustedRoot::from_json(&bytes).map_err(|e| {
                    invalid(format!("{key}.trusted-root"), e.to_string())
                })?))
            }
            None if keyless.is_some() => {
                return Err(invalid(
                    format!("{key}.trusted-root"),
                    "is required with `identity`: Sigstore's trusted_root.json (for the public-good \
                     instance, `sigstore trust-root` or the TUF repository writes it), read at start \
                     and never fetched",
                ));
            }
            None => None,
        };
        let mut keys = Vec::new();
        for (i, file) in t.keys.iter().enumerate() {
            let path = base.join(file);
            let pem = std::fs::read(&path).map_err(|e| {
                invalid(
                    format!("{key}.keys[{i}]"),
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            keys.push(
                PublicKey::from_pem(&file.display().to_string(), &pem)
                    .map_err(|e| invalid(format!("{key}.keys[{i}]"), e.to_string()))?,
            );
        }
        entries.push(TrustEntry {
            prefix: prefix.clone(),
            keys,
            keyless,
            root,
            require_signature,
        });
    }
    Ok(Sources {
        lock_path: base.join("toolhost.lock"),
        store_dir: base.join(".toolhost/store"),
        registries: resolved,
        trust: TrustPolicy::new(entries),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_oci_or_pinned_https() {
        let oci = resolve_source(
            Some("oci://127.0.0.1:5000/tools/echo:1.0"),
            None,
            "plugins.e",
        )
        .unwrap()
        .unwrap();
        assert_eq!(oci.to_string(), "oci://127.0.0.1:5000/tools/echo:1.0");
        let hex = "a".repeat(64);
        let https = resolve_source(Some("https://example.com/echo.wasm"), Some(&hex), "p")
            .unwrap()
            .unwrap();
        assert!(matches!(https, PluginSource::Https { ref digest, .. } if digest.hex() == hex));
        for (source, sha, needle) in [
            ("https://example.com/echo.wasm", None, "is required"),
            (
                "http://example.com/echo.wasm",
                Some(hex.as_str()),
                "plain http",
            ),
            ("oci://ghcr.io/a/b:1", Some(hex.as_str()), "@sha256"),
            ("oci://ghcr.io/A/b:1", None, "lowercase"),
            (
                "https://u:p@example.com/x.wasm",
                Some(hex.as_str()),
                "no user name",
            ),
            ("https://example.com/x.wasm", Some("abc"), "sha256:abc"),
            ("file:///tmp/x.wasm", None, "neither"),
        ] {
            let e = resolve_source(Some(source), sha, "plugins.e")
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{source}: {e}");
        }
        let e = resolve_source(None, Some(&hex), "plugins.e")
            .unwrap_err()
            .to_string();
        assert!(e.contains("plugins.e.sha256"), "{e}");
    }

    #[test]
    fn registries_and_trust_are_checked_and_keys_read() {
        let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/cosign");
        let raw: BTreeMap<String, RawTrust> = toml::from_str(
            "[\"127.0.0.1:5000/tools\"]\nkeys = [\"trusted.pub\"]\n[\"ghcr.io\"]\nrequire-signature = false\n",
        )
        .unwrap();
        let s = resolve_sources(&BTreeMap::new(), &raw, &golden).unwrap();
        let r = s.trust.requirement("127.0.0.1:5000/tools/echo");
        assert!(r.required && r.keys[0].name() == "trusted.pub");
        assert!(!s.trust.requirement("ghcr.io/x/y").required);
        assert_eq!(s.lock_path, golden.join("toolhost.lock"));
        for (text, needle) in [
            ("[\"reg\"]\nkeys = [\"rsa.pub\"]\n", "not an ECDSA P-256"),
            ("[\"reg\"]\nkeys = [\"missing.pub\"]\n", "cannot read"),
            ("[\"reg\"]\n", "is empty"),
            (
                "[\"https://reg/x\"]\nrequire-signature = false\n",
                "repository prefix",
            ),
        ] {
            let raw: BTreeMap<String, RawTrust> = toml::from_str(text).unwrap();
            let e = resolve_sources(&BTreeMap::new(), &raw, &golden)
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
        // Keyless entries: an identity needs its issuer and a trusted root, read at start.
        let sigstore = "../../fixtures/sigstore/trusted_root.production.json";
        for (text, needle) in [
            ("[\"reg\"]\nidentity = \"a@b.c\"\n", "reg\".issuer"),
            ("[\"reg\"]\nissuer = \"https://i\"\n", "reg\".identity"),
            (
                "[\"reg\"]\nidentity = \"a@b.c\"\nissuer = \"https://i\"\n",
                "reg\".trusted-root",
            ),
            (
                "[\"reg\"]\nidentity = \"a@b.c\"\nissuer = \"https://i\"\ntrusted-root = \"trusted.pub\"\n",
                "not a trusted_root.json",
            ),
            (
                &format!(
                    "[\"reg\"]\nidentity = \"a[b\"\nissuer = \"https://i\"\ntrusted-root = \"{sigstore}\"\n"
                ),
                "not a valid glob",
            ),
        ] {
            let raw: BTreeMap<String, RawTrust> = toml::from_str(text).unwrap();
            let e = resolve_sources(&BTreeMap::new(), &raw, &golden)
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
        let raw: BTreeMap<String, RawTrust> = toml::from_str(&format!(
            "[\"ghcr.io/org\"]\nidentity = \"https://github.com/org/*/.github/workflows/release.yml@refs/tags/*\"\n\
             issuer = \"https://token.actions.githubusercontent.com\"\ntrusted-root = \"{sigstore}\"\n"
        ))
        .unwrap();
        let s = resolve_sources(&BTreeMap::new(), &raw, &golden).unwrap();
        let r = s.trust.requirement("ghcr.io/org/tool");
        assert!(r.required && r.keys.is_empty() && r.root.is_some());
        assert_eq!(
            r.keyless.unwrap().issuer,
            "https://token.actions.githubusercontent.com"
        );

        let regs: BTreeMap<String, RawRegistry> =
            toml::from_str("[\"127.0.0.1:5000\"]\ninsecure = true\nusername-env = \"U\"\n")
                .unwrap();
        let e = resolve_sources(&regs, &BTreeMap::new(), &golden)
            .unwrap_err()
            .to_string();
        assert!(e.contains("both"), "{e}");
    }
}
