//! Signing a browser in through the identity provider (with `[auth]` and `[console] client-id`):
//! the authorization code flow with PKCE (RFC 7636, S256) for a public client. `/console/login`
//! sends the browser to the provider with a fresh `state` and code challenge; `/console/callback`
//! spends that `state` once, trades the code and its verifier for an access token, and checks the
//! token exactly as a bearer token is checked (issuer, keys, audience, scope, profile). Only an
//! operator gets a session.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::server::http::auth::{Authenticator, Refusal};
use toolhost_config::config::{AuthConfig, ConsoleOptions, ServerConfig};
use toolhost_gate::caller::Profiles;

/// The largest answer read from the identity provider (its metadata and token
/// responses): a few KiB in practice; anything past this is refused unread.
const MAX_ANSWER: usize = 64 << 10;

/// How long a browser may take at the provider.
const PENDING_FOR: Duration = Duration::from_secs(600);
/// Sign-ins under way at most; the oldest goes first.
const MAX_PENDING: usize = 64;

/// Why a sign-in failed, for the browser.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoginError {
    /// The daemon is not set up for it.
    #[error("signing in through the identity provider needs [auth] and [console] client-id")]
    NotConfigured,
    /// The provider's metadata or token endpoint failed.
    #[error("the identity provider could not be reached: {0}")]
    Provider(String),
    /// The callback's `state` is unknown, used or stale: a forged or replayed callback.
    #[error("this sign-in is unknown or was used already; start again at /console/login")]
    State,
    /// The provider refused, or its token does not pass.
    #[error("the identity provider's token was refused: {0}")]
    Token(String),
    /// A valid caller without the operator role.
    #[error(
        "the console is for operators: this caller's [[callers]] profile has no role = \"operator\""
    )]
    NotOperator,
}

struct Endpoints {
    authorize: String,
    token: String,
}

struct Pending {
    verifier: String,
    redirect_uri: String,
    started: Instant,
}

/// The sign-in flow's settings and the sign-ins under way.
pub(crate) struct Login {
    client_id: String,
    redirect_uri: Option<String>,
    auth: AuthConfig,
    verifier: Authenticator,
    profiles: Profiles,
    http: reqwest::Client,
    endpoints: OnceCell<Endpoints>,
    pending: Mutex<HashMap<String, Pending>>,
}

impl Login {
    /// The flow, when `[auth]` and a client id are configured.
    pub(crate) fn new(
        console: &ConsoleOptions,
        auth: Option<&AuthConfig>,
        server: &ServerConfig,
        profiles: &Profiles,
    ) -> Option<Self> {
        let (client_id, auth) = (console.client_id.clone()?, auth?.clone());
        let verifier = Authenticator::new(server, Some(&auth), profiles)?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(Self {
            client_id,
            redirect_uri: console.redirect_uri.clone(),
            auth,
            verifier,
            profiles: profiles.clone(),
            http,
            endpoints: OnceCell::new(),
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// Where to send the browser: the provider's authorization endpoint with a new `state` and
    /// code challenge. `host` is the request's (guarded) `Host`.
    pub(crate) async fn start(&self, host: &str) -> Result<String, LoginError> {
        let endpoints = self.endpoints().await?;
        let redirect_uri = self
            .redirect_uri
            .clone()
            .unwrap_or_else(|| format!("http://{host}/console/callback"));
        let (state, verifier) = (random(), random());
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.retain(|_, p| p.started.elapsed() < PENDING_FOR);
            if pending.len() >= MAX_PENDING
                && let Some(oldest) = pending
                    .iter()
                    .min_by_key(|(_, p)| p.started)
                    .map(|(k, _)| k.clone())
            {
                pending.remove(&oldest);
            }
            pending.insert(
                state.clone(),
                Pending {
                    verifier,
                    redirect_uri: redirect_uri.clone(),
                    started: Instant::now(),
                },
            );
        }
        let mut scope = vec!["openid".to_owned()];
        scope.extend(self.auth.required_scope.clone());
        let query = [
            ("response_type", "code"),
            ("client_id", &self.client_id),
            ("redirect_uri", &redirect_uri),
            ("scope", &scope.join(" ")),
            ("state", &state),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("resource", &self.auth.audience),
        ];
        let query =
            serde_urlencoded::to_string(query).map_err(|e| LoginError::Provider(e.to_string()))?;
        let sep = if endpoints.authorize.contains('?') {
            '&'
        } else {
            '?'
        };
        Ok(format!("{}{sep}{query}", endpoints.authorize))
    }

    /// Finish: spend `state`, trade `code` for a token, check it; the operator's name.
    pub(crate) async fn finish(&self, state: &str, code: &str) -> Result<String, LoginError> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(state)
            .filter(|p| p.started.elapsed() < PENDING_FOR)
            .ok_or(LoginError::State)?;
        let endpoints = self.endpoints().await?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &pending.redirect_uri),
            ("client_id", &self.client_id),
            ("code_verifier", &pending.verifier),
            ("resource", &self.auth.audience),
        ];
        let form =
            serde_urlencoded::to_string(form).map_err(|e| LoginError::Provider(e.to_string()))?;
        let response = self
            .http
            .post(&endpoints.token)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|e| LoginError::Provider(e.to_string()))?;
        let status = response.status();
        let bytes = crate::body::read(response, MAX_ANSWER)
            .await
            .map_err(|e| LoginError::Provider(e.to_string()))?;
        let body: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| LoginError::Provider(format!("the token endpoint's answer: {e}")))?;
        let Some(token) = body["access_token"]
            .as_str()
            .filter(|_| status.is_success())
        else {
            let why = body["error_description"]
                .as_str()
                .or(body["error"].as_str())
                .unwrap_or("no access token")
                .chars()
                .take(200)
                .collect();
            return Err(LoginError::Token(why));
        };
        let caller = self.verifier.verify(token).await.map_err(|r| match r {
            Refusal::Invalid(why) | Refusal::Scope(why) | Refusal::NoProfile(why) => {
                LoginError::Token(why)
            }
            Refusal::Missing => LoginError::Token("no token".into()),
        })?;
        if !self.profiles.is_operator(&caller) {
            return Err(LoginError::NotOperator);
        }
        Ok(caller.to_string())
    }

    async fn endpoints(&self) -> Result<&Endpoints, LoginError> {
        self.endpoints
            .get_or_try_init(|| async {
                let issuer = self.auth.issuer.trim_end_matches('/');
                let mut last = String::new();
                for path in [
                    "/.well-known/oauth-authorization-server",
                    "/.well-known/openid-configuration",
                ] {
                    let url = format!("{issuer}{path}");
                    let doc = match self.http.get(&url).send().await {
                        Ok(r) if r.status().is_success() => {
                            match crate::body::read(r, MAX_ANSWER).await {
                                Ok(b) => serde_json::from_slice::<serde_json::Value>(&b)
                                    .map_err(|e| e.to_string()),
                                Err(e) => Err(e.to_string()),
                            }
                        }
                        Ok(r) => {
                            last = format!("{url}: HTTP {}", r.status());
                            continue;
                        }
                        Err(e) => {
                            last = format!("{url}: {e}");
                            continue;
                        }
                    };
                    let doc = doc.map_err(|e| LoginError::Provider(format!("{url}: {e}")))?;
                    // The metadata must be the configured issuer's own (RFC 8414 section 3.3).
                    if doc["issuer"].as_str().map(|s| s.trim_end_matches('/')) != Some(issuer) {
                        return Err(LoginError::Provider(format!(
                            "{url} names issuer {}, not {issuer}",
                            doc["issuer"]
                        )));
                    }
                    let field = |name: &str| {
                        doc[name]
                            .as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| LoginError::Provider(format!("{url} names no {name}")))
                    };
                    return Ok(Endpoints {
                        authorize: field("authorization_endpoint")?,
                        token: field("token_endpoint")?,
                    });
                }
                Err(LoginError::Provider(last))
            })
            .await
    }
}

/// 256 random bits, URL-safe: a `state` or a code verifier (43 characters, as RFC 7636 asks).
fn random() -> String {
    URL_SAFE_NO_PAD.encode(crate::random::bytes::<32>())
}
