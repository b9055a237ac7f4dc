//! What every HTTP request must pass before any route sees it: `Host` and `Origin` against DNS
//! rebinding (then, in [`super::auth`], a bearer token when one is configured). The checks are pure
//! (headers only, no I/O); [`guarded`] is the middleware that answers their refusals.
//!
//! Loopback names (`localhost`, `127.0.0.1`, `::1`, any port) are always allowed as hosts and, with
//! `http` or `https`, as origins; `server.allowed-hosts` and `server.allowed-origins` add more. An
//! extra host without a port matches any port; a range (`10.0.0.0/8`) matches IP literals inside
//! it and never a name ([`toolhost_config::hosts`] says why that is safe); an extra origin without a port means its scheme's
//! default port. A request without `Origin` (any non-browser client) passes the origin check. A
//! port must be a number (`127.0.0.1:8750.evil.com` is refused, not read as `127.0.0.1`), and a
//! request with two `Host` or two `Origin` headers is refused.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;
use toolhost_config::config::ServerConfig;
use toolhost_config::hosts::{
    AllowedHost, BadAuthority, HostPort, normalize_host, parse_authority, strict_port,
};

use super::reply::error;

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Why a request was turned away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No usable `Host`.
    BadHost,
    /// A `Host` not on the list: possibly DNS rebinding.
    HostNotAllowed(String),
    /// An `Origin` not on the list: a web page from elsewhere.
    OriginNotAllowed(String),
}

impl Refusal {
    /// The HTTP status and the message for the client.
    pub(crate) fn status_and_message(&self) -> (StatusCode, String) {
        match self {
            Self::BadHost => (
                StatusCode::BAD_REQUEST,
                "missing or malformed Host header".into(),
            ),
            Self::HostNotAllowed(h) => (
                StatusCode::FORBIDDEN,
                format!("Host {h:?} is not allowed; add it to server.allowed-hosts to serve it"),
            ),
            Self::OriginNotAllowed(o) => (
                StatusCode::FORBIDDEN,
                format!(
                    "Origin {o:?} is not allowed; add it to server.allowed-origins to serve it"
                ),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: u16,
    },
}

/// The checks, compiled from the server settings.
pub(crate) struct Guard {
    hosts: Vec<AllowedHost>,
    origins: Vec<Origin>,
}

impl Guard {
    /// Compile `config` (its hosts were checked with the rest of it); origins that cannot be
    /// parsed are logged and ignored.
    pub(crate) fn new(config: &ServerConfig) -> Self {
        let hosts = config.allowed_hosts.clone();
        let origins = config
            .allowed_origins
            .iter()
            .filter_map(|o| {
                let parsed = parse_origin(o);
                if parsed.is_none() {
                    tracing::warn!("ignoring server.allowed-origins entry {o:?}: not scheme://host[:port] or null");
                }
                parsed
            })
            .collect();
        Self { hosts, origins }
    }

    /// Check one request's headers (and its URI, whose authority stands in for a missing `Host`).
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let host_text = match (hosts.next(), hosts.next()) {
            // Two `Host`s: each part of a chain may believe another one (RFC 9112 says 400; a
            // refusal like any other host's says more).
            (Some(_), Some(_)) => {
                let all: Vec<&str> = headers
                    .get_all(header::HOST)
                    .iter()
                    .map(|v| v.to_str().unwrap_or("<not UTF-8>"))
                    .collect();
                return Err(Refusal::HostNotAllowed(all.join(", ")));
            }
            (Some(v), None) => v.to_str().map_err(|_| Refusal::BadHost)?.to_string(),
            (None, _) => uri
                .authority()
                .map(|a| a.to_string())
                .ok_or(Refusal::BadHost)?,
        };
        let host = match parse_authority(&host_text) {
            Ok(host) => host,
            Err(BadAuthority::Port) => return Err(Refusal::HostNotAllowed(host_text)),
            Err(BadAuthority::Syntax) => return Err(Refusal::BadHost),
        };
        if !self.host_allowed(&host) {
            return Err(Refusal::HostNotAllowed(host_text));
        }
        let mut origins = headers.get_all(header::ORIGIN).iter();
        if let Some(origin) = origins.next() {
            let text = origin.to_str().unwrap_or("<not UTF-8>");
            match parse_origin(text) {
                Some(o) if origins.next().is_none() && self.origin_allowed(&o) => {}
                _ => return Err(Refusal::OriginNotAllowed(text.to_string())),
            }
        }
        Ok(())
    }

    fn host_allowed(&self, h: &HostPort) -> bool {
        LOOPBACK_HOSTS.contains(&h.host.as_str()) || self.hosts.iter().any(|a| a.matches(h))
    }

    fn origin_allowed(&self, o: &Origin) -> bool {
        if let Origin::Tuple { scheme, host, .. } = o
            && (scheme == "http" || scheme == "https")
            && LOOPBACK_HOSTS.contains(&host.as_str())
        {
            return true;
        }
        self.origins.contains(o)
    }

    /// The same host list in the form rmcp's own check takes; `None` when it holds a range, which
    /// rmcp cannot express: `/mcp` then relies on this guard alone, which every route passes first.
    pub(crate) fn rmcp_hosts(&self) -> Option<Vec<String>> {
        let names = self.hosts.iter().map(|h| match h {
            AllowedHost::Name(HostPort {
                host,
                port: Some(p),
            }) => Some(format!("{}:{p}", bracket(host))),
            AllowedHost::Name(HostPort { host, port: None }) => Some(host.clone()),
            AllowedHost::Range(_) => None,
        });
        LOOPBACK_HOSTS
            .iter()
            .map(|h| Some(h.to_string()))
            .chain(names)
            .collect()
    }

    /// The same origin list in the form rmcp's own check takes.
    pub(crate) fn rmcp_origins(&self) -> Vec<String> {
        let loopback = LOOPBACK_HOSTS
            .iter()
            .flat_map(|h| ["http", "https"].map(|s| format!("{s}://{}:*", bracket(h))));
        loopback
            .chain(self.origins.iter().map(|o| match o {
                Origin::Null => "null".to_string(),
                Origin::Tuple { scheme, host, port } => {
                    format!("{scheme}://{}:{port}", bracket(host))
                }
            }))
            .collect()
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

fn parse_origin(text: &str) -> Option<Origin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri = Uri::try_from(text).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let port = strict_port(authority).ok()?.or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some(Origin::Tuple {
        scheme,
        host: normalize_host(authority.host()),
        port,
    })
}

/// Middleware: a request the guard refuses is answered here (with a log line when Host or Origin
/// is refused); others go on.
pub(crate) async fn guarded(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let Err(refusal) = guard.check(request.headers(), request.uri()) else {
        return next.run(request).await;
    };
    let (status, message) = refusal.status_and_message();
    if status == StatusCode::FORBIDDEN {
        tracing::warn!(path = %request.uri().path(), "refused: {message}");
    }
    error(status, message)
}

#[cfg(test)]
mod tests;
