//! The MCP front end: the [`McpServer`] handler (`tools/list`, `tools/call`, progress,
//! cancellation), approvals by elicitation and by `requestState`, tasks in both eras, the
//! 2025-11-25 wire (`legacy`), for `/mcp` HTTP session ownership, revision rules and the calls
//! each session runs, and the stdio transport's streams and end-of-input; what works around rmcp
//! is in `shims`, each module saying what. Of the server it imports
//! only [`super::shared`]: it knows no batch API and no HTTP plumbing (the app mounts it behind the
//! guard).

mod approval;
mod call;
mod handler;
mod listing;
mod outcome;
pub(crate) mod owners;
mod progress;
mod routing;
mod shims;
mod spans;
mod task_view;
mod tasks;

pub(crate) use self::approval::RequestStates;
pub use self::handler::McpServer;
pub(crate) use self::shims::lines::{Lines, MAX_LINE};
pub(crate) use self::shims::{compat, legacy, sessions, stdin, stdio};
