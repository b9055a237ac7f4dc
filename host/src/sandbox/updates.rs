//! The updates a WASI 0.3 plugin streams while its call runs (`toolhost:plugin@0.2.0`'s
//! `host.updates`): read by the host as they come, each one redacted, cut and forwarded to the
//! call's progress sink. Partial output is one text in pieces: its redaction holds back the tail
//! that could begin a secret until the next piece (or the stream's end) shows what it is, so a
//! secret streamed in two halves reaches nobody. The stream is bounded like every other output: past [`MAX_UPDATES`]
//! items or [`MAX_UPDATE_BYTES`] bytes the host drops its end, the guest's writes then fail, and
//! the call goes on.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use wasmtime::StoreContextMut;
use wasmtime::component::{Source, StreamConsumer, StreamResult};

use super::bindings::v2::toolhost::plugin::types::Update;
use super::secrets::Secrets;
use toolhost_call::call::{Progress, ProgressSink};

/// Updates one call may stream; later ones are not read.
pub(super) const MAX_UPDATES: u64 = 1000;
/// Bytes of text (messages and partial output) one call may stream.
pub(super) const MAX_UPDATE_BYTES: u64 = 1 << 20;
/// Longest text of one update passed on; the rest is cut.
const MAX_TEXT_BYTES: usize = 4096;

/// Reads one call's updates into its progress sink.
pub(super) struct UpdatesConsumer {
    progress: Option<ProgressSink>,
    secrets: Arc<Secrets>,
    items: u64,
    bytes: u64,
    /// Bytes of partial output passed on so far: the progress an MCP client sees for a partial update.
    partial: u64,
    /// The end of the partial output so far that could begin a secret, not passed on yet.
    held: String,
}

impl UpdatesConsumer {
    pub(super) fn new(progress: Option<ProgressSink>, secrets: Arc<Secrets>) -> Self {
        Self {
            progress,
            secrets,
            items: 0,
            bytes: 0,
            partial: 0,
            held: String::new(),
        }
    }

    /// Count `update` against the bounds; pass it on if it fits. False once the stream is spent.
    fn take(&mut self, update: Update) -> bool {
        let text = match &update {
            Update::Partial(text) => text.len(),
            Update::Progress(p) => p.message.len(),
        } as u64;
        self.items += 1;
        self.bytes = self.bytes.saturating_add(text);
        if self.items > MAX_UPDATES || self.bytes > MAX_UPDATE_BYTES {
            return false;
        }
        let progress = match update {
            Update::Progress(p) => Progress {
                done: p.done,
                total: p.total,
                message: self.clip(p.message),
            },
            Update::Partial(text) => {
                let now = self.secrets.redactor().redact_piece(&mut self.held, &text);
                if now.is_empty() {
                    return true;
                }
                self.partial_progress(now)
            }
        };
        if let Some(sink) = &self.progress {
            sink(progress);
        }
        true
    }

    fn clip(&self, text: String) -> String {
        cut(self.secrets.redactor().redact(text))
    }

    /// The progress of `text`, partial output already redacted.
    fn partial_progress(&mut self, text: String) -> Progress {
        self.partial += text.len() as u64;
        Progress {
            done: self.partial,
            total: None,
            message: cut(text),
        }
    }
}

/// `text` cut to [`MAX_TEXT_BYTES`], marked when cut.
fn cut(mut text: String) -> String {
    if toolhost_call::text::truncate_at_boundary(&mut text, MAX_TEXT_BYTES) {
        text.push('…');
    }
    text
}

impl Drop for UpdatesConsumer {
    /// The stream ended: the held-back tail of the partial output goes out, redacted as it is.
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            return;
        }
        let progress = self.partial_progress(held);
        if let Some(sink) = &self.progress {
            sink(progress);
        }
    }
}

impl<D> StreamConsumer<D> for UpdatesConsumer {
    type Item = Update;

    /// Take one update per write the guest makes (each read lifts one value out of the guest, within
    /// the store's transfer bound), so that the bounds hold to the item.
    fn poll_consume(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        mut store: StoreContextMut<'_, D>,
        mut source: Source<'_, Update>,
        _finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        if source.remaining(&mut store) == 0 {
            // The guest waits to be able to write: it always can.
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        if self.items >= MAX_UPDATES || self.bytes >= MAX_UPDATE_BYTES {
            // Spent: the guest's write fails, so it knows the update was not taken.
            return Poll::Ready(Ok(StreamResult::Dropped));
        }
        let mut one: Option<Update> = None;
        source.read(&mut store, &mut one)?;
        let spent = one.is_some_and(|update| !self.take(update));
        Poll::Ready(Ok(if spent {
            StreamResult::Dropped
        } else {
            StreamResult::Completed
        }))
    }
}
