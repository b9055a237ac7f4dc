//! What a call may do: input validation, coercion and permission rules ([`gate`]), what a plugin
//! is granted and how far it may go ([`grants`]), network destinations, address classes and secret
//! redaction ([`network`]), who calls and what their profile gives them ([`caller`]), fair shares
//! ([`quota`]), per-tool circuit breakers and failure statistics ([`breaker`]), and long calls as
//! tasks ([`task`]).
//!
//! Pure: no wasmtime, no MCP, no async runtime. The host runs what this crate decides; the one thing
//! read from outside is the filesystem, when [`gate::Mounts`] follows a path's links.

#![forbid(unsafe_code)]

pub mod breaker;
pub mod caller;
pub mod gate;
pub mod grants;
pub mod network;
pub mod quota;
pub mod task;
