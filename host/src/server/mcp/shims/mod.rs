//! Where rmcp 3.9 (and the protocol's older revisions) need a hand: each module wraps rmcp's
//! transport or service at one point and says what it works around. Remove one when rmcp does the
//! thing itself; nothing else in the front end depends on how they do it.
//!
//! | module | works around |
//! |---|---|
//! | [`compat`] | rmcp speaks one Streamable HTTP: SSE priming events and `DELETE` differ by revision |
//! | [`legacy`] | rmcp knows only the 2026 tasks extension: 2025-11-25 task requests are renamed in and their answers amended out |
//! | [`lines`] | rmcp parses each stdio line as an untagged enum of every request: a `tools/call` is read directly |
//! | [`sessions`] | rmcp drains a deleted HTTP session's handlers for up to 5 s before cancelling them: its calls stop at once |
//! | [`stdin`] | rmcp reads a stdin that is not a pipe through tokio's blocking pool, which holds the exit: such a stdin gets a thread of its own |
//! | [`stdio`] | at stdin's end rmcp drains every handler, subscriptions that never end included: the calls already read finish and are answered, then the session's subscriptions end and it closes at once |

pub(crate) mod compat;
pub(crate) mod legacy;
pub(crate) mod lines;
pub(crate) mod sessions;
pub(crate) mod stdin;
pub(crate) mod stdio;
