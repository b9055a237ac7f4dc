//! `[plugins.NAME.network]` and `[plugins.NAME.secrets.SECRET]` as written, and their validation into a
//! [`NetworkGrant`] and [`SecretGrant`]s. Secret values are read here (from the daemon's environment or
//! a file) and never appear in an error message. Nothing here touches wasmtime.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toolhost_gate::network::{
    CallerSecret, CallerSource, Destination, Exchange, NetworkGrant, NetworkLimits, Scheme, Secret,
    SecretGrant, SecretHeader,
};

use super::{ConfigError, invalid};

/// Secrets shorter than this are refused: redacting every occurrence of a short string would garble
/// results, and a short secret is guessable anyway.
const MIN_SECRET_BYTES: usize = 8;

/// Headers a secret may not set: hop-by-hop, framing, and routing headers the host controls.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
    "proxy-authorization",
    "http2-settings",
];

/// `[plugins.NAME.network]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawNetwork {
    /// Allowed destinations, `scheme://host[:port]`, `*.` for subdomains.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Let allowed names resolve to loopback, private, link-local and unique-local addresses.
    #[serde(default)]
    pub allow_private: bool,
    /// Destinations to which the guest may send its own `Authorization` and `Cookie` headers.
    #[serde(default)]
    pub guest_credentials: Vec<String>,
    /// Largest request body, in KiB. Default 1024.
    pub max_request_kb: Option<u64>,
    /// Largest response body, in KiB. Default 10240.
    pub max_response_kb: Option<u64>,
    /// Resolve plus connect plus TLS handshake, in ms. Default 10000.
    pub connect_timeout_ms: Option<u64>,
    /// One whole request, to the last byte of the response, in ms. Default 30000.
    pub request_timeout_ms: Option<u64>,
    /// Requests per call, redirects included. Default 100.
    pub max_requests: Option<u32>,
}

/// `[plugins.NAME.secrets.SECRET]` as written: where the value comes from and how the plugin gets it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawSecret {
    /// Read the value from this variable of the daemon's environment.
    pub from_env: Option<String>,
    /// Read the value from this file (relative to the config file), one trailing newline removed.
    pub from_file: Option<PathBuf>,
    /// Give the value to the guest in this environment variable.
    pub env: Option<String>,
    /// Have the host add this header to requests to `destinations`; the guest never sees the value.
    pub header: Option<String>,
    /// The header's value, with `{secret}` standing for the secret. Default `{secret}`.
    pub format: Option<String>,
    /// Where the header goes: patterns like the network allowlist's, each within it.
    #[serde(default)]
    pub destinations: Vec<String>,
    /// The value is the calling profile's secret of this name (`[[callers]] secrets.NAME`).
    pub from_caller: Option<String>,
    /// The value is a token exchanged for the caller's own at `[auth.token-exchange]`.
    pub exchange: Option<RawExchange>,
}

/// `exchange = { ... }` of a secret: what the token is for (RFC 8693 §2.1).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawExchange {
    /// `audience`: the destination's logical name.
    pub audience: Option<String>,
    /// `resource`: the destination's URI.
    pub resource: Option<String>,
    /// `scope`, space-separated.
    pub scope: Option<String>,
}

/// Whether `name` may name a secret: letters, digits, `_` and `-`.
pub(super) fn secret_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Validate the network section of one plugin; `key` is `plugins.NAME.network`.
pub(super) fn resolve_network(
    raw: Option<&RawNetwork>,
    key: &str,
) -> Result<Option<NetworkGrant>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    if raw.allow.is_empty() {
        return Err(invalid(
            format!("{key}.allow"),
            "list at least one destination, e.g. [\"https://api.example.com\"]; remove the section to grant no network",
        ));
    }
    let allow = parse_all(&raw.allow, &format!("{key}.allow"))?;
    let guest_credentials = parse_all(&raw.guest_credentials, &format!("{key}.guest-credentials"))?;
    for (i, d) in guest_credentials.iter().enumerate() {
        if !allow.iter().any(|a| a.covers(d)) {
            return Err(invalid(
                format!("{key}.guest-credentials[{i}]"),
                format!("{d} is not within `allow`"),
            ));
        }
    }
    let defaults = NetworkLimits::default();
    let positive = |v: Option<u64>, field: &str, max: u64| match v {
        None => Ok(None),
        Some(0) => Err(invalid(format!("{key}.{field}"), "must be greater than 0")),
        Some(n) if n > max => Err(invalid(
            format!("{key}.{field}"),
            format!("must be at most {max}"),
        )),
        Some(n) => Ok(Some(n)),
    };
    let limits = NetworkLimits {
        max_request_bytes: positive(raw.max_request_kb, "max-request-kb", 1 << 20)?
            .map_or(defaults.max_request_bytes, |kb| kb << 10),
        max_response_bytes: positive(raw.max_response_kb, "max-response-kb", 1 << 20)?
            .map_or(defaults.max_response_bytes, |kb| kb << 10),
        connect_timeout: positive(raw.connect_timeout_ms, "connect-timeout-ms", 3_600_000)?
            .map_or(defaults.connect_timeout, Duration::from_millis),
        request_timeout: positive(raw.request_timeout_ms, "request-timeout-ms", 3_600_000)?
            .map_or(defaults.request_timeout, Duration::from_millis),
        max_requests: positive(raw.max_requests.map(u64::from), "max-requests", 100_000)?
            .map_or(defaults.max_requests, |n| n as u32),
    };
    Ok(Some(NetworkGrant {
        allow,
        allow_private: raw.allow_private,
        guest_credentials,
        limits,
    }))
}

/// Read and validate the secrets of one plugin; `key` is `plugins.NAME`. `env` holds the plugin's
/// other env grants, so a secret cannot silently replace one.
pub(super) fn resolve_secrets(
    raw: &BTreeMap<String, RawSecret>,
    network: Option<&NetworkGrant>,
    env: &[(String, String)],
    base: &Path,
    key: &str,
) -> Result<(Vec<SecretGrant>, Vec<CallerSecret>), ConfigError> {
    let mut out: Vec<SecretGrant> = Vec::new();
    let mut callers = Vec::new();
    for (name, s) in raw {
        let k = format!("{key}.secrets.{name}");
        if !secret_name(name) {
            return Err(invalid(
                k,
                "secret names use only letters, digits, '_' and '-'",
            ));
        }
        if s.from_caller.is_some() || s.exchange.is_some() {
            callers.push(resolve_caller_secret(name, s, network, &k)?);
            continue;
        }
        let value = read_value(s.from_env.as_ref(), s.from_file.as_ref(), base, &k)?;
        if s.env.is_none() && s.header.is_none() {
            return Err(invalid(
                k,
                "grant the secret as `env = \"NAME\"`, as `header = \"...\"`, or both",
            ));
        }
        if let Some(var) = &s.env {
            if var.is_empty() || var.contains(['=', '\0']) {
                return Err(invalid(
                    format!("{k}.env"),
                    "not a valid environment variable name",
                ));
            }
            let taken = env.iter().any(|(e, _)| e == var)
                || out.iter().any(|o| o.env.as_ref() == Some(var));
            if taken {
                return Err(invalid(
                    format!("{k}.env"),
                    format!("{var} is already given to this plugin"),
                ));
            }
        }
        let header = match &s.header {
            None if !s.destinations.is_empty() || s.format.is_some() => {
                return Err(invalid(
                    k,
                    "`destinations` and `format` only apply with `header`",
                ));
            }
            None => None,
            Some(h) => Some(resolve_header(h, s, &value, network, &k)?),
        };
        out.push(SecretGrant {
            name: name.clone(),
            value,
            env: s.env.clone(),
            header,
        });
    }
    Ok((out, callers))
}

/// A secret whose value each caller brings: a header only (it never enters the sandbox).
fn resolve_caller_secret(
    name: &str,
    s: &RawSecret,
    network: Option<&NetworkGrant>,
    k: &str,
) -> Result<CallerSecret, ConfigError> {
    let sources = [
        s.from_env.is_some(),
        s.from_file.is_some(),
        s.from_caller.is_some(),
        s.exchange.is_some(),
    ];
    if sources.iter().filter(|&&b| b).count() != 1 {
        return Err(invalid(
            k,
            "set exactly one of `from-env`, `from-file`, `from-caller` and `exchange`",
        ));
    }
    if s.env.is_some() {
        return Err(invalid(
            format!("{k}.env"),
            "a caller's credential never enters the sandbox: give it as `header` only",
        ));
    }
    let Some(header) = &s.header else {
        return Err(invalid(
            format!("{k}.header"),
            "a caller's credential is a header the host adds: name it, e.g. \"Authorization\"",
        ));
    };
    // Checked with a stand-in value: the caller's own is checked again with each call.
    let checked = resolve_header(header, s, &Secret::new("credential"), network, k)?;
    let source = match (&s.from_caller, &s.exchange) {
        (Some(from), _) => {
            if !secret_name(from) {
                return Err(invalid(
                    format!("{k}.from-caller"),
                    "names a `[[callers]] secrets` entry: letters, digits, '_' and '-'",
                ));
            }
            CallerSource::Profile(from.clone())
        }
        (None, Some(x)) => {
            if x.audience.is_none() && x.resource.is_none() {
                return Err(invalid(
                    format!("{k}.exchange"),
                    "name what the token is for: `audience`, `resource` or both",
                ));
            }
            CallerSource::Exchange(Exchange {
                audience: x.audience.clone(),
                resource: x.resource.clone(),
                scope: x.scope.clone(),
            })
        }
        (None, None) => return Err(invalid(k, "name where the caller's value comes from")),
    };
    Ok(CallerSecret {
        name: name.to_owned(),
        source,
        header: checked.name,
        format: s.format.clone().unwrap_or_else(|| "{secret}".to_owned()),
        destinations: checked.destinations,
    })
}

/// A secret's value from the daemon's environment (`from_env`) or a file (`from_file`, relative
/// to `base`, one trailing newline removed); `k` names the setting in errors.
pub(super) fn read_value(
    from_env: Option<&String>,
    from_file: Option<&PathBuf>,
    base: &Path,
    k: &str,
) -> Result<Secret, ConfigError> {
    let value = match (from_env, from_file) {
        (Some(var), None) => std::env::var(var).map_err(|_| {
            invalid(
                format!("{k}.from-env"),
                format!("{var} is not set (or not UTF-8) in the daemon's environment"),
            )
        })?,
        (None, Some(file)) => {
            let path = base.join(file);
            let mut text = std::fs::read_to_string(&path).map_err(|e| {
                invalid(
                    format!("{k}.from-file"),
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
            text
        }
        _ => return Err(invalid(k, "set exactly one of `from-env` and `from-file`")),
    };
    if value.len() < MIN_SECRET_BYTES {
        return Err(invalid(
            k,
            format!(
                "the value is {} bytes long; secrets shorter than {MIN_SECRET_BYTES} bytes cannot be redacted reliably",
                value.len()
            ),
        ));
    }
    if value.contains('\0') {
        return Err(invalid(k, "the value contains a NUL byte"));
    }
    Ok(Secret::new(value))
}

fn resolve_header(
    name: &str,
    s: &RawSecret,
    value: &Secret,
    network: Option<&NetworkGrant>,
    k: &str,
) -> Result<SecretHeader, ConfigError> {
    let lower = name.to_ascii_lowercase();
    if http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
        return Err(invalid(
            format!("{k}.header"),
            format!("{name:?} is not a valid header name"),
        ));
    }
    if RESERVED_HEADERS.contains(&lower.as_str()) {
        return Err(invalid(
            format!("{k}.header"),
            format!("{name:?} is controlled by the host"),
        ));
    }
    let format = s.format.as_deref().unwrap_or("{secret}");
    if !format.contains("{secret}") {
        return Err(invalid(
            format!("{k}.format"),
            "must contain {secret}, e.g. \"Bearer {secret}\"",
        ));
    }
    let rendered = format.replace("{secret}", value.expose());
    if http::HeaderValue::from_str(&rendered).is_err() {
        // Never quote the value: say what is wrong with it.
        return Err(invalid(
            k,
            "the header value would contain characters a header cannot carry (control characters or non-ASCII)",
        ));
    }
    let Some(network) = network else {
        return Err(invalid(
            format!("{k}.header"),
            "a secret header needs network access: add the plugin's [network] section with `allow`",
        ));
    };
    if s.destinations.is_empty() {
        return Err(invalid(
            format!("{k}.destinations"),
            "list where the header goes, e.g. [\"https://api.example.com\"]",
        ));
    }
    let destinations = parse_all(&s.destinations, &format!("{k}.destinations"))?;
    for (i, d) in destinations.iter().enumerate() {
        if !network.allow.iter().any(|a| a.covers(d)) {
            return Err(invalid(
                format!("{k}.destinations[{i}]"),
                format!("{d} is not within the plugin's network `allow` list"),
            ));
        }
        if d.scheme == Scheme::Http {
            tracing::warn!(secret = %k, destination = %d, "a secret header will be sent over plain http");
        }
    }
    Ok(SecretHeader {
        name: lower,
        value: Secret::new(rendered),
        destinations,
    })
}

fn parse_all(texts: &[String], key: &str) -> Result<Vec<Destination>, ConfigError> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Destination::parse(t).map_err(|e| invalid(format!("{key}[{i}]"), e.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(text: &str) -> Result<Option<NetworkGrant>, ConfigError> {
        let raw: RawNetwork = toml::from_str(text).unwrap();
        resolve_network(Some(&raw), "plugins.p.network")
    }

    fn secrets(text: &str, net: Option<&NetworkGrant>) -> Result<Vec<SecretGrant>, ConfigError> {
        let raw: BTreeMap<String, RawSecret> = toml::from_str(text).unwrap();
        resolve_secrets(&raw, net, &[], Path::new("."), "plugins.p").map(|(s, _)| s)
    }

    #[test]
    fn parses_a_grant_with_limits() {
        let g = network("allow = [\"https://api.github.com\", \"http://127.0.0.1:8080\"]\nallow-private = true\nmax-response-kb = 4\nrequest-timeout-ms = 500\n")
            .unwrap()
            .unwrap();
        assert_eq!(g.allow.len(), 2);
        assert!(g.allow_private);
        assert_eq!(g.limits.max_response_bytes, 4096);
        assert_eq!(g.limits.request_timeout, Duration::from_millis(500));
        assert_eq!(resolve_network(None, "k").unwrap(), None);
    }

    #[test]
    fn names_the_bad_setting() {
        let e = |t: &str| network(t).unwrap_err().to_string();
        assert!(e("allow = []").contains("plugins.p.network.allow"));
        assert!(
            e("allow = [\"https://ok.org\", \"ftp://x.org\"]")
                .contains("plugins.p.network.allow[1]")
        );
        assert!(e("allow = [\"https://ok.org\"]\nmax-requests = 0").contains("max-requests"));
        let msg = e("allow = [\"https://ok.org\"]\nguest-credentials = [\"https://other.org\"]");
        assert!(
            msg.contains("guest-credentials[0]") && msg.contains("not within `allow`"),
            "{msg}"
        );
    }

    #[test]
    fn a_callers_credential_is_a_header_from_exactly_one_source() {
        let net = network("allow = [\"https://api.example.com\"]")
            .unwrap()
            .unwrap();
        let resolve = |text: &str| {
            let raw: BTreeMap<String, RawSecret> = toml::from_str(text).unwrap();
            resolve_secrets(&raw, Some(&net), &[], Path::new("."), "plugins.p")
        };
        let dest = "header = \"Authorization\"\ndestinations = [\"https://api.example.com\"]\n";
        let (daemon, callers) = resolve(&format!(
            "[a]\nfrom-caller = \"github\"\n{dest}[b]\nexchange = {{ audience = \"api\" }}\nformat = \"Bearer {{secret}}\"\n{dest}"
        ))
        .unwrap();
        assert!(daemon.is_empty());
        assert_eq!(callers.len(), 2);
        assert_eq!(callers[0].source, CallerSource::Profile("github".into()));
        assert_eq!(callers[1].header, "authorization");
        assert_eq!(callers[1].format, "Bearer {secret}");
        let e = |text: String| resolve(&text).unwrap_err().to_string();
        for (text, needle) in [
            (
                format!("[a]\nfrom-caller = \"github\"\nenv = \"TOKEN\"\n{dest}"),
                "plugins.p.secrets.a.env",
            ),
            (
                format!("[a]\nfrom-caller = \"github\"\nfrom-env = \"X\"\n{dest}"),
                "exactly one of",
            ),
            ("[a]\nfrom-caller = \"github\"\n".to_owned(), "plugins.p.secrets.a.header"),
            (
                format!("[a]\nfrom-caller = \"git hub\"\n{dest}"),
                "plugins.p.secrets.a.from-caller",
            ),
            (
                format!("[a]\nexchange = {{ scope = \"read\" }}\n{dest}"),
                "plugins.p.secrets.a.exchange",
            ),
            (
                "[a]\nfrom-caller = \"github\"\nheader = \"Authorization\"\ndestinations = [\"https://other.example.com\"]\n".to_owned(),
                "plugins.p.secrets.a.destinations[0]",
            ),
        ] {
            let msg = e(text);
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
    }

    #[test]
    fn reads_secrets_and_never_quotes_them() {
        // Unique to this test and never set: the error must name it.
        let var = "TOOLHOST_TEST_SECRET_CFG_1";
        let net = network("allow = [\"https://api.example.com\"]")
            .unwrap()
            .unwrap();
        let text = format!(
            "[tok]\nfrom-env = \"{var}\"\nheader = \"Authorization\"\nformat = \"Bearer {{secret}}\"\ndestinations = [\"https://api.example.com\"]\n"
        );
        let e = secrets(&text, Some(&net)).unwrap_err().to_string();
        assert!(
            e.contains("plugins.p.secrets.tok.from-env") && e.contains(var),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tok"), "s3cr3t-value-123\n").unwrap();
        let text = format!(
            "[tok]\nfrom-file = \"{}\"\nheader = \"Authorization\"\nformat = \"Bearer {{secret}}\"\ndestinations = [\"https://api.example.com\"]\nenv = \"TOKEN\"\n",
            dir.path().join("tok").display()
        );
        let s = secrets(&text, Some(&net)).unwrap();
        assert_eq!(s[0].value.expose(), "s3cr3t-value-123");
        assert_eq!(
            s[0].header.as_ref().unwrap().value.expose(),
            "Bearer s3cr3t-value-123"
        );
        assert!(!format!("{s:?}").contains("s3cr3t"));
    }

    #[test]
    fn refuses_secret_headers_outside_the_allowlist_or_without_network() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tok"), "0123456789abcdef").unwrap();
        let file = dir.path().join("tok").display().to_string();
        let net = network("allow = [\"https://api.example.com\"]")
            .unwrap()
            .unwrap();
        let text = format!(
            "[t]\nfrom-file = \"{file}\"\nheader = \"X-Key\"\ndestinations = [\"https://evil.org\"]\n"
        );
        let e = secrets(&text, Some(&net)).unwrap_err().to_string();
        assert!(
            e.contains("destinations[0]") && e.contains("not within"),
            "{e}"
        );
        let e = secrets(&text, None).unwrap_err().to_string();
        assert!(e.contains("needs network access"), "{e}");
        let text = format!(
            "[t]\nfrom-file = \"{file}\"\nheader = \"Host\"\ndestinations = [\"https://api.example.com\"]\n"
        );
        assert!(
            secrets(&text, Some(&net))
                .unwrap_err()
                .to_string()
                .contains("controlled by the host")
        );
        let text = format!("[t]\nfrom-file = \"{file}\"\n");
        assert!(
            secrets(&text, None)
                .unwrap_err()
                .to_string()
                .contains("as `env")
        );
        std::fs::write(dir.path().join("tok"), "tiny7").unwrap();
        let text = format!("[t]\nfrom-file = \"{file}\"\nenv = \"T\"\n");
        let e = secrets(&text, None).unwrap_err().to_string();
        assert!(e.contains("5 bytes long") && !e.contains("tiny7"), "{e}");
    }
}
