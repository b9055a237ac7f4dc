//! The operator's configuration: `toolhost.toml` and command-line overrides turned into a validated,
//! typed [`config::Config`] ([`config`]), and the `Host` values the HTTP server answers ([`hosts`]).
//!
//! Pure: no wasmtime, no MCP, no async runtime. The one thing read from outside is the filesystem:
//! the config file and the secret files it names.

#![forbid(unsafe_code)]

pub mod config;
pub mod hosts;
