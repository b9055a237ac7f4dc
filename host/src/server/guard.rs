//! What every HTTP request must pass before any route sees it: `Host` and `Origin` against DNS
//! rebinding (then, in [`super::auth`], a bearer token when one is configured). Pure checks on
//! headers; no I/O.
//!
//! Loopback names (`localhost`, `127.0.0.1`, `::1`, any port) are always allowed as hosts and, with
//! `http` or `https`, as origins; `server.allowed-hosts` and `server.allowed-origins` add more. An
//! extra host without a port matches any port; an extra origin without a port means its scheme's
//! default port. A request without `Origin` (any non-browser client) passes the origin check.

use axum::http::{HeaderMap, StatusCode, Uri, header};

use toolhost_policy::config::ServerConfig;

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
struct HostPort {
    host: String,
    port: Option<u16>,
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
    hosts: Vec<HostPort>,
    origins: Vec<Origin>,
}

impl Guard {
    /// Compile `config`; entries that cannot be parsed are logged and ignored.
    pub(crate) fn new(config: &ServerConfig) -> Self {
        let hosts = config
            .allowed_hosts
            .iter()
            .filter_map(|h| {
                let parsed = parse_authority(h);
                if parsed.is_none() {
                    tracing::warn!(
                        "ignoring server.allowed-hosts entry {h:?}: not a host or host:port"
                    );
                }
                parsed
            })
            .collect();
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
        let host_text = match headers.get(header::HOST) {
            Some(v) => v.to_str().map_err(|_| Refusal::BadHost)?.to_string(),
            None => uri
                .authority()
                .map(|a| a.to_string())
                .ok_or(Refusal::BadHost)?,
        };
        let host = parse_authority(&host_text).ok_or(Refusal::BadHost)?;
        if !self.host_allowed(&host) {
            return Err(Refusal::HostNotAllowed(host_text));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = origin.to_str().unwrap_or("<not UTF-8>");
            match parse_origin(text) {
                Some(o) if self.origin_allowed(&o) => {}
                _ => return Err(Refusal::OriginNotAllowed(text.to_string())),
            }
        }
        Ok(())
    }

    fn host_allowed(&self, h: &HostPort) -> bool {
        LOOPBACK_HOSTS.contains(&h.host.as_str())
            || self
                .hosts
                .iter()
                .any(|a| a.host == h.host && a.port.is_none_or(|p| Some(p) == h.port))
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

    /// The same host list in the form rmcp's own check takes.
    pub(crate) fn rmcp_hosts(&self) -> Vec<String> {
        LOOPBACK_HOSTS
            .iter()
            .map(|h| h.to_string())
            .chain(self.hosts.iter().map(|h| match h.port {
                Some(p) => format!("{}:{p}", bracket(&h.host)),
                None => h.host.clone(),
            }))
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

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn parse_authority(text: &str) -> Option<HostPort> {
    let a = axum::http::uri::Authority::try_from(text.trim()).ok()?;
    if a.as_str().contains('@') {
        return None;
    }
    Some(HostPort {
        host: normalize_host(a.host()),
        port: a.port_u16(),
    })
}

fn parse_origin(text: &str) -> Option<Origin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri = Uri::try_from(text).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let port = authority.port_u16().or(match scheme.as_str() {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::HeaderValue;

    use super::*;

    fn config(hosts: &[&str], origins: &[&str], token: Option<&str>) -> ServerConfig {
        ServerConfig {
            http: "127.0.0.1:0".parse().unwrap(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
            token: token.map(str::to_string),
            max_body_bytes: 1024,
            request_timeout: Duration::from_secs(1),
            approval_timeout: Duration::from_secs(1),
            read_timeout: Duration::from_secs(1),
            max_connections: 1,
            max_concurrent_calls: 1,
            shutdown_grace: Duration::from_secs(1),
            state_key: None,
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn check(g: &Guard, pairs: &[(&'static str, &str)]) -> Result<(), Refusal> {
        g.check(&headers(pairs), &Uri::from_static("/mcp"))
    }

    #[test]
    fn allows_loopback_hosts_on_any_port() {
        let g = Guard::new(&config(&[], &[], None));
        for host in [
            "localhost:8750",
            "127.0.0.1:1",
            "[::1]:8750",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert_eq!(check(&g, &[("host", host)]), Ok(()), "{host}");
        }
    }

    #[test]
    fn refuses_rebound_hosts_unless_configured() {
        let g = Guard::new(&config(&["tools.example.com", "box:9000"], &[], None));
        assert!(matches!(
            check(&g, &[("host", "evil.example:8750")]),
            Err(Refusal::HostNotAllowed(_))
        ));
        assert_eq!(check(&g, &[("host", "tools.example.com:443")]), Ok(()));
        assert_eq!(check(&g, &[("host", "box:9000")]), Ok(()));
        assert!(check(&g, &[("host", "box:9001")]).is_err());
        assert_eq!(check(&g, &[]), Err(Refusal::BadHost));
        assert_eq!(
            check(&g, &[("host", "user@localhost")]),
            Err(Refusal::BadHost)
        );
    }

    #[test]
    fn checks_origin_when_present() {
        let g = Guard::new(&config(&[], &["https://app.example.com", "null"], None));
        let host = ("host", "localhost:8750");
        assert_eq!(check(&g, &[host]), Ok(()));
        assert_eq!(
            check(&g, &[host, ("origin", "http://localhost:6274")]),
            Ok(())
        );
        assert_eq!(check(&g, &[host, ("origin", "http://[::1]:3000")]), Ok(()));
        assert_eq!(
            check(&g, &[host, ("origin", "https://app.example.com")]),
            Ok(())
        );
        assert_eq!(
            check(&g, &[host, ("origin", "https://app.example.com:443")]),
            Ok(())
        );
        assert_eq!(check(&g, &[host, ("origin", "null")]), Ok(()));
        for bad in [
            "https://app.example.com:8443",
            "http://app.example.com",
            "https://evil.example",
            "garbage",
        ] {
            assert!(
                matches!(
                    check(&g, &[host, ("origin", bad)]),
                    Err(Refusal::OriginNotAllowed(_))
                ),
                "{bad}"
            );
        }
        let strict = Guard::new(&config(&[], &[], None));
        assert!(check(&strict, &[host, ("origin", "null")]).is_err());
    }

    #[test]
    fn gives_rmcp_the_same_lists() {
        let g = Guard::new(&config(
            &["box:9000", "[fe80::1]"],
            &["https://app.example.com"],
            None,
        ));
        assert!(g.rmcp_hosts().contains(&"box:9000".to_string()));
        assert!(g.rmcp_hosts().contains(&"fe80::1".to_string()));
        let origins = g.rmcp_origins();
        assert!(origins.contains(&"http://[::1]:*".to_string()));
        assert!(origins.contains(&"https://app.example.com:443".to_string()));
    }
}
