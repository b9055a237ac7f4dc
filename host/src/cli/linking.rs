//! `toolhost console-link`: a one-time sign-in link for the console of a serving daemon, minted
//! through its API with the operator's bearer token (`server.token-env`, read here), for a shared
//! daemon whose browsers have no identity provider to sign in with.

use std::io::Write as _;

use super::Failure;
use super::failure::usage;
use toolhost_config::config::Config;

/// The largest answer read from the daemon.
const MAX_ANSWER: usize = 16 << 10;

/// Ask the daemon at `url` (default: `server.http`) for a link; print it.
pub(super) async fn mint(config: &Config, url: Option<&str>) -> Result<u8, Failure> {
    let Some(token) = &config.server.token else {
        return Err(usage(
            "console-link needs the operator's bearer token: set the variable `server.token-env` \
             names, as the daemon has it",
        ));
    };
    let base = url.map_or_else(
        || {
            // A daemon bound to every address (0.0.0.0 in a container) is reached on loopback,
            // the address a port-forwarded browser uses too.
            let mut addr = config.server.http;
            if addr.ip().is_unspecified() {
                addr.set_ip(match addr {
                    std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            format!("http://{addr}")
        },
        |u| u.trim_end_matches('/').to_owned(),
    );
    let unreachable = |why: String| Failure::Link(format!("{base}: {why}"));
    // reqwest takes the process's default TLS provider (for an https:// daemon): ours, ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .post(format!("{base}/console/api/links"))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| unreachable(e.without_url().to_string()))?;
    let status = response.status();
    let body = toolhost::body::read(response, MAX_ANSWER)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(path) = answer["path"].as_str().filter(|_| status.is_success()) else {
        let why = answer["error"]["message"]
            .as_str()
            .or(answer["error"].as_str())
            .map_or_else(
                || format!("HTTP {status}"),
                |m| format!("HTTP {status}: {m}"),
            );
        return Err(unreachable(why));
    };
    writeln!(std::io::stdout().lock(), "{base}{path}")?;
    Ok(0)
}
