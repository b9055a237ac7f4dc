//! toolhost's policy: everything that decides what a call may do, as pure code.
//!
//! Tool specs and hints ([`tool`]), input validation, coercion and permission rules ([`gate`]),
//! grants and limits ([`grants`]), the `Host` values the HTTP server answers ([`hosts`]), network destinations, address classes and secret redaction
//! ([`network`]), plugin sources and content digests ([`source`]), the OCI artifact and signature
//! manifests ([`oci`]), the lockfile ([`lock`]), which signatures are trusted ([`trust`]), the
//! operator's configuration ([`config`]), who calls and what their profile gives them
//! ([`caller`]), long calls as tasks ([`task`]), per-tool circuit breakers and failure statistics ([`breaker`]), the LLM batch wire formats ([`batch`]) and the types every call shares ([`call`]).
//!
//! No wasmtime, no MCP, no async runtime: the host crate (`toolhost`) runs what this crate decides,
//! and the compiler keeps the arrows pointing that way. The one thing read from outside is the
//! filesystem: the config file, secret files, and [`gate::Mounts`] following a path's links.

#![forbid(unsafe_code)]

pub mod batch;
pub mod breaker;
pub mod call;
pub mod caller;
pub mod config;
pub mod gate;
pub mod grants;
pub mod hosts;
pub mod lock;
pub mod network;
pub mod oci;
mod pointer;
pub mod quota;
pub mod source;
pub mod task;
pub mod text;
pub mod tool;
pub mod trust;
pub mod wit;
