//! The daemon: MCP over stdio and Streamable HTTP (with `/health`, `/ready` and `/metrics`), built
//! on `rmcp`, and the batch HTTP API.
//!
//! This is the only place where errors reach the wire. Everything below answers with typed outcomes
//! ([`crate::exec::CallOutcome`]); this module decides what a client sees: `isError` results for
//! failures a model can act on, JSON-RPC errors only for requests that cannot be routed (an unknown
//! tool, a forged `requestState`), HTTP status codes for what fails before MCP (Host, Origin, token:
//! the `http::auth` module answers for the token and the caller behind it).
//!
//! Both protocol eras are served at once: clients that `initialize` (up to 2025-11-25) get sessions,
//! clients that send per-request `_meta` (2026-07-28) are served statelessly. Approvals use
//! elicitation requests in the first era and the input-required round trip in the second. Long
//! calls may run as tasks in both eras (`mcp::tasks`, with `mcp::legacy` for 2025-11-25's wire).
//!
//! Split by front end over one shared part, dependencies pointing down:
//! - `run` (`serve`: transports, signals, shutdown) and `daemon` ([`Server`]) assemble the rest;
//!   `app` builds the HTTP app (mounts `/mcp`, `/v1/`, and the `ops` routes `/health`, `/ready`,
//!   `/metrics`) and puts routes behind the guard.
//! - `mcp`: the MCP front end (handler, approvals, tasks, the 2025-11-25 wire); knows no batch.
//! - `batch`: the batch API under `/v1/`; knows no MCP.
//! - `console`: the operator's web console and its API under `/console/`; knows no MCP, no batch.
//! - `http`: HTTP plumbing (guard, auth, body deadlines, listener, error replies); knows no MCP,
//!   no batch.
//! - `shared`: the state they all share; imports none of them.
//!
//! It must not reach past [`crate::exec`]: no gate decisions, no sandbox, no audit writes of its own.

mod app;
mod batch;
mod console;
mod daemon;
mod http;
mod mcp;
mod ops;
mod run;
mod shared;

pub use self::batch::BATCH_ID_HEADER;
pub use self::daemon::Server;
pub use self::mcp::McpServer;
pub use self::run::{ServeError, ServeOptions, serve};
