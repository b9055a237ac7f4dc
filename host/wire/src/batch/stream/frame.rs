//! Cuts a byte stream into JSON events, incrementally: Server-Sent Events (`event:` and `data:`
//! lines, a blank line ends an event, `:` starts a comment, `data: [DONE]` ends the stream) or
//! NDJSON (one JSON event per line). Bytes may come in any chunks: a chunk may end inside a line or
//! inside a UTF-8 character, since nothing is decoded before its line is whole.
//!
//! Memory is bounded: a line, or the data of one SSE event, longer than the limit is not kept; it
//! is skipped to its end and reported once as [`FrameError::TooLarge`]. Nothing here knows the
//! LLM APIs; the events go to the `Assembler`.

use serde_json::Value;

use toolhost_call::text;

/// How the events of a stream are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-Sent Events (`text/event-stream`), as the LLM APIs send them.
    Sse,
    /// Newline-delimited JSON (`application/x-ndjson`): one event per line.
    Ndjson,
}

/// One event cut from the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A JSON event.
    Event(Value),
    /// `[DONE]`: the sender says the stream is over (OpenAI Chat Completions).
    Done,
}

/// An event of the stream that could not be read. The stream goes on after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A line or an event longer than the limit; it was skipped.
    #[error("an event of the stream is longer than {max} bytes")]
    TooLarge {
        /// The limit, in bytes.
        max: usize,
        /// The SSE event's name (its `event:` line), when it had one.
        event: Option<String>,
    },
    /// An event whose data is not JSON.
    #[error("an event of the stream is not JSON: {reason}")]
    NotJson {
        /// What the JSON parser said.
        reason: String,
    },
}

impl FrameError {
    /// The SSE name of the event that could not be read, when it is known.
    pub fn event(&self) -> Option<&str> {
        match self {
            Self::TooLarge { event, .. } => event.as_deref(),
            Self::NotJson { .. } => None,
        }
    }
}

/// The longest SSE event name kept; longer names are cut (they are only ever compared).
const MAX_NAME: usize = 128;

/// An incremental decoder of SSE or NDJSON into [`Frame`]s.
#[derive(Debug)]
pub struct Framer {
    /// Fixed by the caller, or by the first line that is not blank.
    framing: Option<Framing>,
    max: usize,
    /// The line being received, without its end.
    line: Vec<u8>,
    /// The line being received is over the limit: its bytes are dropped until it ends.
    line_too_long: bool,
    /// The last byte was a `\r`: a `\n` right after it ends no second line.
    after_cr: bool,
    /// No line has ended yet (a byte order mark is dropped from the first).
    first_line: bool,
    /// The SSE event being received: its `event:` name and `data:` lines.
    name: Option<String>,
    data: Vec<u8>,
    /// The SSE event being received is over the limit.
    event_too_large: bool,
}

impl Framer {
    /// A decoder that takes the framing from the first line that is not blank: NDJSON when it
    /// starts with `{` or `[`, SSE otherwise.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            framing: None,
            max: max_event_bytes.max(1),
            line: Vec::new(),
            line_too_long: false,
            after_cr: false,
            first_line: true,
            name: None,
            data: Vec::new(),
            event_too_large: false,
        }
    }

    /// A decoder of the given framing.
    pub fn with_framing(framing: Framing, max_event_bytes: usize) -> Self {
        Self {
            framing: Some(framing),
            ..Self::new(max_event_bytes)
        }
    }

    /// The framing, once known.
    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }

    /// Takes the next bytes of the stream; returns the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<Frame, FrameError>> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    self.take(&rest[..end]);
                    self.after_cr = rest[end] == b'\r';
                    rest = &rest[end + 1..];
                    self.end_line(&mut out);
                }
                None => {
                    self.take(rest);
                    rest = &[];
                }
            }
        }
        out
    }

    /// Ends the stream: the last line and event, if they were not ended. An unended event is kept
    /// only if its data is whole JSON; otherwise it is where the stream was cut, and is dropped.
    pub fn finish(&mut self) -> Vec<Result<Frame, FrameError>> {
        let mut out = Vec::new();
        if !self.line.is_empty() || self.line_too_long {
            self.end_line(&mut out);
        }
        if self.framing == Some(Framing::Sse) && (!self.data.is_empty() || self.event_too_large) {
            self.dispatch(&mut out);
        }
        // Everything here is the one unended event.
        out.retain(|f| !matches!(f, Err(FrameError::NotJson { .. })));
        out
    }

    /// Keeps `bytes` of the current line, unless the line is over the limit.
    fn take(&mut self, bytes: &[u8]) {
        if self.framing.is_none() {
            // The first byte that is not blank (nor part of a byte order mark) tells.
            let first = bytes
                .iter()
                .find(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF));
            self.framing = first.map(|b| match b {
                b'{' | b'[' => Framing::Ndjson,
                _ => Framing::Sse,
            });
        }
        if self.line_too_long {
            return;
        }
        if self.line.len() + bytes.len() > self.max {
            self.line_too_long = true;
            self.line = Vec::new();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn end_line(&mut self, out: &mut Vec<Result<Frame, FrameError>>) {
        let mut line = std::mem::take(&mut self.line);
        let too_long = std::mem::replace(&mut self.line_too_long, false);
        if std::mem::replace(&mut self.first_line, false) && line.starts_with(b"\xEF\xBB\xBF") {
            line.drain(..3);
        }
        let Some(framing) = self.framing else {
            // Blank lines before the first event.
            return;
        };
        match framing {
            Framing::Ndjson if too_long => out.push(Err(FrameError::TooLarge {
                max: self.max,
                event: None,
            })),
            Framing::Ndjson => {
                if let Some(frame) = decode(&line) {
                    out.push(frame);
                }
            }
            Framing::Sse => self.sse_line(&line, too_long, out),
        }
    }

    /// One SSE line (<https://html.spec.whatwg.org/multipage/server-sent-events.html>).
    fn sse_line(&mut self, line: &[u8], too_long: bool, out: &mut Vec<Result<Frame, FrameError>>) {
        if too_long {
            self.event_too_large = true;
            self.data = Vec::new();
            return;
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => {
                let name = String::from_utf8_lossy(value);
                self.name = Some(text::prefix(&name, MAX_NAME).to_string());
            }
            b"data" if !self.event_too_large => {
                if self.data.len() + value.len() + 1 > self.max {
                    self.event_too_large = true;
                    self.data = Vec::new();
                } else {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
            }
            // `id`, `retry`, and fields SSE does not know, are ignored.
            _ => {}
        }
    }

    /// Ends the SSE event being received.
    fn dispatch(&mut self, out: &mut Vec<Result<Frame, FrameError>>) {
        let data = std::mem::take(&mut self.data);
        let name = self.name.take();
        if std::mem::replace(&mut self.event_too_large, false) {
            out.push(Err(FrameError::TooLarge {
                max: self.max,
                event: name,
            }));
            return;
        }
        if let Some(frame) = decode(&data) {
            out.push(frame);
        }
    }
}

/// The frame one line or event's data holds: none when it is blank.
fn decode(data: &[u8]) -> Option<Result<Frame, FrameError>> {
    let data = data.trim_ascii();
    if data.is_empty() {
        return None;
    }
    if data == b"[DONE]" {
        return Some(Ok(Frame::Done));
    }
    Some(
        serde_json::from_slice(data)
            .map(Frame::Event)
            .map_err(|e| FrameError::NotJson {
                reason: e.to_string(),
            }),
    )
}

#[cfg(test)]
#[path = "frame/tests.rs"]
mod tests;
