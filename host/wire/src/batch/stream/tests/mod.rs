//! Streams read whole and in pieces: the recorded streams of `tests/streams/` (at the top of the
//! repository, so that the host's end-to-end tests replay the same bytes), and odd ones made here.

use std::collections::HashSet;

use serde_json::Value;

use super::*;
use crate::batch::{CallError, FormatChoice};

mod formats;
mod limits;
mod recorded;

/// The bytes of a recorded stream.
pub(super) fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/streams")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every event of `chunks`, read in turn, then finished.
pub(super) fn decode_chunks<'a>(
    mut decoder: Decoder,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<StreamEvent>, StreamError> {
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(decoder.push(chunk)?);
    }
    events.extend(decoder.finish()?);
    check(&events);
    Ok(events)
}

/// Every event of `bytes`, read whole, in the format chosen.
pub(super) fn decode(bytes: &[u8], choice: FormatChoice) -> Result<Vec<StreamEvent>, StreamError> {
    decode_chunks(Decoder::new(choice), [bytes])
}

/// What every stream's events must be: each call pending (if at all) before it is ready, ready
/// exactly once, the indices from 0 without a gap, one ending and nothing after it.
pub(super) fn check(events: &[StreamEvent]) {
    let mut ready: HashSet<usize> = HashSet::new();
    let mut most = 0;
    for (at, event) in events.iter().enumerate() {
        match event {
            StreamEvent::Pending(p) => {
                assert!(
                    !ready.contains(&p.index),
                    "pending after ready: {events:#?}"
                );
                most = most.max(p.index + 1);
            }
            StreamEvent::Ready { index, .. } => {
                assert!(ready.insert(*index), "ready twice: {index}");
                most = most.max(index + 1);
            }
            StreamEvent::Ended(_) => assert_eq!(at, events.len() - 1, "events after the end"),
        }
    }
    assert_eq!(ready.len(), most, "indices with a gap: {events:#?}");
    assert!(
        matches!(events.last(), Some(StreamEvent::Ended(_))),
        "no end"
    );
}

/// A call as the tests compare it: its id, its tool, and its input or error.
pub(super) type Summary = (
    usize,
    Option<String>,
    Option<String>,
    Result<Value, CallError>,
);

/// The ready calls of `events`, in the order they were ready, and the ending.
pub(super) fn summary(events: &[StreamEvent]) -> (Vec<Summary>, Option<Ending>) {
    let mut calls = Vec::new();
    let mut ending = None;
    for event in events {
        match event {
            StreamEvent::Ready { index, call } => calls.push(match call {
                Ok(c) => (
                    *index,
                    Some(c.id.clone()),
                    Some(c.name.clone()),
                    Ok(c.input.clone()),
                ),
                Err(b) => (*index, b.id.clone(), b.name.clone(), Err(b.error.clone())),
            }),
            StreamEvent::Ended(e) => ending = Some(e.clone()),
            StreamEvent::Pending(_) => {}
        }
    }
    (calls, ending)
}

/// A ready call that runs.
pub(super) fn ok(index: usize, id: &str, name: &str, input: Value) -> Summary {
    (index, Some(id.into()), Some(name.into()), Ok(input))
}

/// A ready call answered with `error`.
pub(super) fn err(index: usize, id: Option<&str>, name: Option<&str>, error: CallError) -> Summary {
    (index, id.map(Into::into), name.map(Into::into), Err(error))
}

/// `Ending::Stopped` with `reason`.
pub(super) fn stopped(reason: &str) -> Option<Ending> {
    Some(Ending::Stopped {
        reason: Some(reason.into()),
    })
}
