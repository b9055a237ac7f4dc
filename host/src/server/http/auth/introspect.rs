//! Opaque access tokens, asked about at the authorization server (RFC 7662): toolhost posts the
//! token as its own client and accepts the answer when the token is active, current, from the
//! issuer and (when the answer names an audience) for this server. Active answers are kept for up to
//! [`CACHE_FOR`], so that a busy session does not ask on every request.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use toolhost_config::config::{AuthConfig, Introspection};
use toolhost_gate::caller::Caller;

/// The largest answer read from the identity provider (a token response, an introspection, its
/// metadata): a few KiB in practice; anything past this is refused unread.
const MAX_ANSWER: usize = 64 << 10;

/// An active answer is reused for at most this long (less when the token expires sooner).
const CACHE_FOR: Duration = Duration::from_secs(30);
/// Answers kept at most; the cache is emptied when it would grow past this.
const CACHE_MAX: usize = 10_000;

/// Asks the authorization server about opaque tokens.
pub(crate) struct Introspector {
    endpoint: Introspection,
    issuer: String,
    audience: String,
    leeway: u64,
    http: reqwest::Client,
    cache: Mutex<HashMap<[u8; 32], (Caller, Instant)>>,
}

#[derive(Deserialize)]
struct Answer {
    active: bool,
    sub: Option<String>,
    iss: Option<String>,
    aud: Option<Value>,
    exp: Option<u64>,
    nbf: Option<u64>,
    scope: Option<String>,
    client_id: Option<String>,
    groups: Option<Vec<String>>,
}

/// Why introspection did not let a token in.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IntrospectionError {
    /// The HTTP client cannot be built (no TLS roots).
    #[error("token introspection cannot be set up: {0}")]
    Setup(String),
    /// The endpoint could not be reached.
    #[error("token introspection failed: {0}")]
    Unreachable(String),
    /// The endpoint answered with an error status.
    #[error("token introspection failed: HTTP {0}")]
    Status(reqwest::StatusCode),
    /// Its answer was too large or broke off.
    #[error("token introspection failed: {0}")]
    Body(#[from] crate::body::BodyError),
    /// Its answer is not an introspection response.
    #[error("token introspection answered oddly: {0}")]
    Malformed(serde_json::Error),
    /// The answer refuses the token: why, for the client.
    #[error("{0}")]
    Refused(&'static str),
    /// The token is another issuer's or another server's.
    #[error("the token is not {0}")]
    NotOurs(String),
}

impl Introspector {
    pub(crate) fn new(
        config: &AuthConfig,
        endpoint: &Introspection,
    ) -> Result<Self, IntrospectionError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| IntrospectionError::Setup(e.to_string()))?;
        Ok(Self {
            endpoint: endpoint.clone(),
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            leeway: config.leeway.as_secs(),
            http,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The caller `token` stands for, or why it is not accepted.
    pub(crate) async fn introspect(&self, token: &str) -> Result<Caller, IntrospectionError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((caller, until)) = self.cache.lock().await.get(&key)
            && Instant::now() < *until
        {
            return Ok(caller.clone());
        }
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let response = self
            .http
            .post(&self.endpoint.url)
            .basic_auth(&self.endpoint.client_id, Some(&self.endpoint.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| IntrospectionError::Unreachable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(IntrospectionError::Status(response.status()));
        }
        let bytes = crate::body::read(response, MAX_ANSWER).await?;
        let answer: Answer =
            serde_json::from_slice(&bytes).map_err(IntrospectionError::Malformed)?;
        let (caller, expires) = self.judge(answer)?;
        let mut cache = self.cache.lock().await;
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        let until = Instant::now() + expires.map_or(CACHE_FOR, |e| e.min(CACHE_FOR));
        cache.insert(key, (caller.clone(), until));
        Ok(caller)
    }

    fn judge(&self, a: Answer) -> Result<(Caller, Option<Duration>), IntrospectionError> {
        use IntrospectionError::{NotOurs, Refused};
        if !a.active {
            return Err(Refused(
                "the token is not active (revoked, expired or unknown)",
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if a.exp.is_some_and(|exp| exp + self.leeway <= now) {
            return Err(Refused("the token has expired"));
        }
        if a.nbf.is_some_and(|nbf| nbf > now + self.leeway) {
            return Err(Refused("the token is not valid yet (nbf)"));
        }
        let iss = a.iss.unwrap_or_else(|| self.issuer.clone());
        if iss.trim_end_matches('/') != self.issuer {
            return Err(NotOurs(format!("from {}", self.issuer)));
        }
        let for_us = match &a.aud {
            None => true,
            Some(Value::String(s)) => *s == self.audience,
            Some(Value::Array(items)) => items.iter().any(|v| v.as_str() == Some(&self.audience)),
            Some(_) => false,
        };
        if !for_us {
            return Err(NotOurs(format!(
                "for this server (audience {})",
                self.audience
            )));
        }
        let sub = a
            .sub
            .ok_or(Refused("the introspected token names no subject"))?;
        let caller = Caller {
            issuer: iss,
            subject: sub,
            client_id: a.client_id,
            scopes: a
                .scope
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            groups: a.groups.unwrap_or_default(),
            token: None,
        };
        let left = a
            .exp
            .map(|exp| Duration::from_secs(exp.saturating_sub(now)));
        Ok((caller, left))
    }
}

/// `application/x-www-form-urlencoded` for one value: unreserved characters as they are.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
