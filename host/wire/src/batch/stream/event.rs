//! What reading a stream gives: events about its calls, the limits it is read under, and the one
//! error that refuses a stream whole. Types only; the reading is in `assemble`.

use serde::Serialize;
use serde_json::Value;

use super::super::calls::{Batch, MAX_CALLS, ParsedCall};
use super::super::format::Format;
use super::frame::FrameError;
use super::{MAX_ARGUMENT_BYTES, MAX_BUFFERED_BYTES, MAX_EVENT_BYTES};

/// What a stream says about its calls, in the order it says it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A call whose arguments are still arriving: what is known of it so far.
    Pending(Pending),
    /// A call is complete: run it, or answer its error. `index` is its position among the calls
    /// of the stream, from 0, in the order they started; every call gets exactly one `Ready`.
    Ready {
        /// The call's position in the batch.
        index: usize,
        /// The call, or why it cannot run.
        call: ParsedCall,
    },
    /// The stream is over; nothing follows. Every call started has had its `Ready` before.
    Ended(Ending),
}

/// A call still arriving, as far as it is known. Sent when the call starts and when more of its
/// input reads, not for every fragment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pending {
    /// The call's position in the batch (as in [`StreamEvent::Ready`]).
    pub index: usize,
    /// The id the model gave it, once known.
    pub id: Option<String>,
    /// The tool it names, once known.
    pub name: Option<String>,
    /// The longest start of its arguments that reads as JSON once closed (`{"text": "hel` shows
    /// as `{"text": "hel"}`); none while nothing reads, or past [`MAX_PENDING_INPUT_BYTES`].
    ///
    /// [`MAX_PENDING_INPUT_BYTES`]: super::MAX_PENDING_INPUT_BYTES
    pub input: Option<Value>,
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    /// The model's stream said it is over (`message_stop`, `[DONE]`, `response.completed` or
    /// `response.incomplete`), with the reason it gave (`tool_use`, `tool_calls`, `completed`,
    /// `max_tokens`, ...).
    Stopped {
        /// The stop reason, finish reason or response status, when one was given.
        reason: Option<String>,
    },
    /// The model's stream reported an error (an `error` event, `response.failed`).
    Failed {
        /// What it said.
        message: String,
    },
    /// The bytes ended before the model's stream said it was over.
    Cut,
    /// The stream started more calls than [`Limits::max_calls`]; it was not read further, and the
    /// calls beyond the limit have no result.
    TooManyCalls {
        /// The limit.
        max: usize,
    },
}

/// The bounds a stream is read within. The input is the model's, relayed by a client: every
/// bound is there so that no stream can make the host hold more than these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most calls one stream may make. Defaults to [`MAX_CALLS`], as for a whole batch.
    pub max_calls: usize,
    /// The most bytes of arguments one call may have. Defaults to [`MAX_ARGUMENT_BYTES`].
    pub max_argument_bytes: usize,
    /// The most bytes of arguments held at once for calls still arriving. Defaults to
    /// [`MAX_BUFFERED_BYTES`].
    pub max_buffered_bytes: usize,
    /// The longest line or SSE event read. Defaults to [`MAX_EVENT_BYTES`].
    pub max_event_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_calls: MAX_CALLS,
            max_argument_bytes: MAX_ARGUMENT_BYTES,
            max_buffered_bytes: MAX_BUFFERED_BYTES,
            max_event_bytes: MAX_EVENT_BYTES,
        }
    }
}

/// Why a stream is refused whole. Each happens at its first event (or at its end, when it had
/// none), so no call has started when it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The stream held no event at all.
    #[error("the stream holds no event: no `data:` line (SSE) or JSON line (NDJSON)")]
    Empty,
    /// The first event could not be read.
    #[error("the stream is not an SSE or NDJSON stream of JSON events: {0}")]
    NotAStream(FrameError),
    /// The first event is of none of the formats.
    #[error(
        "cannot tell which API the stream comes from: its first event is not an Anthropic \
         Messages, OpenAI Chat Completions or OpenAI Responses streaming event"
    )]
    Undetected,
    /// The first event is not of the format named.
    #[error(
        "not an {} stream: its first event is {}",
        .format.title(),
        .found.map_or("of no known format", |f| f.title())
    )]
    Shape {
        /// The format asked for.
        format: Format,
        /// The format the event is of, if any.
        found: Option<Format>,
    },
    /// The model's stream reported an error before its first event of any format.
    #[error("the model's stream failed before it began: {message}")]
    Failed {
        /// What it said.
        message: String,
    },
}

/// The calls of a stream as a [`Batch`], in index order, for writing the answer once every
/// result is known: give it the `Ready` events' indices and calls, in any order.
pub fn batch(format: Format, ready: impl IntoIterator<Item = (usize, ParsedCall)>) -> Batch {
    let mut calls: Vec<(usize, ParsedCall)> = ready.into_iter().collect();
    calls.sort_by_key(|(index, _)| *index);
    Batch {
        format,
        calls: calls.into_iter().map(|(_, call)| call).collect(),
    }
}
