//! The issuer's signing keys: its JWKS, found through its metadata unless configured, fetched on
//! first use, kept for [`MAX_AGE`], and fetched again when a token names a key id not in it (a
//! rotation), at most once per [`MIN_REFETCH`] so that tokens with made-up key ids cannot make
//! toolhost hammer the issuer.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::JwkSet;
use tokio::sync::Mutex;

use toolhost_config::config::AuthConfig;

/// Keys are fetched again after this long even when every token finds its key.
const MAX_AGE: Duration = Duration::from_secs(600);
/// An unknown key id fetches the set again, but not more often than this.
const MIN_REFETCH: Duration = Duration::from_secs(1);
/// Largest JWKS or metadata document read.
const MAX_DOCUMENT: usize = 256 << 10;

/// Why no key could be had for a token.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    /// The issuer's metadata or JWKS could not be fetched or read.
    #[error("cannot get the issuer's keys: {0}")]
    Fetch(String),
    /// The set has no key with the token's id (after fetching it again).
    #[error("no key {0:?} in the issuer's JWKS")]
    Unknown(String),
    /// The token names no key and the set has more than one.
    #[error("the token names no key (kid) and the issuer has {0} keys")]
    Ambiguous(usize),
}

struct Cached {
    keys: HashMap<String, (DecodingKey, Option<jsonwebtoken::Algorithm>)>,
    fetched: Instant,
}

/// The issuer's keys, cached.
pub(crate) struct Keys {
    config: AuthConfig,
    http: reqwest::Client,
    jwks_uri: Mutex<Option<String>>,
    cached: Mutex<Option<Cached>>,
}

impl Keys {
    pub(crate) fn new(config: &AuthConfig) -> Result<Self, KeyError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| KeyError::Fetch(e.to_string()))?;
        Ok(Self {
            config: config.clone(),
            http,
            jwks_uri: Mutex::new(config.jwks_uri.clone()),
            cached: Mutex::new(None),
        })
    }

    /// The key for a token with key id `kid`, and the algorithm the key is pinned to, if any.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
    ) -> Result<(DecodingKey, Option<jsonwebtoken::Algorithm>), KeyError> {
        let mut cached = self.cached.lock().await;
        let stale = cached
            .as_ref()
            .is_none_or(|c| c.fetched.elapsed() > MAX_AGE);
        if stale {
            *cached = Some(self.fetch().await?);
        }
        if let Some(found) = lookup(cached.as_ref(), kid)? {
            return Ok(found);
        }
        // An unknown key id: perhaps the issuer rotated its keys.
        if cached
            .as_ref()
            .is_some_and(|c| c.fetched.elapsed() >= MIN_REFETCH)
        {
            *cached = Some(self.fetch().await?);
            if let Some(found) = lookup(cached.as_ref(), kid)? {
                return Ok(found);
            }
        }
        Err(KeyError::Unknown(kid.unwrap_or_default().to_owned()))
    }

    async fn fetch(&self) -> Result<Cached, KeyError> {
        let uri = self.jwks_uri().await?;
        let set: JwkSet = serde_json::from_slice(&self.get(&uri).await?)
            .map_err(|e| KeyError::Fetch(format!("{uri}: not a JWKS: {e}")))?;
        let mut keys = HashMap::new();
        for jwk in set.keys.iter().filter(|k| k.is_supported()) {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let alg = jwk
                .common
                .key_algorithm
                .and_then(|a| a.to_string().parse().ok());
            let kid = jwk.common.key_id.clone().unwrap_or_default();
            keys.insert(kid, (key, alg));
        }
        tracing::info!(jwks = %uri, keys = keys.len(), "fetched the issuer's keys");
        Ok(Cached {
            keys,
            fetched: Instant::now(),
        })
    }

    /// The configured JWKS URL, else the one the issuer's metadata names (looked up once).
    async fn jwks_uri(&self) -> Result<String, KeyError> {
        let mut known = self.jwks_uri.lock().await;
        if let Some(uri) = known.as_ref() {
            return Ok(uri.clone());
        }
        let issuer = &self.config.issuer;
        let mut last = String::new();
        for path in [
            "/.well-known/openid-configuration",
            "/.well-known/oauth-authorization-server",
        ] {
            let url = format!("{issuer}{path}");
            match self.get(&url).await {
                Ok(body) => {
                    let doc: serde_json::Value = serde_json::from_slice(&body)
                        .map_err(|e| KeyError::Fetch(format!("{url}: {e}")))?;
                    if doc["issuer"].as_str().map(|s| s.trim_end_matches('/')) != Some(issuer) {
                        return Err(KeyError::Fetch(format!(
                            "{url} names issuer {}, not {issuer}",
                            doc["issuer"]
                        )));
                    }
                    let uri = doc["jwks_uri"]
                        .as_str()
                        .ok_or_else(|| KeyError::Fetch(format!("{url} has no jwks_uri")))?;
                    *known = Some(uri.to_owned());
                    return Ok(uri.to_owned());
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(KeyError::Fetch(last))
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, KeyError> {
        let fail = |m: String| KeyError::Fetch(format!("{url}: {m}"));
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        crate::body::read(response, MAX_DOCUMENT)
            .await
            .map_err(|e| fail(e.to_string()))
    }
}

type Found = Option<(DecodingKey, Option<jsonwebtoken::Algorithm>)>;

fn lookup(cached: Option<&Cached>, kid: Option<&str>) -> Result<Found, KeyError> {
    let Some(c) = cached else { return Ok(None) };
    match kid {
        Some(kid) => Ok(c.keys.get(kid).cloned()),
        None if c.keys.len() == 1 => Ok(c.keys.values().next().cloned()),
        None => Err(KeyError::Ambiguous(c.keys.len())),
    }
}
