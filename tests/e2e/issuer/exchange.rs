//! OAuth 2.0 Token Exchange (RFC 8693) at the test issuer's `/token`: toolhost, as the client
//! [`INTROSPECTION_CLIENT`](super::INTROSPECTION_CLIENT), trades a caller's token for one meant
//! for a destination. Only tokens this issuer signed, still current, are exchanged; the issued
//! token names the subject it was issued for, so a test can tell whose token reached a server.

use std::net::TcpStream;

use serde_json::json;

use super::{INTROSPECTION_CLIENT, Shared, form, now, respond};

/// The grant type of a token exchange.
pub(super) const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Answer one exchange request (`head` for the client's Basic credentials, `body` the form).
pub(super) fn answer(
    stream: &mut TcpStream,
    shared: &Shared,
    head: &str,
    body: &str,
) -> std::io::Result<()> {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        INTROSPECTION_CLIENT.0, INTROSPECTION_CLIENT.1
    ));
    let authorized = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("authorization") && v.trim() == format!("Basic {basic}")
        })
    });
    if !authorized {
        return respond(
            stream,
            "401 Unauthorized",
            &json!({"error": "invalid_client"}),
        );
    }
    let f = form(body);
    let field = |k: &str| f.get(k).cloned().unwrap_or_default();
    let refuse = |stream: &mut TcpStream, why: &str| {
        respond(
            stream,
            "400 Bad Request",
            &json!({"error": "invalid_grant", "error_description": why}),
        )
    };
    if field("subject_token_type") != ACCESS_TOKEN {
        return refuse(stream, "subject_token_type must be an access token");
    }
    let audience = field("audience");
    if audience.is_empty() && field("resource").is_empty() {
        return refuse(stream, "name an audience or a resource");
    }
    let mut state = shared.state();
    let Some(claims) = state.signed.get(&field("subject_token")).cloned() else {
        drop(state);
        return refuse(stream, "the subject token was not issued here");
    };
    if claims["exp"].as_u64().is_none_or(|exp| exp <= now()) {
        drop(state);
        return refuse(stream, "the subject token has expired");
    }
    state.exchanges += 1;
    let n = state.exchanges;
    let life = state.exchanged_life;
    drop(state);
    let sub = claims["sub"].as_str().unwrap_or_default();
    let answer = json!({
        "access_token": format!("exchanged-{sub}-{n}-for-{}", audience.replace(['/', ':'], "_")),
        "issued_token_type": ACCESS_TOKEN,
        "token_type": "Bearer",
        "expires_in": life,
    });
    respond(stream, "200 OK", &answer)
}
