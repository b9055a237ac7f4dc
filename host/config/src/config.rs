//! `toolhost.toml` and command-line overrides, turned into a validated, typed [`Config`]; this facade
//! owns [`ConfigError`] and re-exports the stages.
//!
//! Two stages, as in ripgrep: serde reads the raw file ([`RawConfig`], in `raw`), the flags
//! ([`Overrides`], in `flags`) are applied to it, then [`Config::from_raw`] (in `resolved`) checks
//! every value (directories exist, names are sane) and resolves relative paths against the config
//! file's folder. Nothing here touches wasmtime; the sandbox gets plain
//! [`Grants`](toolhost_gate::grants::Grants) and [`Limits`](toolhost_gate::grants::Limits).

mod auth;
mod breaker;
mod console;
pub mod edit;
mod flags;
mod grants;
mod host_state;
mod limits;
mod load;
mod network;
mod options;
mod raw;
mod reload;
mod resolved;
mod server;
mod sources;
mod state;
mod tools;

pub use self::auth::{ALGORITHMS, AuthConfig, Introspection, RawAuth, RawIntrospection};
pub use self::breaker::RawBreaker;
pub use self::console::{ApprovalRoute, ConsoleOptions};
pub use self::flags::Overrides;
pub use self::network::{RawNetwork, RawSecret};
pub use self::options::{AuditOptions, EngineOptions, OnFailure, PoolOptions, TelemetryOptions};
pub use self::raw::{
    RawAudit, RawCache, RawConfig, RawDir, RawEngine, RawLimits, RawPlugin, RawServer,
};
pub use self::reload::{Changes, Rebind};
pub use self::resolved::{Config, PluginPolicy, ServerConfig};
pub use self::sources::{PluginSource, RawRegistry, RawTrust, RegistrySettings, Sources};
pub use self::state::{RawState, RawTasks, StateKey, StateStore, TaskOptions};
pub use self::tools::{RawToolOverride, ToolOverride};

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or mistyped keys.
    #[error("invalid config file {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value is out of range or refers to something that does not exist.
    #[error("invalid setting `{key}`: {message}")]
    Invalid {
        /// The setting, e.g. `plugins.fs.dirs[0].host`.
        key: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}
