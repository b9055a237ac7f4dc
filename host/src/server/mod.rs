//! The daemon: MCP over stdio and Streamable HTTP (with `/health` and `/metrics`), built on `rmcp`.
//!
//! This is the only place where errors reach the wire. Everything below answers with typed outcomes
//! ([`crate::exec::CallOutcome`]); this module decides what a client sees: `isError` results for
//! failures a model can act on, JSON-RPC errors only for requests that cannot be routed (an unknown
//! tool, a forged `requestState`), HTTP status codes for what fails before MCP (Host, Origin, token:
//! the `auth` module answers for the token and the caller behind it).
//!
//! Both protocol eras are served at once: clients that `initialize` (up to 2025-11-25) get sessions,
//! clients that send per-request `_meta` (2026-07-28) are served statelessly. Approvals use
//! elicitation requests in the first era and the input-required round trip in the second. Long
//! calls may run as tasks in both eras (`tasks`, with `legacy` for 2025-11-25's wire).
//!
//! It must not reach past [`crate::exec`]: no gate decisions, no sandbox, no audit writes of its own.

mod approval;
mod auth;
mod batch;
mod body;
mod compat;
mod deferred;
mod guard;
mod handler;
mod http;
mod legacy;
mod listener;
mod listing;
mod outcome;
mod owners;
mod progress;
mod reply;
mod routing;
mod run;
mod shared;
mod spans;
mod stdio;
mod tasks;

pub use self::batch::BATCH_ID_HEADER;
pub use self::handler::McpServer;
pub use self::run::{ServeError, ServeOptions, serve};
pub use self::shared::Server;
