//! Runs a batch that arrives as the model writes it: each call starts as soon as its arguments are
//! complete (see [`toolhost_wire::batch::stream`]), under the rule a whole batch runs by (a
//! read-only call may start while earlier read-only calls run; a write waits for everything before
//! it, and nothing after it starts before it ends), so tool time overlaps the model's generation.
//!
//! [`open`] reads until the stream shows its format, so that a body that is no stream at all is
//! refused before anything is answered; [`Opened::run`] then reads the rest as it arrives. A stream
//! cut short (the body breaks, a deadline passes, the client is cancelled) still answers every call
//! it began: the complete ones run, the one still arriving is an error result saying its arguments
//! were incomplete. Every call leaves its audit line, as in [`run()`](super::run()).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::run::{BatchOptions, Calls, reject, result, sharing_of};
use crate::exec::Pipeline;
use toolhost_wire::batch::stream::{Decoder, Ending, Pending, Schedule, StreamError, StreamEvent};
use toolhost_wire::batch::{BatchReport, CallResult, Format, ParsedCall};

/// What a streamed batch tells as it goes, for a UI: in the order it happens.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Progress<'a> {
    /// A call whose arguments are still arriving.
    Pending(&'a Pending),
    /// A complete call has started to run.
    Started {
        /// The call's position in the batch.
        index: usize,
        /// The id the model gave it.
        id: &'a str,
        /// The tool it calls.
        name: &'a str,
    },
    /// A call's result, as soon as it is known.
    Result(&'a CallResult),
}

/// A finished streamed batch.
#[derive(Debug, Clone)]
pub struct StreamReport {
    /// Every call's result, in the order the calls were made.
    pub report: BatchReport,
    /// How the model's stream ended (`Cut` when the bytes stopped first).
    pub ending: Ending,
    /// Why the bytes stopped early, when they did (a broken connection, a deadline).
    pub broken: Option<String>,
}

/// A stream whose format is known, ready to run.
pub struct Opened<S> {
    decoder: Decoder,
    body: S,
    format: Format,
    /// What the bytes read so far gave, not yet acted on.
    first: Vec<StreamEvent>,
    /// Set when the body ended (or broke) while its format was being told.
    ended: Option<Option<String>>,
    /// Stops reading the stream, not the calls (a shutdown: see [`Opened::until`]).
    stop_reading: CancellationToken,
}

/// Reads `body` until `decoder` knows the stream's format. A stream that is not one of the formats
/// (or not the one asked for), or that ends before its first event, is refused here, before any
/// call has started.
pub async fn open<S, E>(mut decoder: Decoder, mut body: S) -> Result<Opened<S>, StreamError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut first = Vec::new();
    loop {
        if let Some(format) = decoder.format() {
            return Ok(Opened {
                decoder,
                body,
                format,
                first,
                ended: None,
                stop_reading: CancellationToken::new(),
            });
        }
        let ended = match body.next().await {
            Some(Ok(bytes)) => {
                first.extend(decoder.push(&bytes)?);
                continue;
            }
            Some(Err(e)) => Some(e.to_string()),
            None => None,
        };
        first.extend(decoder.finish()?);
        let format = decoder.format().ok_or(StreamError::Empty)?;
        return Ok(Opened {
            decoder,
            body,
            format,
            first,
            ended: Some(ended),
            stop_reading: CancellationToken::new(),
        });
    }
}

impl<S, E> Opened<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    /// The stream's format: the answer's.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Stops reading the stream when `stop` is cancelled (the daemon shutting down): the calls
    /// still arriving are answered as incomplete, those complete run to their end.
    pub fn until(mut self, stop: CancellationToken) -> Self {
        self.stop_reading = stop;
        self
    }

    /// Runs every call of the stream as it completes, reading the rest of the stream meanwhile.
    /// `on_progress` sees what happens as it happens. Cancelling `cancel` stops reading and cancels
    /// the calls; each is still answered and recorded.
    pub async fn run(
        self,
        pipeline: &Arc<Pipeline>,
        batch_id: &str,
        options: &BatchOptions,
        cancel: &CancellationToken,
        mut on_progress: impl FnMut(Progress<'_>) + Send,
    ) -> StreamReport {
        let Self {
            mut decoder,
            mut body,
            format,
            first,
            ended,
            stop_reading,
        } = self;
        let mut batch = Streamed {
            pipeline,
            batch_id,
            options,
            cancel,
            schedule: Schedule::new(options.concurrency),
            calls: Vec::new(),
            results: Vec::new(),
            running: Calls::default(),
            ending: None,
        };
        let mut broken = None;
        batch.take(first, &mut on_progress);
        // The model may have said it is done already: what follows is not read.
        let mut reading = ended.is_none() && batch.ending.is_none();
        if let Some(why) = ended {
            broken = why;
        }
        loop {
            tokio::select! {
                biased;
                finished = batch.running.next(pipeline, batch_id, options), if !batch.running.is_empty() => {
                    if let Some((index, outcome)) = finished {
                        batch.finish(index, outcome, &mut on_progress);
                    }
                }
                () = cancel.cancelled(), if reading => {
                    reading = false;
                    broken = Some("the batch was cancelled".to_owned());
                    batch.take(end(&mut decoder), &mut on_progress);
                }
                () = stop_reading.cancelled(), if reading => {
                    reading = false;
                    broken = Some("toolhost is shutting down".to_owned());
                    batch.take(end(&mut decoder), &mut on_progress);
                }
                chunk = body.next(), if reading => {
                    let events = match chunk {
                        Some(Ok(bytes)) => decoder.push(&bytes).unwrap_or_default(),
                        Some(Err(e)) => {
                            reading = false;
                            broken = Some(e.to_string());
                            end(&mut decoder)
                        }
                        None => {
                            reading = false;
                            end(&mut decoder)
                        }
                    };
                    batch.take(events, &mut on_progress);
                    if batch.ending.is_some() {
                        // The model said it is done: what follows is not read.
                        reading = false;
                    }
                }
                else => break,
            }
        }
        let ending = batch.ending.take().unwrap_or(Ending::Cut);
        StreamReport {
            report: BatchReport {
                batch_id: batch_id.to_owned(),
                format,
                results: batch.results.into_iter().flatten().collect(),
            },
            ending,
            broken,
        }
    }
}

/// The end of the bytes: the calls still arriving become errors. The format is known by now, so
/// the decoder has no error left to give.
fn end(decoder: &mut Decoder) -> Vec<StreamEvent> {
    decoder.finish().unwrap_or_default()
}

/// A streamed batch while it runs.
struct Streamed<'a> {
    pipeline: &'a Arc<Pipeline>,
    batch_id: &'a str,
    options: &'a BatchOptions,
    cancel: &'a CancellationToken,
    schedule: Schedule,
    /// The calls made so far, by index.
    calls: Vec<Option<ParsedCall>>,
    /// Their results, by index.
    results: Vec<Option<CallResult>>,
    running: Calls,
    ending: Option<Ending>,
}

impl Streamed<'_> {
    /// Acts on what the stream said.
    fn take(&mut self, events: Vec<StreamEvent>, on_progress: &mut impl FnMut(Progress<'_>)) {
        for event in events {
            match event {
                StreamEvent::Pending(pending) => on_progress(Progress::Pending(&pending)),
                StreamEvent::Ready { index, call } => {
                    let sharing = sharing_of(&self.pipeline.services().registry.catalog(), &call);
                    if self.calls.len() <= index {
                        self.calls.resize_with(index + 1, || None);
                        self.results.resize_with(index + 1, || None);
                    }
                    self.calls[index] = Some(call);
                    let ready = self.schedule.arrive(index, sharing);
                    self.start(ready, on_progress);
                }
                StreamEvent::Ended(ending) => {
                    self.ending.get_or_insert(ending);
                }
            }
        }
    }

    /// Starts the calls the schedule let go; a call that cannot run is answered at once, which may
    /// let more go.
    fn start(&mut self, ready: Vec<usize>, on_progress: &mut impl FnMut(Progress<'_>)) {
        let mut ready = VecDeque::from(ready);
        while let Some(index) = ready.pop_front() {
            let Some(Some(call)) = self.calls.get(index) else {
                continue;
            };
            match call {
                Ok(call) => {
                    on_progress(Progress::Started {
                        index,
                        id: &call.id,
                        name: &call.name,
                    });
                    let (pipeline, batch_id, options) =
                        (self.pipeline, self.batch_id, self.options);
                    self.running
                        .start(pipeline, batch_id, options, self.cancel, index, call);
                }
                Err(broken) => {
                    let outcome = reject(self.pipeline, self.batch_id, self.options, broken);
                    let done = result(index, &Err(broken.clone()), outcome);
                    on_progress(Progress::Result(&done));
                    self.results[index] = Some(done);
                    ready.extend(self.schedule.finish(index));
                }
            }
        }
    }

    /// A call has finished: record its result and start what may follow it.
    fn finish(
        &mut self,
        index: usize,
        outcome: toolhost_call::call::CallOutcome,
        on_progress: &mut impl FnMut(Progress<'_>),
    ) {
        let Some(Some(call)) = self.calls.get(index) else {
            return;
        };
        let done = result(index, call, outcome);
        on_progress(Progress::Result(&done));
        self.results[index] = Some(done);
        let more = self.schedule.finish(index);
        self.start(more, on_progress);
    }
}
