//! `[server]` and `[engine]`: the daemon's transports, concurrency and instance pool, checked against
//! each other and against the plugins' limits. Plain values out; nothing here starts anything.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use toolhost_gate::gate::ToolPattern;

use super::PoolOptions;
use super::{ConfigError, Overrides, PluginPolicy, RawEngine, RawServer, ServerConfig, invalid};
use crate::hosts::AllowedHost;

/// Instances for plugin loads (each runs `describe`) on top of the calls the server runs at once.
pub(super) const LOAD_INSTANCES: u32 = 16;

pub(super) fn resolve_pool(
    raw: &RawEngine,
    server: &ServerConfig,
    default: &PluginPolicy,
    plugins: &BTreeMap<String, PluginPolicy>,
) -> Result<Option<PoolOptions>, ConfigError> {
    if raw.pooling == Some(false) {
        return Ok(None);
    }
    let instances = match raw.instances {
        Some(n) if !(1..=10_000).contains(&n) => {
            return Err(invalid("engine.instances", "must be between 1 and 10000"));
        }
        Some(n) => n,
        None => u32::try_from(server.max_concurrent_calls)
            .unwrap_or(u32::MAX)
            .saturating_add(LOAD_INSTANCES),
    };
    // Every plugin's memory limit must fit in a slot, or a guest would fail to grow before its limit.
    let (largest, owner) = plugins
        .iter()
        .map(|(name, p)| {
            (
                p.limits.memory_bytes,
                format!("plugins.{name}.limits.memory-mb"),
            )
        })
        .fold(
            (default.limits.memory_bytes, "limits.memory-mb".to_string()),
            |a, b| {
                if b.0 > a.0 { b } else { a }
            },
        );
    let memory_bytes = match raw.memory_mb {
        Some(mb) if !(1..=4096).contains(&mb) => {
            return Err(invalid("engine.memory-mb", "must be between 1 and 4096"));
        }
        Some(mb) if (mb as usize) << 20 < largest => {
            return Err(invalid(
                "engine.memory-mb",
                format!(
                    "{mb} is less than `{owner}` ({} MiB); raise it or lower that limit",
                    largest >> 20
                ),
            ));
        }
        Some(mb) => (mb as usize) << 20,
        None => largest,
    };
    Ok(Some(PoolOptions {
        instances,
        memory_bytes,
    }))
}

/// Check `[server]`; `oauth` says whether `[auth]` guards HTTP (enough, like a token, to serve
/// beyond loopback).
///
/// [`listen_address`] reads the address.
pub(super) fn resolve_server(
    raw: &RawServer,
    o: &Overrides,
    oauth: bool,
) -> Result<ServerConfig, ConfigError> {
    let http_text = o
        .http
        .clone()
        .or_else(|| raw.http.clone())
        .unwrap_or_else(|| "127.0.0.1:8750".into());
    let http = listen_address(&http_text).map_err(|e| invalid("server.http", e))?;
    let token = match &raw.token_env {
        Some(var) => Some(std::env::var(var).map_err(|_| {
            invalid(
                "server.token-env",
                format!("{var} is not set in the daemon's environment"),
            )
        })?),
        None => None,
    };
    if token.is_none() && !oauth && !http.ip().is_loopback() {
        return Err(invalid(
            "server.http",
            format!(
                "{http} is reachable beyond this machine; configure [auth] (OAuth tokens) or set \
                 `server.token-env` to require a bearer token"
            ),
        ));
    }
    let max_concurrent_calls = raw.max_concurrent_calls.unwrap_or(64);
    if max_concurrent_calls == 0 {
        return Err(invalid(
            "server.max-concurrent-calls",
            "must be greater than 0",
        ));
    }
    let max_connections = raw.max_connections.unwrap_or(4096);
    if max_connections == 0 {
        return Err(invalid("server.max-connections", "must be greater than 0"));
    }
    if raw.read_timeout_ms == Some(0) {
        return Err(invalid("server.read-timeout-ms", "must be greater than 0"));
    }
    if raw.approval_timeout_ms == Some(0) {
        return Err(invalid(
            "server.approval-timeout-ms",
            "must be greater than 0",
        ));
    }
    Ok(ServerConfig {
        http,
        allowed_origins: raw.allowed_origins.clone(),
        allowed_hosts: allowed_hosts(&raw.allowed_hosts)?,
        short_list: raw
            .short_list
            .iter()
            .enumerate()
            .map(|(i, p)| {
                ToolPattern::parse(p)
                    .map_err(|e| invalid(format!("server.short-list[{i}]"), e.to_string()))
            })
            .collect::<Result<_, _>>()?,
        token,
        max_body_bytes: (raw.max_body_kb.unwrap_or(4096) as usize) << 10,
        request_timeout: Duration::from_millis(raw.request_timeout_ms.unwrap_or(300_000)),
        approval_timeout: Duration::from_millis(raw.approval_timeout_ms.unwrap_or(120_000)),
        read_timeout: Duration::from_millis(raw.read_timeout_ms.unwrap_or(30_000)),
        max_connections,
        max_concurrent_calls,
        shutdown_grace: Duration::from_millis(raw.shutdown_grace_ms.unwrap_or(5_000)),
        state_key: super::state::resolve_state_key(raw.state_key_env.as_deref())?,
    })
}

/// `server.allowed-hosts`, each entry a name or a range; a bad one is refused by its index.
fn allowed_hosts(raw: &[String]) -> Result<Vec<AllowedHost>, ConfigError> {
    raw.iter()
        .enumerate()
        .map(|(i, entry)| {
            AllowedHost::parse(entry).map_err(|e| {
                invalid(
                    format!("server.allowed-hosts[{i}]"),
                    format!("{entry:?}: {e}"),
                )
            })
        })
        .collect()
}

/// The address `--http` or `server.http` names: `IP:PORT` (`[::1]:PORT` for IPv6), or for the
/// loopback interface a bare `PORT`, `:PORT` or `localhost:PORT`. No name is looked up: the
/// daemon binds exactly what was written.
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    let port = text
        .strip_prefix("localhost:")
        .or_else(|| text.strip_prefix(':'))
        .unwrap_or(text);
    if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        return match port.parse::<u16>() {
            Ok(port) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
            Err(_) => Err(format!("{text:?}: a port is a number from 0 to 65535")),
        };
    }
    text.parse().map_err(|_| {
        format!(
            "{text:?} is not an address to listen on: write IP:PORT (127.0.0.1:8750, [::1]:8750, \
             0.0.0.0:8750), or PORT or localhost:PORT for this machine alone"
        )
    })
}

#[cfg(test)]
mod tests;
