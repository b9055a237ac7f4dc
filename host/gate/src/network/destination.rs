//! Allowlist patterns (`scheme://host[:port]`, `*.` for subdomains) and the concrete destination of a
//! request, with the matching between them. Pure: no I/O, no DNS, no wasmtime.
//!
//! Names are compared in lowercase without a trailing dot. A pattern's port defaults to the scheme's
//! (443 for https, 80 for http), so `https://api.github.com` allows exactly `https://api.github.com:443`.
//! `*.example.com` allows every name below `example.com` (`a.example.com`, `a.b.example.com`) but not
//! `example.com` itself: list both when both are wanted.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A URL scheme a plugin may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// Parse `http` or `https`, in any case.
    pub fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("http") {
            Some(Self::Http)
        } else if text.eq_ignore_ascii_case("https") {
            Some(Self::Https)
        } else {
            None
        }
    }

    /// The port used when none is written.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// A host as written in a URL: a DNS name (lowercase, no trailing dot) or an IP literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name, resolved by the host when a request is sent.
    Name(String),
    /// An IP address literal (`127.0.0.1`, `[::1]` in URLs).
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => f.write_str(n),
            Self::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// Which hosts a pattern allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Exactly this host.
    Exact(Host),
    /// Every name strictly below this suffix (written `*.suffix`).
    Subdomains(String),
}

/// One allowlist entry, e.g. `https://api.github.com` or `https://*.wikipedia.org:443`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    /// The only scheme allowed.
    pub scheme: Scheme,
    /// The hosts allowed.
    pub host: HostPattern,
    /// The only port allowed.
    pub port: u16,
}

/// Where one request goes: scheme, host and port, as the guest asked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The scheme.
    pub scheme: Scheme,
    /// The host.
    pub host: Host,
    /// The port (the scheme's default when the URL has none).
    pub port: u16,
}

/// Why a pattern or a request's destination was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// The text has no `scheme://`.
    #[error(
        "{0:?} has no scheme: write it as scheme://host[:port], e.g. \"https://api.example.com\""
    )]
    NoScheme(String),
    /// The scheme is neither http nor https.
    #[error("scheme {0:?} is not supported: use \"http\" or \"https\"")]
    Scheme(String),
    /// A path, query, fragment or user name was given where only `host[:port]` belongs.
    #[error(
        "{0:?}: only scheme://host[:port] is allowed here, without user name, path, query or fragment"
    )]
    Extra(String),
    /// The host is not a valid DNS name or IP literal.
    #[error("{host:?} is not a valid host name or IP address{hint}")]
    Host {
        /// The host as written.
        host: String,
        /// Extra guidance, starting with "; ", or empty.
        hint: &'static str,
    },
    /// The port is not a number from 1 to 65535.
    #[error("port {0:?} is not a number from 1 to 65535")]
    Port(String),
}

impl Destination {
    /// Parse an allowlist pattern: `scheme://host[:port]` with an optional trailing `/`, where host may
    /// start with `*.` to allow every subdomain. IP literals are allowed, without wildcards.
    pub fn parse(text: &str) -> Result<Self, DestinationError> {
        let (scheme, rest) = split_scheme(text)?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(DestinationError::Extra(text.to_string()));
        }
        let (host_text, port) = split_port(rest, scheme)?;
        let host = if let Some(suffix) = host_text.strip_prefix("*.") {
            let suffix = normalize_name(suffix).ok_or_else(|| DestinationError::Host {
                host: host_text.to_string(),
                hint: "",
            })?;
            if !suffix.contains('.') {
                return Err(DestinationError::Host {
                    host: host_text.to_string(),
                    hint: "; a wildcard must keep at least two labels (\"*.example.com\", not \"*.com\")",
                });
            }
            HostPattern::Subdomains(suffix)
        } else {
            HostPattern::Exact(parse_host(host_text)?)
        };
        Ok(Self { scheme, host, port })
    }

    /// Whether a request to `target` is allowed by this pattern.
    pub fn matches(&self, target: &Target) -> bool {
        if self.scheme != target.scheme || self.port != target.port {
            return false;
        }
        match (&self.host, &target.host) {
            (HostPattern::Exact(a), b) => a == b,
            (HostPattern::Subdomains(suffix), Host::Name(name)) => is_below(name, suffix),
            (HostPattern::Subdomains(_), Host::Ip(_)) => false,
        }
    }

    /// Whether every destination `other` allows is also allowed by `self`.
    pub fn covers(&self, other: &Destination) -> bool {
        if self.scheme != other.scheme || self.port != other.port {
            return false;
        }
        match (&self.host, &other.host) {
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Exact(_), HostPattern::Subdomains(_)) => false,
            (HostPattern::Subdomains(s), HostPattern::Exact(Host::Name(n))) => is_below(n, s),
            (HostPattern::Subdomains(_), HostPattern::Exact(Host::Ip(_))) => false,
            (HostPattern::Subdomains(s), HostPattern::Subdomains(t)) => s == t || is_below(t, s),
        }
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Exact(h) => write!(f, "{h}")?,
            HostPattern::Subdomains(s) => write!(f, "*.{s}")?,
        }
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl Target {
    /// The destination of a request from its scheme and authority (`host[:port]`, as in a URL).
    /// A user name (`user@host`) is refused: credentials travel in headers the policy controls.
    pub fn new(scheme: &str, authority: &str) -> Result<Self, DestinationError> {
        let scheme =
            Scheme::parse(scheme).ok_or_else(|| DestinationError::Scheme(scheme.to_string()))?;
        if authority.contains(['/', '?', '#', '@']) {
            return Err(DestinationError::Extra(authority.to_string()));
        }
        let (host, port) = split_port(authority, scheme)?;
        Ok(Self {
            scheme,
            host: parse_host(host)?,
            port,
        })
    }

    /// `host` or `host:port` when the port is not the scheme's default: the `Host` header's value.
    pub fn authority(&self) -> String {
        if self.port == self.scheme.default_port() {
            self.host.to_string()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for Target {
    /// `scheme://host:port`, port always written: no path or query, which may hold secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

fn split_scheme(text: &str) -> Result<(Scheme, &str), DestinationError> {
    let (scheme, rest) = text
        .split_once("://")
        .ok_or_else(|| DestinationError::NoScheme(text.to_string()))?;
    let scheme =
        Scheme::parse(scheme).ok_or_else(|| DestinationError::Scheme(scheme.to_string()))?;
    Ok((scheme, rest))
}

/// Split `host[:port]` (IPv6 in brackets), defaulting the port from the scheme.
fn split_port(text: &str, scheme: Scheme) -> Result<(&str, u16), DestinationError> {
    let (host, port) = if text.starts_with('[') {
        match text.find(']') {
            Some(end) => {
                let (host, rest) = text.split_at(end + 1);
                match rest {
                    "" => (host, None),
                    _ => match rest.strip_prefix(':') {
                        Some(p) => (host, Some(p)),
                        None => return Err(DestinationError::Port(rest.to_string())),
                    },
                }
            }
            None => (text, None),
        }
    } else if text.matches(':').count() > 1 {
        // A bare IPv6 address: `parse_host` asks for brackets.
        (text, None)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port = match port {
        None => scheme.default_port(),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(DestinationError::Port(p.to_string())),
        },
    };
    Ok((host, port))
}

fn parse_host(text: &str) -> Result<Host, DestinationError> {
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .map_err(|_| DestinationError::Host {
                host: text.to_string(),
                hint: "",
            });
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return match ip {
            IpAddr::V4(_) => Ok(Host::Ip(ip)),
            // A bare IPv6 address cannot carry a port: it must be bracketed in a URL.
            IpAddr::V6(_) => Err(DestinationError::Host {
                host: text.to_string(),
                hint: "; write IPv6 addresses in brackets, e.g. [::1]",
            }),
        };
    }
    normalize_name(text)
        .map(Host::Name)
        .ok_or_else(|| DestinationError::Host {
            host: text.to_string(),
            hint: if text.is_ascii() {
                ""
            } else {
                "; write internationalized names in their ASCII (punycode) form"
            },
        })
}

/// Lowercase, drop one trailing dot, and check DNS name syntax (letters, digits, '-', '_' inside
/// labels of 1 to 63 bytes, 253 bytes in all).
fn normalize_name(text: &str) -> Option<String> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let valid_label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (!name.is_empty() && name.len() <= 253 && name.split('.').all(valid_label)).then_some(name)
}

fn is_below(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1
        && name.ends_with(suffix)
        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        let (scheme, authority) = url.split_once("://").unwrap();
        Target::new(scheme, authority).unwrap()
    }

    #[test]
    fn exact_pattern_allows_only_its_scheme_host_and_default_port() {
        let d = Destination::parse("https://API.GitHub.com/").unwrap();
        assert!(d.matches(&target("https://api.github.com")));
        assert!(d.matches(&target("https://api.github.com.:443")));
        assert!(!d.matches(&target("http://api.github.com")));
        assert!(!d.matches(&target("https://api.github.com:8443")));
        assert!(!d.matches(&target("https://evil.api.github.com")));
        assert!(!d.matches(&target("https://github.com")));
        assert_eq!(d.to_string(), "https://api.github.com");
    }

    #[test]
    fn wildcard_allows_subdomains_but_not_the_apex_or_lookalikes() {
        let d = Destination::parse("https://*.wikipedia.org:443").unwrap();
        assert!(d.matches(&target("https://en.wikipedia.org")));
        assert!(d.matches(&target("https://a.b.wikipedia.org")));
        assert!(!d.matches(&target("https://wikipedia.org")));
        assert!(!d.matches(&target("https://evilwikipedia.org")));
        assert!(!d.matches(&target("https://en.wikipedia.org.evil.com")));
    }

    #[test]
    fn ip_literals_match_exactly() {
        let d = Destination::parse("http://127.0.0.1:8080").unwrap();
        assert!(d.matches(&target("http://127.0.0.1:8080")));
        assert!(!d.matches(&target("http://127.0.0.1:8081")));
        assert!(!d.matches(&target("http://localhost:8080")));
        let d = Destination::parse("http://[::1]:8080").unwrap();
        assert!(d.matches(&target("http://[0:0::1]:8080")));
    }

    #[test]
    fn rejects_malformed_patterns_precisely() {
        let err = |t: &str| Destination::parse(t).unwrap_err().to_string();
        assert!(err("api.github.com").contains("has no scheme"));
        assert!(err("ftp://x.org").contains("not supported"));
        assert!(err("https://x.org/path").contains("without user name, path"));
        assert!(err("https://u:p@x.org").contains("without user name"));
        assert!(err("https://*.com").contains("at least two labels"));
        assert!(err("https://*").contains("not a valid host"));
        assert!(err("https://x.org:0").contains("port"));
        assert!(err("https://x.org:99999").contains("port"));
        assert!(err("https://exa mple.org").contains("not a valid host"));
        assert!(err("https://bücher.de").contains("punycode"));
        assert!(err("http://::1").contains("brackets"));
    }

    #[test]
    fn targets_refuse_user_names() {
        assert!(Target::new("http", "user:pw@127.0.0.1").is_err());
        assert_eq!(target("http://LocalHost:80").authority(), "localhost");
        assert_eq!(
            target("http://127.0.0.1:81").to_string(),
            "http://127.0.0.1:81"
        );
    }

    #[test]
    fn coverage_between_patterns() {
        let wide = Destination::parse("https://*.example.com").unwrap();
        assert!(wide.covers(&Destination::parse("https://api.example.com").unwrap()));
        assert!(wide.covers(&Destination::parse("https://*.api.example.com").unwrap()));
        assert!(!wide.covers(&Destination::parse("https://example.com").unwrap()));
        assert!(!wide.covers(&Destination::parse("http://api.example.com").unwrap()));
    }
}
