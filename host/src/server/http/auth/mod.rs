//! Who is calling, over HTTP: the static bearer token (`server.token-env`) or an OAuth 2.1 access
//! token (`[auth]`: a JWT from the configured issuer, verified here against its JWKS, for this
//! server's resource identifier). The middleware answers a request without a valid token with 401
//! and `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728), one without the required scope
//! or without a `[[callers]]` profile with 403, and hands the [`Caller`] of any other to the routes
//! in the request's extensions. The protected-resource metadata itself is served here, unguarded.
//! The console's browsers come without a token: it checks their sessions itself.

mod introspect;
mod keys;
mod token;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use toolhost_config::config::{AuthConfig, ServerConfig};
use toolhost_gate::caller::{Access, Caller, NO_PROFILE, Profiles};

use self::introspect::Introspector;
use self::keys::Keys;
use super::reply::error;

/// Where the protected-resource metadata is served (and, with the resource's path appended, too).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No bearer token.
    Missing,
    /// A token that is not valid: why, for the client.
    Invalid(String),
    /// A valid token without the scope every call needs.
    Scope(String),
    /// A valid token whose caller no profile matches.
    NoProfile(String),
}

/// Why an OAuth access token was not let in.
#[derive(Debug, thiserror::Error)]
enum Rejected {
    /// A JWT that does not verify.
    #[error(transparent)]
    Jwt(#[from] token::TokenError),
    /// An opaque token that introspection refused.
    #[error(transparent)]
    Introspection(#[from] introspect::IntrospectionError),
}

/// The checks, compiled from the config.
pub(crate) struct Authenticator {
    static_token: Option<[u8; 32]>,
    oauth: Option<OAuth>,
    profiles: Profiles,
}

/// OAuth access tokens: JWTs checked against the issuer's keys, opaque ones introspected.
struct OAuth {
    config: AuthConfig,
    keys: Keys,
    introspector: Option<Introspector>,
}

impl OAuth {
    fn new(config: &AuthConfig) -> Result<Self, String> {
        // reqwest takes the process's default TLS provider: ours, ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let introspector = config
            .introspection
            .as_ref()
            .map(|i| Introspector::new(config, i))
            .transpose()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            config: config.clone(),
            keys: Keys::new(config).map_err(|e| e.to_string())?,
            introspector,
        })
    }

    async fn verify(&self, token: &str) -> Result<Caller, Rejected> {
        let jwt = token.split('.').count() == 3;
        match &self.introspector {
            Some(i) if !jwt => Ok(i.introspect(token).await?),
            _ => Ok(token::verify(token, &self.config, &self.keys).await?),
        }
    }
}

impl Authenticator {
    /// `None` when HTTP is open (no token, no `[auth]`): every request passes, with no caller.
    pub(crate) fn new(
        server: &ServerConfig,
        auth: Option<&AuthConfig>,
        profiles: &Profiles,
    ) -> Option<Self> {
        if server.token.is_none() && auth.is_none() {
            return None;
        }
        let oauth = auth.and_then(|a| match OAuth::new(a) {
            Ok(oauth) => Some(oauth),
            Err(e) => {
                tracing::error!("OAuth tokens cannot be verified: {e}");
                None
            }
        });
        Some(Self {
            static_token: server.token.as_deref().map(sha256),
            oauth,
            profiles: profiles.clone(),
        })
    }

    /// The caller of a request with these headers.
    pub(crate) async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let given = bearer(headers).ok_or(Refusal::Missing)?;
        let mut caller = self.verify(given).await?;
        if caller != Caller::static_token() {
            // Kept, opaque, for the credentials a plugin's secret exchanges it for.
            caller.token = Some(toolhost_gate::network::Secret::new(given));
        }
        Ok(caller)
    }

    /// The caller of the bearer token `given`: the checks of [`Self::authenticate`], for a token
    /// that came another way (the console's sign-in, from the identity provider).
    pub(crate) async fn verify(&self, given: &str) -> Result<Caller, Refusal> {
        let caller = match (&self.static_token, &self.oauth) {
            (Some(expected), _) if constant_time_eq(&sha256(given), expected) => {
                Caller::static_token()
            }
            (_, Some(oauth)) => {
                let caller = oauth
                    .verify(given)
                    .await
                    .map_err(|e| Refusal::Invalid(e.to_string()))?;
                if let Some(scope) = &oauth.config.required_scope
                    && !caller.scopes.contains(scope)
                {
                    return Err(Refusal::Scope(scope.clone()));
                }
                caller
            }
            _ => return Err(Refusal::Invalid("the bearer token is not valid".into())),
        };
        if let Access::Denied = self.profiles.access(&caller) {
            return Err(Refusal::NoProfile(format!("{NO_PROFILE} ({caller})")));
        }
        Ok(caller)
    }

    /// The RFC 9728 document describing this resource.
    fn metadata(&self) -> serde_json::Value {
        match self.oauth.as_ref().map(|o| &o.config) {
            Some(a) => json!({
                "resource": a.audience,
                "authorization_servers": [a.issuer],
                "bearer_methods_supported": ["header"],
                "scopes_supported": a.scopes_supported,
                "resource_name": "toolhost",
            }),
            None => json!({ "bearer_methods_supported": ["header"], "resource_name": "toolhost" }),
        }
    }

    /// The absolute URL of the metadata: beside the resource identifier when it is a URL, else on
    /// the host the request came to.
    fn metadata_url(&self, headers: &HeaderMap) -> String {
        if let Some(OAuth { config: a, .. }) = &self.oauth
            && let Ok(uri) = a.audience.parse::<axum::http::Uri>()
            && let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority())
        {
            let path = uri.path().trim_end_matches('/');
            return format!("{scheme}://{authority}{METADATA_PATH}{path}");
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("127.0.0.1");
        format!("http://{host}{METADATA_PATH}")
    }
}

/// The bearer token a request's `Authorization` header carries, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty())
}

/// The bearer token an authenticated request presented, for a response that outlives the
/// request's check (the console's event stream) to check again: a token expires, is revoked
/// (introspection) or stops matching a profile while the response goes on.
#[derive(Clone)]
pub(crate) struct Presented {
    auth: Arc<Authenticator>,
    token: toolhost_gate::network::Secret,
}

impl Presented {
    /// The token's caller now, if it is still let in.
    pub(crate) async fn caller(&self) -> Option<Caller> {
        self.auth.verify(self.token.expose()).await.ok()
    }
}

/// The authenticator that `server` (its static token) and the host's config (`[auth]`,
/// `[[callers]]`) ask for, if any; [`authenticated`] runs it.
pub(crate) fn authenticator(
    shared: &crate::server::shared::Shared,
    server: &ServerConfig,
) -> Option<Arc<Authenticator>> {
    let config = &shared.services.config;
    Authenticator::new(server, config.auth.as_ref(), &config.callers).map(Arc::new)
}

/// The probes a load balancer or kubelet sends without a token: liveness and readiness. They
/// answer anyone the Host and Origin guard lets through, with counts but no names
/// ([`Unauthenticated`] says so).
pub(crate) const PROBE_PATHS: [&str; 2] = ["/health", "/ready"];

/// Marks a probe that came without a valid token.
#[derive(Clone, Copy)]
pub(crate) struct Unauthenticated;

/// Middleware: the metadata and the probes to anyone; every other route to authenticated
/// callers only.
pub(crate) async fn authenticated(
    State(auth): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.uri().path().starts_with(METADATA_PATH) {
        return Json(auth.metadata()).into_response();
    }
    if PROBE_PATHS.contains(&request.uri().path()) {
        match auth.authenticate(request.headers()).await {
            Ok(caller) => request.extensions_mut().insert(Arc::new(caller)).map(drop),
            Err(_) => request.extensions_mut().insert(Unauthenticated).map(drop),
        };
        return next.run(request).await;
    }
    if request.uri().path().starts_with("/console")
        && !request.headers().contains_key(header::AUTHORIZATION)
    {
        // A browser: the console signs its operators in with a session of its own.
        return next.run(request).await;
    }
    match auth.authenticate(request.headers()).await {
        Ok(caller) => {
            if let Some(token) = bearer(request.headers()) {
                let presented = Presented {
                    auth: auth.clone(),
                    token: toolhost_gate::network::Secret::new(token),
                };
                request.extensions_mut().insert(presented);
            }
            request.extensions_mut().insert(Arc::new(caller));
            next.run(request).await
        }
        Err(refusal) => {
            let metadata = auth.metadata_url(request.headers());
            refuse(&refusal, &metadata)
        }
    }
}

/// The answer to a refused request: status, `WWW-Authenticate` (RFC 6750, RFC 9728) and a JSON body.
fn refuse(refusal: &Refusal, metadata: &str) -> Response {
    let quoted = |s: &str| s.replace(['"', '\\'], "'");
    let (status, challenge, message) = match refusal {
        Refusal::Missing => (
            StatusCode::UNAUTHORIZED,
            format!("Bearer resource_metadata=\"{metadata}\""),
            "this server requires a bearer token: send Authorization: Bearer <token>".to_owned(),
        ),
        Refusal::Invalid(why) => (
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
                quoted(why)
            ),
            format!("the bearer token is not valid: {why}"),
        ),
        Refusal::Scope(scope) => (
            StatusCode::FORBIDDEN,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata}\"",
                quoted(scope)
            ),
            format!("the token lacks the scope {scope:?}"),
        ),
        Refusal::NoProfile(why) => (
            StatusCode::FORBIDDEN,
            format!("Bearer error=\"insufficient_scope\", resource_metadata=\"{metadata}\""),
            why.clone(),
        ),
    };
    let mut response = error(status, message);
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Equality without an early exit, so response times say nothing about how much of a guess was right.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
