//! Turns a stream's events into calls: tells the format from the first event that shows one (or
//! checks the one named), then hands each event to that format's reader (`anthropic`, `chat`,
//! `responses`), which says what it does to the calls in the `Table`.
//!
//! Only the first event can refuse the stream ([`StreamError`]); after it, whatever goes wrong is
//! answered in the calls it touches, and the stream ends at the model's end event, at the end of
//! the bytes ([`Ending::Cut`]), or when it starts more calls than allowed.

use serde_json::Value;

use super::super::calls::type_of;
use super::super::format::{Format, FormatChoice};
use super::error_event::error_message;
use super::event::{Ending, Limits, StreamError, StreamEvent};
use super::frame::{Frame, FrameError};
use super::table::{Table, TooManyCalls};
use super::{anthropic, chat, responses};

/// Reads a stream's events into [`StreamEvent`]s, one event at a time.
#[derive(Debug)]
pub struct Assembler {
    choice: FormatChoice,
    limits: Limits,
    state: State,
}

#[derive(Debug)]
enum State {
    /// No event has shown the format yet.
    Waiting,
    /// Boxed: the table and reader are large, the other states small.
    Reading(Box<Reading>),
    Ended {
        format: Format,
    },
    Refused(StreamError),
}

/// The state of a stream being read.
#[derive(Debug)]
struct Reading {
    table: Table,
    reader: Reader,
}

/// A format's reader, with what it remembers between events.
#[derive(Debug)]
enum Reader {
    Anthropic(anthropic::Reader),
    Chat(chat::Reader),
    Responses(responses::Reader),
}

impl Reader {
    fn new(format: Format) -> Self {
        match format {
            Format::Anthropic => Self::Anthropic(anthropic::Reader::default()),
            Format::OpenAi => Self::Chat(chat::Reader::default()),
            Format::OpenAiResponses => Self::Responses(responses::Reader::default()),
        }
    }

    fn format(&self) -> Format {
        match self {
            Self::Anthropic(_) => Format::Anthropic,
            Self::Chat(_) => Format::OpenAi,
            Self::Responses(_) => Format::OpenAiResponses,
        }
    }

    fn event(&mut self, table: &mut Table, event: &Value) -> Result<Option<Ending>, TooManyCalls> {
        match self {
            Self::Anthropic(r) => r.event(table, event),
            Self::Chat(r) => r.event(table, event),
            Self::Responses(r) => r.event(table, event),
        }
    }

    fn done(&mut self, table: &mut Table) -> Ending {
        match self {
            Self::Anthropic(r) => r.done(),
            Self::Chat(r) => r.done(table),
            Self::Responses(r) => r.done(),
        }
    }

    /// The ending an event too large to read was, by its SSE name, if it was one.
    fn lost(&mut self, name: Option<&str>) -> Option<Ending> {
        match self {
            Self::Anthropic(r) => r.lost(name?),
            Self::Chat(_) => None,
            Self::Responses(_) => responses::lost(name?),
        }
    }
}

impl Assembler {
    /// An assembler for the format chosen, within the default [`Limits`].
    pub fn new(choice: FormatChoice) -> Self {
        Self::with_limits(choice, Limits::default())
    }

    /// An assembler for the format chosen, within `limits`.
    pub fn with_limits(choice: FormatChoice, limits: Limits) -> Self {
        Self {
            choice,
            limits,
            state: State::Waiting,
        }
    }

    /// The stream's format, once its first event has shown it.
    pub fn format(&self) -> Option<Format> {
        match &self.state {
            State::Reading(r) => Some(r.reader.format()),
            State::Ended { format } => Some(*format),
            State::Waiting | State::Refused(_) => None,
        }
    }

    /// Reads the next frame of the stream (an event, `[DONE]`, or one that could not be read).
    /// After an [`Ending`], frames are ignored; after an error, every call returns it again.
    pub fn push(
        &mut self,
        frame: Result<Frame, FrameError>,
    ) -> Result<Vec<StreamEvent>, StreamError> {
        if let State::Waiting = self.state {
            match frame {
                // `[DONE]`, or a keep-alive, before anything: nothing yet.
                Ok(Frame::Done) => return Ok(Vec::new()),
                Err(e) => return self.refuse(StreamError::NotAStream(e)),
                Ok(Frame::Event(ref event)) => match self.detect(event) {
                    Ok(None) => return Ok(Vec::new()),
                    Ok(Some(format)) => {
                        self.state = State::Reading(Box::new(Reading {
                            table: Table::new(self.limits, fields(format)),
                            reader: Reader::new(format),
                        }))
                    }
                    Err(e) => return self.refuse(e),
                },
            }
        }
        let State::Reading(reading) = &mut self.state else {
            return match &self.state {
                State::Refused(e) => Err(e.clone()),
                _ => Ok(Vec::new()),
            };
        };
        let Reading { table, reader } = &mut **reading;
        let ending = match frame {
            Ok(Frame::Event(event)) => match reader.event(table, &event) {
                Ok(ending) => ending,
                Err(TooManyCalls) => Some(Ending::TooManyCalls {
                    max: self.limits.max_calls,
                }),
            },
            Ok(Frame::Done) => Some(reader.done(table)),
            Err(e) => match reader.lost(e.event()) {
                Some(ending) => Some(ending),
                None => {
                    table.break_open(&e.to_string());
                    None
                }
            },
        };
        Ok(self.step(ending))
    }

    /// A JSON event, as [`Assembler::push`] reads it.
    pub fn push_event(&mut self, event: Value) -> Result<Vec<StreamEvent>, StreamError> {
        self.push(Ok(Frame::Event(event)))
    }

    /// Ends the stream: the bytes are over. Calls still open are cut ([`Ending::Cut`]) unless the
    /// model's stream had ended.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, StreamError> {
        match &self.state {
            State::Waiting => self.refuse(StreamError::Empty),
            State::Refused(e) => Err(e.clone()),
            State::Ended { .. } => Ok(Vec::new()),
            State::Reading(_) => Ok(self.step(Some(Ending::Cut))),
        }
    }

    /// The events the last step wrote, and its ending, if it ended the stream.
    fn step(&mut self, ending: Option<Ending>) -> Vec<StreamEvent> {
        let State::Reading(reading) = &mut self.state else {
            return Vec::new();
        };
        let Reading { table, reader } = &mut **reading;
        let Some(ending) = ending else {
            return table.take_events();
        };
        table.cut_open();
        let mut events = table.take_events();
        events.push(StreamEvent::Ended(ending));
        self.state = State::Ended {
            format: reader.format(),
        };
        events
    }

    fn refuse(&mut self, e: StreamError) -> Result<Vec<StreamEvent>, StreamError> {
        self.state = State::Refused(e.clone());
        Err(e)
    }

    /// The format `event` shows and the choice allows; none for an event of every format.
    fn detect(&self, event: &Value) -> Result<Option<Format>, StreamError> {
        let found = match mark(event) {
            Mark::Neutral => return Ok(None),
            Mark::Error(message) => return Err(StreamError::Failed { message }),
            Mark::Unknown => None,
            Mark::Format(f) => Some(f),
        };
        match (self.choice, found) {
            (FormatChoice::Auto, Some(f)) => Ok(Some(f)),
            (FormatChoice::Auto, None) => Err(StreamError::Undetected),
            (FormatChoice::Named(format), found) if found != Some(format) => {
                Err(StreamError::Shape { format, found })
            }
            (FormatChoice::Named(format), _) => Ok(Some(format)),
        }
    }
}

/// What one event says of the stream's format.
enum Mark {
    Format(Format),
    /// An event any format may send first (Anthropic's `ping`).
    Neutral,
    /// An error event, which more than one format sends.
    Error(String),
    Unknown,
}

fn mark(event: &Value) -> Mark {
    if let Some(kind) = type_of(event) {
        return match kind {
            k if k.starts_with("response.") => Mark::Format(Format::OpenAiResponses),
            "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop" => Mark::Format(Format::Anthropic),
            "ping" => Mark::Neutral,
            "error" => Mark::Error(error_message(event)),
            _ => Mark::Unknown,
        };
    }
    let chunk = event.get("object").and_then(Value::as_str) == Some("chat.completion.chunk");
    if chunk || event.get("choices").is_some_and(Value::is_array) {
        return Mark::Format(Format::OpenAi);
    }
    if event.get("error").is_some() {
        return Mark::Error(error_message(event));
    }
    Mark::Unknown
}

/// Where each format keeps a call's id and name.
fn fields(format: Format) -> super::table::Fields {
    match format {
        Format::Anthropic => anthropic::FIELDS,
        Format::OpenAi => chat::FIELDS,
        Format::OpenAiResponses => responses::FIELDS,
    }
}
