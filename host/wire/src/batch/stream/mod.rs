//! Batches that arrive as the model writes them: the raw streaming response of the Anthropic
//! Messages, OpenAI Chat Completions or OpenAI Responses API in, each tool call out as soon as its
//! arguments are complete, so that it can start while the model is still writing the next one.
//!
//! Pure and incremental: bytes in any chunks go to a [`Decoder`] ([`Framer`] for SSE or NDJSON,
//! then [`Assembler`] for the API's events), which answers with [`StreamEvent`]s:
//! [`StreamEvent::Pending`] while a call's arguments arrive (what is known so far, for a UI),
//! [`StreamEvent::Ready`] when a call is complete (to run it, or to answer its [`CallError`]), and
//! [`StreamEvent::Ended`] when the model's stream says it is over. [`Schedule`] decides which
//! ready calls may start, with the rule [`partition`] applies to a whole batch. Running them is the
//! host's.
//!
//! When a call is complete:
//! - Anthropic: at its `content_block_stop`.
//! - OpenAI Responses: at its `response.function_call_arguments.done` (or `output_item.done`).
//! - OpenAI Chat Completions has no event that ends one call: a call is complete when a call with
//!   a later `index` starts, when the choice has a `finish_reason`, or at `data: [DONE]`. A
//!   fragment for a call already complete cannot change it (it may be running): it is ignored.
//!
//! What goes wrong is answered per call where a call can be told: a cut stream leaves its open
//! calls [`CallError::IncompleteArguments`]; arguments over [`Limits::max_argument_bytes`] are
//! [`CallError::ArgumentsTooLarge`]; an event that cannot be read while calls are open (not JSON,
//! too long, a delta that names no call) breaks those calls ([`CallError::BrokenStream`]), and the
//! calls already complete still run. A delta for a call that never started is a call without an id
//! ([`CallError::MissingId`]), as in a whole batch. Only a stream whose first event is of none of the
//! formats (or of another than the one named) is a [`StreamError`], before any call is made.
//!
//! [`CallError`]: super::CallError
//! [`CallError::IncompleteArguments`]: super::CallError::IncompleteArguments
//! [`CallError::ArgumentsTooLarge`]: super::CallError::ArgumentsTooLarge
//! [`CallError::BrokenStream`]: super::CallError::BrokenStream
//! [`CallError::MissingId`]: super::CallError::MissingId
//! [`partition`]: super::partition

mod anthropic;
mod assemble;
mod chat;
mod decode;
mod error_event;
mod event;
mod frame;
mod partial;
mod responses;
mod schedule;
mod table;

pub use self::assemble::Assembler;
pub use self::decode::Decoder;
pub use self::event::{Ending, Limits, Pending, StreamError, StreamEvent, batch};
pub use self::frame::{Frame, FrameError, Framer, Framing};
pub use self::schedule::Schedule;

/// The most bytes of arguments one streamed call may have (1 MiB).
pub const MAX_ARGUMENT_BYTES: usize = 1 << 20;

/// The most bytes of arguments held at once for calls still arriving (8 MiB).
pub const MAX_BUFFERED_BYTES: usize = 8 << 20;

/// The longest line or SSE event read (4 MiB): room for a Responses event that repeats a call's
/// whole arguments. Longer ones are skipped (see [`FrameError::TooLarge`]).
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// Arguments longer than this are not shown in [`Pending`] events (64 KiB): a UI needs the start
/// of a call, not a megabyte resent as it grows.
pub const MAX_PENDING_INPUT_BYTES: usize = 64 << 10;

#[cfg(test)]
mod tests;
