//! `[state]` and `[tasks]`: where what must outlive a request is kept (task records and results,
//! used approval states), and how long. Plain values out; the host opens the store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{ConfigError, invalid};

/// `[state]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawState {
    /// A `postgres://` URL, for several daemons sharing one database.
    pub url: Option<String>,
    /// The environment variable that holds that URL (it usually carries a password).
    pub url_env: Option<String>,
    /// The embedded SQLite file when no URL is given; default `state.db` beside the audit log.
    pub path: Option<PathBuf>,
    /// PEM certificates of the CA that signed the PostgreSQL server's certificate, when it is not
    /// a public one (the webpki roots are always trusted).
    pub ca_file: Option<PathBuf>,
}

/// `[tasks]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawTasks {
    /// How long a task and its result are kept after it was created, in seconds. Default 3600.
    pub ttl_s: Option<u64>,
    /// How often clients are asked to poll, in ms. Default 1000.
    pub poll_interval_ms: Option<u64>,
    /// How long a daemon may miss its heartbeat before its unfinished tasks are failed, in ms.
    /// Default 15000.
    pub lease_ms: Option<u64>,
}

/// Where durable state lives.
#[derive(Clone, PartialEq, Eq)]
pub enum StateStore {
    /// A SQLite file, for one daemon.
    Embedded(PathBuf),
    /// A PostgreSQL database, shared by every daemon with the same config.
    Postgres {
        /// `postgres://…`; TLS as its `sslmode` says (`prefer` by default, `require` to insist).
        url: String,
        /// Extra trusted CA certificates (PEM).
        ca_file: Option<PathBuf>,
    },
}

impl std::fmt::Debug for StateStore {
    // The URL may carry a password: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Embedded(p) => f.debug_tuple("Embedded").field(p).finish(),
            Self::Postgres { ca_file, .. } => f
                .debug_struct("Postgres")
                .field("ca_file", ca_file)
                .finish_non_exhaustive(),
        }
    }
}

/// How tasks are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOptions {
    /// From creation until the record and its result are deleted.
    pub ttl: Duration,
    /// What clients are told to wait between polls.
    pub poll_interval: Duration,
    /// A daemon silent this long is taken for dead, and its unfinished tasks fail.
    pub lease: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(15),
        }
    }
}

/// The key that seals approval states: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKey(pub Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateKey({} bytes)", self.0.len())
    }
}

/// The longest `tasks.ttl-s`: a week.
const MAX_TTL_S: u64 = 7 * 24 * 3600;

/// Resolve `[state]`; `audit_dir` is where the audit log lives (the embedded file goes beside it).
pub(super) fn resolve_store(
    raw: &RawState,
    base: &Path,
    audit_dir: &Path,
) -> Result<StateStore, ConfigError> {
    let url = match (&raw.url, &raw.url_env) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "state.url-env",
                "give either state.url or state.url-env, not both",
            ));
        }
        (Some(url), None) => Some((url.clone(), "state.url")),
        (None, Some(var)) => Some((
            std::env::var(var).map_err(|_| {
                invalid(
                    "state.url-env",
                    format!("{var} is not set in the daemon's environment"),
                )
            })?,
            "state.url-env",
        )),
        (None, None) => None,
    };
    match url {
        Some((url, key)) => {
            if raw.path.is_some() {
                return Err(invalid(
                    "state.path",
                    "state.path is the embedded store's file; with a PostgreSQL URL it is unused",
                ));
            }
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                // Not echoed: a mistyped URL may still hold a password.
                return Err(invalid(
                    key,
                    "must be a postgres:// or postgresql:// URL (absent: the embedded SQLite file)",
                ));
            }
            let ca_file = match &raw.ca_file {
                Some(p) => {
                    let path = base.join(p);
                    if !path.is_file() {
                        return Err(invalid(
                            "state.ca-file",
                            format!("{} is not a file", path.display()),
                        ));
                    }
                    Some(path)
                }
                None => None,
            };
            Ok(StateStore::Postgres { url, ca_file })
        }
        None if raw.ca_file.is_some() => Err(invalid(
            "state.ca-file",
            "a CA for the PostgreSQL server; without state.url or state.url-env there is none",
        )),
        None => Ok(StateStore::Embedded(match &raw.path {
            Some(p) => base.join(p),
            None => audit_dir.join("state.db"),
        })),
    }
}

/// Resolve `[tasks]`.
pub(super) fn resolve_tasks(raw: &RawTasks) -> Result<TaskOptions, ConfigError> {
    let d = TaskOptions::default();
    let ttl = match raw.ttl_s {
        Some(s) if !(1..=MAX_TTL_S).contains(&s) => {
            return Err(invalid(
                "tasks.ttl-s",
                format!("must be between 1 and {MAX_TTL_S} (a week)"),
            ));
        }
        Some(s) => Duration::from_secs(s),
        None => d.ttl,
    };
    let poll_interval = match raw.poll_interval_ms {
        Some(ms) if !(10..=60_000).contains(&ms) => {
            return Err(invalid(
                "tasks.poll-interval-ms",
                "must be between 10 and 60000",
            ));
        }
        Some(ms) => Duration::from_millis(ms),
        None => d.poll_interval,
    };
    let lease = match raw.lease_ms {
        Some(ms) if !(1_000..=600_000).contains(&ms) => {
            return Err(invalid("tasks.lease-ms", "must be between 1000 and 600000"));
        }
        Some(ms) => Duration::from_millis(ms),
        None => d.lease,
    };
    Ok(TaskOptions {
        ttl,
        poll_interval,
        lease,
    })
}

/// The key that seals 2026 approval `requestState`s, from `server.state-key-env`: the same on
/// every daemon, so that a state sealed by one opens on another. At least 32 bytes.
pub(super) fn resolve_state_key(var: Option<&str>) -> Result<Option<StateKey>, ConfigError> {
    let Some(var) = var else { return Ok(None) };
    let key = std::env::var(var).map_err(|_| {
        invalid(
            "server.state-key-env",
            format!("{var} is not set in the daemon's environment"),
        )
    })?;
    if key.len() < 32 {
        return Err(invalid(
            "server.state-key-env",
            format!(
                "{var} holds {} bytes; use at least 32 random bytes (e.g. `openssl rand -base64 32`)",
                key.len()
            ),
        ));
    }
    Ok(Some(StateKey(key.into_bytes())))
}

#[cfg(test)]
mod tests;
