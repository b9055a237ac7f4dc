//! One access token verified: a JWT whose header names an allowed asymmetric algorithm and a key of
//! the issuer's, whose signature that key verifies, and whose claims say it is from the issuer, for
//! this resource (`aud`), and current (`exp`, `nbf`, with the configured leeway). The claims become
//! a [`Caller`]; the token itself is kept nowhere.

use jsonwebtoken::{Validation, decode, decode_header};
use serde::Deserialize;
use serde_json::Value;

use toolhost_config::config::AuthConfig;
use toolhost_gate::caller::Caller;

use super::keys::{KeyError, Keys};

/// Why a token was refused, in words a client can act on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    /// Not a JWT, or an algorithm not allowed (`none`, HMAC, or one the config leaves out).
    #[error("{0}")]
    Malformed(String),
    /// No key to check it with.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The signature or a claim is wrong.
    #[error("{0}")]
    Claims(String),
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<String>,
    scp: Option<Value>,
    groups: Option<Vec<String>>,
}

/// Verify `token` against the issuer of `config`.
pub(super) async fn verify(
    token: &str,
    config: &AuthConfig,
    keys: &Keys,
) -> Result<Caller, TokenError> {
    let header =
        decode_header(token).map_err(|e| TokenError::Malformed(format!("not a JWT: {e}")))?;
    let alg = format!("{:?}", header.alg);
    if !config.algorithms.contains(&alg) {
        return Err(TokenError::Malformed(format!(
            "algorithm {alg} is not accepted (accepted: {})",
            config.algorithms.join(", ")
        )));
    }
    let (key, pinned) = keys.key(header.kid.as_deref()).await?;
    if pinned.is_some_and(|p| p != header.alg) {
        return Err(TokenError::Malformed(format!(
            "the key {:?} is for another algorithm than {alg}",
            header.kid.unwrap_or_default()
        )));
    }
    // The header's algorithm alone (already checked against the allowlist): jsonwebtoken wants
    // every algorithm it is given to fit the key's family.
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[config.issuer.as_str(), &format!("{}/", config.issuer)]);
    validation.set_audience(&[config.audience.as_str()]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.validate_nbf = true;
    validation.leeway = config.leeway.as_secs();
    let data = decode::<Claims>(token, &key, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind as K;
        TokenError::Claims(match e.kind() {
            K::ExpiredSignature => "the token has expired".to_owned(),
            K::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
            K::InvalidIssuer => format!("the token is not from {}", config.issuer),
            K::InvalidAudience => {
                format!(
                    "the token is not for this server (audience {})",
                    config.audience
                )
            }
            K::InvalidSignature => "the signature does not verify".to_owned(),
            K::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
            K::InvalidAlgorithm => format!("algorithm {alg} does not fit the key"),
            _ => format!("the token is not valid: {e}"),
        })
    })?;
    let c = data.claims;
    let mut scopes: Vec<String> = c
        .scope
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    match c.scp {
        Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
        Some(Value::Array(items)) => {
            scopes.extend(items.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        _ => {}
    }
    Ok(Caller {
        issuer: c.iss,
        subject: c.sub,
        client_id: c.client_id.or(c.azp),
        scopes,
        groups: c.groups.unwrap_or_default(),
        token: None,
    })
}
