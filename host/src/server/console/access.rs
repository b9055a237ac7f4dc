//! Who may use the console, checked on every request under `/console`: an operator, by a bearer
//! token whose `[[callers]]` profile has `role = "operator"` or by a signed-in session; and, for
//! an action made with a session's cookie, proof that the console's own page made it (the
//! session's `X-CSRF-Token`, a same-origin `Origin` and `Sec-Fetch-Site`). A caller without the
//! role is refused everything, the page included.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::Console;
use super::session::same_secret;
use crate::server::http::reply::error;
use toolhost_gate::caller::Caller;

/// The operator behind a request, for the routes.
#[derive(Debug, Clone)]
pub(crate) struct Operator {
    /// As the audit log names them.
    pub(crate) name: String,
    /// The session's anti-CSRF token; `None` for a bearer token.
    pub(crate) csrf: Option<String>,
}

/// Refuses a bearer caller without the operator role anywhere under `/console`.
pub(super) async fn operators_only(
    State(console): State<Arc<Console>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(caller) = request.extensions().get::<Arc<Caller>>()
        && !console.is_operator(caller)
    {
        return not_an_operator();
    }
    next.run(request).await
}

fn not_an_operator() -> Response {
    error(
        StatusCode::FORBIDDEN,
        "the console is for operators: this caller's [[callers]] profile has no role = \"operator\"",
    )
}

/// The API's gate: an operator, and for a cookie's action, the console's own page.
pub(super) async fn signed_in(
    State(console): State<Arc<Console>>,
    mut request: Request,
    next: Next,
) -> Response {
    let operator = if let Some(caller) = request.extensions().get::<Arc<Caller>>() {
        if !console.is_operator(caller) {
            return not_an_operator();
        }
        Operator {
            name: caller.to_string(),
            csrf: None,
        }
    } else if let Some(session) = match console.sessions.find(request.headers()).await {
        Ok(found) => found,
        Err(e) => return super::unavailable(&e),
    } {
        Operator {
            name: session.operator,
            csrf: Some(session.csrf),
        }
    } else {
        return error(
            StatusCode::UNAUTHORIZED,
            "not signed in: open the console sign-in link toolhost printed at start, or sign in at \
             /console/login, or send an operator's bearer token",
        );
    };
    let safe = matches!(*request.method(), Method::GET | Method::HEAD);
    if !safe
        && let Some(csrf) = &operator.csrf
        && let Err(why) = same_site(request.headers(), csrf)
    {
        return error(StatusCode::FORBIDDEN, why);
    }
    request.extensions_mut().insert(operator);
    // Someone is at the console: questions may wait there for a while.
    console.services().questions.seen();
    next.run(request).await
}

/// Whether an action with a session cookie came from the console's own page.
fn same_site(headers: &HeaderMap, csrf: &str) -> Result<(), &'static str> {
    let given = headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !same_secret(given, csrf) {
        return Err(
            "this action needs the session's X-CSRF-Token header (GET /console/api/session)",
        );
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && site != "same-origin"
    {
        return Err("cross-site request refused");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest);
        if host.is_none() || origin_host != host {
            return Err("cross-site request refused: Origin is not this console");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn an_action_needs_the_token_and_this_origin() {
        let ok = headers(&[
            ("host", "127.0.0.1:8750"),
            ("origin", "http://127.0.0.1:8750"),
            ("sec-fetch-site", "same-origin"),
            ("x-csrf-token", "abc"),
        ]);
        assert!(same_site(&ok, "abc").is_ok());
        // curl: no Origin, no Sec-Fetch-Site, but the token.
        assert!(same_site(&headers(&[("host", "h"), ("x-csrf-token", "abc")]), "abc").is_ok());
        assert!(same_site(&headers(&[("host", "h")]), "abc").is_err());
        let mut other = ok.clone();
        other.insert("origin", HeaderValue::from_static("http://127.0.0.1:9999"));
        assert!(same_site(&other, "abc").is_err());
        let mut cross = ok.clone();
        cross.insert("sec-fetch-site", HeaderValue::from_static("same-site"));
        assert!(same_site(&cross, "abc").is_err());
        assert!(same_site(&ok, "abd").is_err());
    }
}
