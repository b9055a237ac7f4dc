//! The caller's own credentials for a plugin's requests: a profile's secret, or a token exchanged
//! for the caller's own at the identity provider (OAuth 2.0 Token Exchange, RFC 8693). Resolved
//! per call into header secrets the sandbox adds (the guest never sees them) and redacts; the
//! audit record names which were used, never a value. Exchanged tokens are kept per caller token
//! and destination until shortly before they expire, in this daemon only: a token in a shared
//! database would be a secret at rest, and each daemon exchanges at most once per key anyway.
//! Calls that need the same exchange at once share one request to the identity provider, and its
//! answer, success or refusal (a single flight per key).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use toolhost_call::call::ErrorKind;
use toolhost_config::config::Introspection;
use toolhost_gate::caller::{Caller, Profile};
use toolhost_gate::network::{
    CallerSecret, CallerSource, Exchange, Secret, SecretGrant, SecretHeader,
};

/// The largest answer read from the identity provider (a token response, an introspection, its
/// metadata): a few KiB in practice; anything past this is refused unread.
const MAX_ANSWER: usize = 64 << 10;

/// RFC 8693's grant type and token type names.
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";
/// Tokens kept at most; the cache is emptied of expired ones, then of all, past this.
const CACHE_MAX: usize = 10_000;
/// A token is used until this long before it expires (or half its life, if shorter).
const MARGIN: Duration = Duration::from_secs(30);

/// What a call brings: the header secrets for the sandbox, and what the audit line says of them.
#[derive(Default)]
pub(crate) struct Brought {
    pub(crate) grants: Vec<SecretGrant>,
    pub(crate) used: Vec<String>,
}

/// Resolves callers' credentials; one per pipeline.
pub(crate) struct Credentials {
    exchange: Option<Exchanger>,
}

struct Exchanger {
    endpoint: Introspection,
    http: reqwest::Client,
    cache: Mutex<HashMap<[u8; 32], (Secret, Instant)>>,
    /// The exchanges under way, by key: the calls that need one wait for its answer.
    flights: Mutex<HashMap<[u8; 32], Arc<Flight>>>,
}

/// One exchange under way: its answer once it has one (why not, as the model is told, on refusal).
type Flight = tokio::sync::OnceCell<Result<(Secret, Duration), String>>;

#[derive(Deserialize)]
struct Issued {
    access_token: String,
    expires_in: Option<u64>,
}

#[derive(Deserialize)]
struct Refusal {
    error: Option<String>,
    error_description: Option<String>,
}

impl Credentials {
    /// Exchanging at `endpoint` (`[auth.token-exchange]`), if configured.
    pub(crate) fn new(endpoint: Option<&Introspection>) -> Self {
        let exchange = endpoint.and_then(|endpoint| {
            // reqwest's TLS needs a process-wide provider; the first to ask installs ring.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let http = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| tracing::error!("token exchange is off: {e}"))
                .ok()?;
            Some(Exchanger {
                endpoint: endpoint.clone(),
                http,
                cache: Mutex::default(),
                flights: Mutex::default(),
            })
        });
        Self { exchange }
    }

    /// The credentials `wanted` by `plugin`'s secrets, from `caller` (under `profile`); or why the
    /// call cannot run (kind and a sentence a model can act on).
    pub(crate) async fn bring(
        &self,
        plugin: &str,
        wanted: &[CallerSecret],
        caller: Option<&Caller>,
        profile: Option<&Profile>,
    ) -> Result<Brought, (ErrorKind, String)> {
        let mut brought = Brought::default();
        // A profile's secrets first: a caller who lacks one costs the identity provider nothing.
        let (exchanged, own): (Vec<_>, Vec<_>) = wanted
            .iter()
            .partition(|s| matches!(s.source, CallerSource::Exchange(_)));
        for s in own.into_iter().chain(exchanged) {
            let (value, used) = match &s.source {
                CallerSource::Profile(name) => from_profile(plugin, s, name, caller, profile)?,
                CallerSource::Exchange(x) => self.exchanged(plugin, s, x, caller).await?,
            };
            let rendered = Secret::new(s.format.replace("{secret}", value.expose()));
            if http::HeaderValue::from_str(rendered.expose()).is_err() {
                return Err((
                    ErrorKind::Denied,
                    format!(
                        "the caller's credential for secret '{}' of plugin {plugin} cannot be \
                         carried in a header (control characters or non-ASCII)",
                        s.name
                    ),
                ));
            }
            brought.used.push(format!("{}: {used}", s.name));
            brought.grants.push(SecretGrant {
                name: s.name.clone(),
                value,
                env: None,
                header: Some(SecretHeader {
                    name: s.header.clone(),
                    value: rendered,
                    destinations: s.destinations.clone(),
                }),
            });
        }
        brought.used.sort();
        Ok(brought)
    }

    async fn exchanged(
        &self,
        plugin: &str,
        s: &CallerSecret,
        x: &Exchange,
        caller: Option<&Caller>,
    ) -> Result<(Secret, String), (ErrorKind, String)> {
        let what = x
            .audience
            .as_deref()
            .or(x.resource.as_deref())
            .unwrap_or_default();
        let used = format!("exchanged for {what}");
        let Some(token) = caller.and_then(|c| c.token.as_ref()) else {
            return Err((
                ErrorKind::Denied,
                format!(
                    "plugin {plugin}'s secret '{}' is a token exchanged for the caller's own, \
                     and {} presented no OAuth token to exchange; call over HTTP with your own \
                     token",
                    s.name,
                    super::live::caller_name(caller)
                ),
            ));
        };
        let Some(exchanger) = &self.exchange else {
            return Err((
                ErrorKind::Internal,
                "token exchange is not configured ([auth.token-exchange])".into(),
            ));
        };
        let key = cache_key(token, x);
        if let Some(kept) = exchanger.kept(&key) {
            return Ok((kept, used));
        }
        let issued = exchanger
            .exchange_once(key, token, x)
            .await
            .map_err(|why| {
                (
                    ErrorKind::Denied,
                    format!(
                        "the identity provider did not exchange {}'s token for {what} (plugin \
                     {plugin}'s secret '{}'): {why}",
                        super::live::caller_name(caller),
                        s.name
                    ),
                )
            })?;
        Ok((issued.0, used))
    }
}

/// The profile's own secret `name`.
fn from_profile(
    plugin: &str,
    s: &CallerSecret,
    name: &str,
    caller: Option<&Caller>,
    profile: Option<&Profile>,
) -> Result<(Secret, String), (ErrorKind, String)> {
    if caller.is_none() {
        return Err((
            ErrorKind::Denied,
            format!(
                "plugin {plugin}'s secret '{}' comes from the caller's [[callers]] profile \
                 (`secrets.{name}`), and this call has no caller (stdio or the CLI); call over \
                 HTTP with your own token",
                s.name
            ),
        ));
    }
    match profile.and_then(|p| Some((p, p.secrets.get(name)?))) {
        Some((p, value)) => Ok((
            value.clone(),
            format!("profile {}'s secret '{name}'", p.name),
        )),
        None => Err((
            ErrorKind::Denied,
            format!(
                "plugin {plugin}'s secret '{}' comes from the caller, and {} has no credential \
                 '{name}'{}; ask the operator to add `secrets.{name}` to its [[callers]] profile",
                s.name,
                super::live::caller_name(caller),
                profile.map_or_else(String::new, |p| format!(" (profile {})", p.name))
            ),
        )),
    }
}

/// Why the identity provider did not exchange a token, as the model is told it (it names no
/// secret: the provider's own words are one line, and the URL is left out).
#[derive(Debug, thiserror::Error)]
enum ExchangeError {
    /// The request could not be made or sent.
    #[error("cannot reach it ({0})")]
    Unreachable(String),
    /// Its answer was too large or broke off.
    #[error(transparent)]
    Body(#[from] crate::body::BodyError),
    /// It refused: its `error` and `error_description`, or the status.
    #[error("{0}")]
    Refused(String),
    /// A success that is not a token response.
    #[error("its answer is not a token response")]
    NotATokenResponse,
    /// A token response without a token.
    #[error("its answer holds no access_token")]
    NoAccessToken,
}

/// The cache's key: the caller's token and what it is exchanged for, hashed.
fn cache_key(token: &Secret, x: &Exchange) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [
        Some(token.expose()),
        x.audience.as_deref(),
        x.resource.as_deref(),
        x.scope.as_deref(),
    ] {
        h.update(part.unwrap_or_default().as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

impl Exchanger {
    fn kept(&self, key: &[u8; 32]) -> Option<Secret> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (token, until) = cache.get(key)?;
        (*until > Instant::now()).then(|| token.clone())
    }

    fn keep(&self, key: [u8; 32], (token, life): &(Secret, Duration)) {
        let until = Instant::now() + life.saturating_sub(MARGIN.min(*life / 2));
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_MAX {
            let now = Instant::now();
            cache.retain(|_, (_, u)| *u > now);
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
        }
        cache.insert(key, (token.clone(), until));
    }

    /// The token `token` is exchanged for as `x` says, kept under `key`: exchanged by the first
    /// call that needs it while the others wait for its answer. A call dropped mid-exchange
    /// leaves the exchange to the next waiter.
    async fn exchange_once(
        &self,
        key: [u8; 32],
        token: &Secret,
        x: &Exchange,
    ) -> Result<(Secret, Duration), String> {
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            flights.entry(key).or_default().clone()
        };
        let answer = flight
            .get_or_init(|| async {
                // A flight that landed just before this one took off may have kept it.
                if let Some(kept) = self.kept(&key) {
                    return Ok((kept, Duration::ZERO));
                }
                let issued = self.exchange(token, x).await.map_err(|e| e.to_string())?;
                self.keep(key, &issued);
                Ok(issued)
            })
            .await
            .clone();
        // Landed: the next call exchanges anew unless the answer was kept.
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        if flights.get(&key).is_some_and(|f| Arc::ptr_eq(f, &flight)) {
            flights.remove(&key);
        }
        answer
    }

    /// One exchange at the identity provider, as toolhost's client (HTTP Basic).
    async fn exchange(
        &self,
        token: &Secret,
        x: &Exchange,
    ) -> Result<(Secret, Duration), ExchangeError> {
        let mut form = vec![
            ("grant_type", GRANT),
            ("subject_token", token.expose()),
            ("subject_token_type", ACCESS_TOKEN),
            ("requested_token_type", ACCESS_TOKEN),
        ];
        for (k, v) in [
            ("audience", &x.audience),
            ("resource", &x.resource),
            ("scope", &x.scope),
        ] {
            if let Some(v) = v {
                form.push((k, v));
            }
        }
        let form = serde_urlencoded::to_string(&form)
            .map_err(|e| ExchangeError::Unreachable(e.to_string()))?;
        let response = self
            .http
            .post(&self.endpoint.url)
            .basic_auth(&self.endpoint.client_id, Some(&self.endpoint.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(form)
            .send()
            .await
            .map_err(|e| ExchangeError::Unreachable(e.without_url().to_string()))?;
        let status = response.status();
        let body = crate::body::read(response, MAX_ANSWER).await?;
        if !status.is_success() {
            let why = serde_json::from_slice::<Refusal>(&body).ok().map_or_else(
                || format!("HTTP {status}"),
                |r| {
                    let mut why = r.error.unwrap_or_else(|| format!("HTTP {status}"));
                    if let Some(d) = r.error_description {
                        why = format!("{why}: {}", toolhost_call::text::one_line(&d));
                    }
                    why
                },
            );
            return Err(ExchangeError::Refused(why));
        }
        let issued: Issued =
            serde_json::from_slice(&body).map_err(|_| ExchangeError::NotATokenResponse)?;
        if issued.access_token.is_empty() {
            return Err(ExchangeError::NoAccessToken);
        }
        let life = Duration::from_secs(issued.expires_in.unwrap_or(60));
        Ok((Secret::new(issued.access_token), life))
    }
}

#[cfg(test)]
mod tests;
