//! `[auth]` as written and resolved: toolhost as an OAuth 2.1 resource server (MCP authorization).
//! Bearer JWTs from `issuer` are verified locally against its JWKS, for `audience` (this server's
//! resource identifier, RFC 8707), with an algorithm allowlist; the static token
//! (`server.token-env`) stays valid beside it. `[[callers]]` profiles are compiled here too.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toolhost_gate::caller::{Profiles, RawProfile};

use super::{ConfigError, invalid};

/// Signature algorithms a token may use: asymmetric only. `none` and the HMAC family are never
/// accepted (an HMAC "signed" with the public key is the classic forgery).
pub const ALGORITHMS: [&str; 7] = [
    "RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA",
];

/// `[auth]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawAuth {
    /// The authorization server's issuer identifier (`iss` of its tokens).
    pub issuer: String,
    /// This server's resource identifier: tokens must name it in `aud`.
    pub audience: String,
    /// The JWKS URL; default: the issuer's metadata (`/.well-known/openid-configuration`, then
    /// `/.well-known/oauth-authorization-server`).
    pub jwks_uri: Option<String>,
    /// Accepted signature algorithms; default RS256 and ES256.
    pub algorithms: Option<Vec<String>>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds. Default 30, at most 300.
    pub leeway_s: Option<u64>,
    /// Scopes advertised in the protected-resource metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// A scope every token must carry (answered 403 `insufficient_scope` without it).
    pub required_scope: Option<String>,
    /// Token introspection (RFC 7662), for opaque tokens.
    pub introspection: Option<RawIntrospection>,
    /// Token exchange (RFC 8693): where a caller's token is exchanged for one meant for a
    /// plugin's destination (secrets with `exchange`), and as which client.
    pub token_exchange: Option<RawIntrospection>,
}

/// `[auth.introspection]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawIntrospection {
    /// The introspection endpoint.
    pub url: String,
    /// toolhost's client id at the authorization server.
    pub client_id: String,
    /// The environment variable holding its client secret.
    pub client_secret_env: String,
}

/// `[auth.introspection]`, checked: where to ask about an opaque token, and as whom.
#[derive(Clone, PartialEq, Eq)]
pub struct Introspection {
    /// The endpoint.
    pub url: String,
    /// The client id.
    pub client_id: String,
    /// The client secret (read from the environment at start).
    pub client_secret: String,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// `[auth]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// The issuer identifier.
    pub issuer: String,
    /// The resource identifier tokens must be for.
    pub audience: String,
    /// Where the keys are, if configured (else discovered from the issuer).
    pub jwks_uri: Option<String>,
    /// Accepted algorithms (names as in a JWT header).
    pub algorithms: Vec<String>,
    /// Tolerated clock skew.
    pub leeway: Duration,
    /// Advertised scopes.
    pub scopes_supported: Vec<String>,
    /// A scope every token must carry.
    pub required_scope: Option<String>,
    /// Where opaque tokens are introspected, if anywhere.
    pub introspection: Option<Introspection>,
    /// Where callers' tokens are exchanged (the same shape: an endpoint and toolhost's client).
    pub token_exchange: Option<Introspection>,
}

/// `https://`, or `http://` on a loopback host (a test issuer).
fn secure_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    let host = uri.host().unwrap_or_default();
    match uri.scheme_str() {
        Some("https") => !host.is_empty(),
        Some("http") => matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1"),
        _ => false,
    }
}

/// Check `[auth]`.
pub(super) fn resolve_auth(raw: &RawAuth) -> Result<AuthConfig, ConfigError> {
    if !secure_url(&raw.issuer) {
        return Err(invalid(
            "auth.issuer",
            "must be an https:// URL (http:// only on loopback, for tests)",
        ));
    }
    if raw.audience.trim().is_empty() {
        return Err(invalid(
            "auth.audience",
            "must name this server, e.g. \"https://tools.example.com/mcp\"",
        ));
    }
    if let Some(uri) = &raw.jwks_uri
        && !secure_url(uri)
    {
        return Err(invalid(
            "auth.jwks-uri",
            "must be an https:// URL (http:// only on loopback, for tests)",
        ));
    }
    let algorithms = raw
        .algorithms
        .clone()
        .unwrap_or_else(|| vec!["RS256".into(), "ES256".into()]);
    if algorithms.is_empty() {
        return Err(invalid(
            "auth.algorithms",
            "must list at least one algorithm",
        ));
    }
    for a in &algorithms {
        if !ALGORITHMS.contains(&a.as_str()) {
            return Err(invalid(
                "auth.algorithms",
                format!(
                    "{a:?} is not accepted; use asymmetric ones: {}",
                    ALGORITHMS.join(", ")
                ),
            ));
        }
    }
    let leeway = raw.leeway_s.unwrap_or(30);
    if leeway > 300 {
        return Err(invalid("auth.leeway-s", "must be at most 300"));
    }
    Ok(AuthConfig {
        introspection: raw
            .introspection
            .as_ref()
            .map(|i| resolve_client(i, "auth.introspection"))
            .transpose()?,
        token_exchange: raw
            .token_exchange
            .as_ref()
            .map(|i| resolve_client(i, "auth.token-exchange"))
            .transpose()?,
        issuer: raw.issuer.trim_end_matches('/').to_owned(),
        audience: raw.audience.clone(),
        jwks_uri: raw.jwks_uri.clone(),
        algorithms,
        leeway: Duration::from_secs(leeway),
        scopes_supported: raw.scopes_supported.clone(),
        required_scope: raw.required_scope.clone(),
    })
}

/// An endpoint toolhost calls as its own client (`key` names it in errors).
fn resolve_client(raw: &RawIntrospection, key: &str) -> Result<Introspection, ConfigError> {
    if !secure_url(&raw.url) {
        return Err(invalid(
            format!("{key}.url"),
            "must be an https:// URL (http:// only on loopback, for tests)",
        ));
    }
    let secret = std::env::var(&raw.client_secret_env).map_err(|_| {
        invalid(
            format!("{key}.client-secret-env"),
            format!(
                "{} is not set in the daemon's environment",
                raw.client_secret_env
            ),
        )
    })?;
    Ok(Introspection {
        url: raw.url.clone(),
        client_id: raw.client_id.clone(),
        client_secret: secret,
    })
}

/// Compile `[[callers]]`, reading each profile's own credentials (relative to `base`).
pub(super) fn resolve_callers(raw: &[RawProfile], base: &Path) -> Result<Profiles, ConfigError> {
    let mut profiles =
        Profiles::new(raw).map_err(|(i, e)| invalid(format!("callers[{i}]"), e.to_string()))?;
    for (i, p) in raw.iter().enumerate() {
        let mut secrets = BTreeMap::new();
        for (name, s) in &p.secrets {
            let k = format!("callers[{i}].secrets.{name}");
            if !super::network::secret_name(name) {
                return Err(invalid(
                    k,
                    "secret names use only letters, digits, '_' and '-'",
                ));
            }
            let value =
                super::network::read_value(s.from_env.as_ref(), s.from_file.as_ref(), base, &k)?;
            secrets.insert(name.clone(), value);
        }
        profiles.set_secrets(i, secrets);
    }
    Ok(profiles)
}

#[cfg(test)]
mod tests;
