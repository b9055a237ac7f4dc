//! Bytes in, call events out: a [`Framer`] and an [`Assembler`] in one, for a caller that holds
//! the raw body of a streaming response (an HTTP request body, a file, a pipe).

use super::super::format::{Format, FormatChoice};
use super::assemble::Assembler;
use super::event::{Limits, StreamError, StreamEvent};
use super::frame::{Frame, FrameError, Framer, Framing};

/// Reads a stream's bytes, in chunks of any size, into [`StreamEvent`]s.
#[derive(Debug)]
pub struct Decoder {
    framer: Framer,
    assembler: Assembler,
}

impl Decoder {
    /// A decoder for the format chosen, within the default [`Limits`]; SSE or NDJSON is told from
    /// the first line.
    pub fn new(choice: FormatChoice) -> Self {
        Self::with_limits(choice, Limits::default())
    }

    /// A decoder for the format chosen, within `limits`; SSE or NDJSON is told from the first
    /// line.
    pub fn with_limits(choice: FormatChoice, limits: Limits) -> Self {
        Self {
            framer: Framer::new(limits.max_event_bytes),
            assembler: Assembler::with_limits(choice, limits),
        }
    }

    /// A decoder for the format chosen and the framing given (from a `Content-Type`, say).
    pub fn with_framing(choice: FormatChoice, framing: Framing, limits: Limits) -> Self {
        Self {
            framer: Framer::with_framing(framing, limits.max_event_bytes),
            assembler: Assembler::with_limits(choice, limits),
        }
    }

    /// The stream's format, once its first event has shown it.
    pub fn format(&self) -> Option<Format> {
        self.assembler.format()
    }

    /// Reads the next bytes of the stream; returns the events they complete, in order. After an
    /// error, every call returns it again.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<StreamEvent>, StreamError> {
        let frames = self.framer.push(bytes);
        self.assemble(frames)
    }

    /// Ends the stream: its last unended event, then the end of the bytes (see
    /// [`Assembler::finish`]).
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, StreamError> {
        let frames = self.framer.finish();
        let mut events = self.assemble(frames)?;
        events.extend(self.assembler.finish()?);
        Ok(events)
    }

    fn assemble(
        &mut self,
        frames: Vec<Result<Frame, FrameError>>,
    ) -> Result<Vec<StreamEvent>, StreamError> {
        let mut events = Vec::new();
        for frame in frames {
            events.extend(self.assembler.push(frame)?);
        }
        Ok(events)
    }
}
