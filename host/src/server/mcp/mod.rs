//! The MCP front end: the [`McpServer`] handler (`tools/list`, `tools/call`, progress,
//! cancellation), approvals by elicitation and by `requestState`, tasks in both eras, the
//! 2025-11-25 wire (`legacy`), for `/mcp` HTTP session ownership, revision rules and the calls
//! each session runs, and the stdio transport's streams and end-of-input. Of the server it imports
//! only [`super::shared`]: it knows no batch API and no HTTP plumbing (the app mounts it behind the
//! guard).

mod approval;
mod call;
pub(crate) mod compat;
mod handler;
pub(crate) mod legacy;
mod lines;
mod listing;
mod outcome;
pub(crate) mod owners;
mod progress;
mod routing;
pub(crate) mod sessions;
mod spans;
pub(crate) mod stdin;
pub(crate) mod stdio;
mod task_view;
mod tasks;

pub(crate) use self::approval::RequestStates;
pub use self::handler::McpServer;
pub(crate) use self::lines::{Lines, MAX_LINE};
