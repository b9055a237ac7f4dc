//! toolhost hosts AI agent tools as sandboxed WebAssembly components.
//!
//! A call travels one pipeline ([`exec`]): the front end ([`server`], the CLI) parses it, [`gate`] validates
//! its input and applies the permission rules, [`sandbox`] runs it in a fresh wasmtime store with only the
//! capabilities its policy grants, [`exec`] shapes the result for a model, and [`audit`] records it.
//! [`registry`] loads plugins from a folder, [`config`] turns `toolhost.toml` into typed policy.
//!
//! Dependencies point down: server -> exec -> {registry, gate, sandbox, audit, stats}; only [`sandbox`]
//! knows wasmtime; [`gate`], [`audit`] and [`stats`] are pure.

pub mod audit;
pub mod batch;
pub mod exec;
pub mod host;
pub mod registry;
pub mod sandbox;
pub mod scaffold;
pub mod server;
pub mod stats;
