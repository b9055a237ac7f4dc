//! Anthropic Messages streaming events: `content_block_start` with a `tool_use` block opens a call
//! under the block's `index`, `input_json_delta`s carry its input as JSON text, and
//! `content_block_stop` completes it. An index names one block: a `tool_use` block started under
//! an index whose call has ended is answered as a broken stream, never run. `message_delta` gives the stop reason, `message_stop` ends
//! the stream, `error` fails it; `ping`, `message_start`, text and thinking blocks say nothing
//! about calls.
//!
//! Blocks of other types (text, thinking, a server tool's `server_tool_use`) are remembered while
//! open, so that a server tool's `input_json_delta` is not taken for a call of ours.

use std::collections::HashSet;

use serde_json::Value;

use super::super::calls::{text, type_of};
use super::error_event::error_message;
use super::event::Ending;
use super::table::{Fields, Key, Table, TooManyCalls};

/// Where a `tool_use` block keeps its id and name.
pub(super) const FIELDS: Fields = Fields {
    id: "id",
    name: "name",
};

/// The most blocks of other types remembered as open at once.
const MAX_OTHER_BLOCKS: usize = 1024;

/// What the reader remembers between events.
#[derive(Debug, Default)]
pub(super) struct Reader {
    /// Open blocks that are not `tool_use`.
    others: HashSet<Key>,
    /// `message_delta`'s `stop_reason`.
    stop_reason: Option<String>,
}

impl Reader {
    /// Reads one event; the ending, if it ends the stream.
    pub(super) fn event(
        &mut self,
        table: &mut Table,
        event: &Value,
    ) -> Result<Option<Ending>, TooManyCalls> {
        let key = event.get("index").and_then(Value::as_u64);
        match type_of(event) {
            Some("content_block_start") => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                if type_of(block) == Some("tool_use") {
                    let (id, name) = (text(block, "id"), text(block, "name"));
                    let index = table.open_unique(key, id, name, block.get("input").cloned())?;
                    if key.is_none() {
                        table.broken(index, "its content_block_start has no index");
                    }
                } else if let Some(key) = key
                    && self.others.len() < MAX_OTHER_BLOCKS
                {
                    self.others.insert(key);
                }
            }
            Some("content_block_delta") => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                if type_of(delta) == Some("input_json_delta") {
                    self.input(table, key, delta)?;
                }
            }
            Some("content_block_stop") => match key.and_then(|k| table.find_open(k)) {
                Some(index) => table.complete(index, None),
                None => {
                    if let Some(key) = key {
                        self.others.remove(&key);
                    }
                }
            },
            Some("message_delta") => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                if let Some(reason) = text(delta, "stop_reason") {
                    self.stop_reason = Some(reason);
                }
            }
            Some("message_stop") => return Ok(Some(self.done())),
            Some("error") => {
                let message = error_message(event);
                return Ok(Some(Ending::Failed { message }));
            }
            // `message_start`, `ping`, and events added to the API later.
            _ => {}
        }
        Ok(None)
    }

    /// One `input_json_delta`: a fragment of the input of the call under `key`.
    fn input(
        &mut self,
        table: &mut Table,
        key: Option<Key>,
        delta: &Value,
    ) -> Result<(), TooManyCalls> {
        let Some(key) = key else {
            table.break_open("an input_json_delta came without an index");
            return Ok(());
        };
        let fragment = delta.get("partial_json").and_then(Value::as_str);
        let index = match table.find_open(key) {
            Some(index) => index,
            // A server tool's input, or a fragment after its call ended: not a call to run.
            None if self.others.contains(&key) || table.find(key).is_some() => return Ok(()),
            // A fragment of a block that never started: a call with no id or name, answered so.
            None => table.open(Some(key), None, None, None)?,
        };
        match fragment {
            Some(fragment) => table.append(index, fragment),
            None => table.broken(index, "an input_json_delta had no partial_json"),
        }
        Ok(())
    }

    /// The stream's end: `message_stop` (or `[DONE]`, which Anthropic does not send).
    pub(super) fn done(&mut self) -> Ending {
        Ending::Stopped {
            reason: self.stop_reason.take(),
        }
    }

    /// An event too large to read that ended the stream, by its SSE name.
    pub(super) fn lost(&mut self, name: &str) -> Option<Ending> {
        (name == "message_stop").then(|| self.done())
    }
}
