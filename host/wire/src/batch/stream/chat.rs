//! OpenAI Chat Completions streaming chunks: the first `delta.tool_calls` entry with an `index`
//! carries the call's `id`, `type` and `function.name`, later ones with the same `index` carry
//! fragments of `function.arguments`. Only the first choice (`index` 0) is read, as for a whole
//! completion. An `{"error": ...}` chunk fails the stream; `data: [DONE]` ends it.
//!
//! Chat sends no event that ends one call, so a call is complete when a call with a later `index`
//! starts, when the choice has a `finish_reason`, or at `[DONE]`. The calls of one choice come
//! one after another (OpenAI never interleaves them), so a fragment for a call already complete
//! is a stream error that cannot be answered in that call any more (it may be running): it is
//! ignored, and logged. Bytes that end before `[DONE]` or a `finish_reason` cut the open call.

use serde_json::Value;

use super::super::calls::{CallError, text, type_of};
use super::error_event::error_message;
use super::event::Ending;
use super::table::{Fields, Key, Table, TooManyCalls};

/// Where a `tool_calls` entry keeps its id and name.
pub(super) const FIELDS: Fields = Fields {
    id: "id",
    name: "function.name",
};

/// What the reader remembers between events.
#[derive(Debug, Default)]
pub(super) struct Reader {
    /// The first choice's `finish_reason`.
    finish_reason: Option<String>,
}

impl Reader {
    /// Reads one chunk; the ending, if it ends the stream.
    pub(super) fn event(
        &mut self,
        table: &mut Table,
        event: &Value,
    ) -> Result<Option<Ending>, TooManyCalls> {
        let Some(choices) = event.get("choices").and_then(Value::as_array) else {
            if event.get("error").is_some() {
                let message = error_message(event);
                return Ok(Some(Ending::Failed { message }));
            }
            return Ok(None);
        };
        let first = choices
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
        let Some(choice) = first else {
            // Other choices, or the last chunk's usage with no choice at all.
            return Ok(None);
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, entry) in calls.iter().enumerate() {
                self.tool_call(table, entry, position)?;
            }
        }
        if let Some(reason) = text(choice, "finish_reason") {
            self.finish_reason = Some(reason);
            table.complete_open();
        }
        Ok(None)
    }

    /// One `tool_calls` entry: a call's start, a fragment of its arguments, or both.
    fn tool_call(
        &mut self,
        table: &mut Table,
        entry: &Value,
        position: usize,
    ) -> Result<(), TooManyCalls> {
        // OpenAI always sends `index`; a server that does not is read by position.
        let key: Key = entry
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        let function = entry.get("function").unwrap_or(&Value::Null);
        let id = text(entry, "id");
        let name = text(function, "name");
        // A call with a later index completes the ones before it.
        for index in table.open_calls() {
            if table.key_of(index).is_some_and(|k| k < key) {
                table.complete(index, None);
            }
        }
        let index = match table.find_open(key) {
            // A new id under an open index: a server that reuses indices started another call.
            Some(open)
                if id.is_some() && table.id(open).is_some_and(|o| Some(o) != id.as_deref()) =>
            {
                table.complete(open, None);
                table.open(Some(key), id, name, None)?
            }
            Some(open) => {
                table.fill(open, id, name);
                open
            }
            None if table.find(key).is_some() && id.as_deref().is_none_or(|i| table.seen_id(i)) => {
                tracing::debug!(
                    index = key,
                    "ignored a fragment for a tool call already complete"
                );
                return Ok(());
            }
            None => table.open(Some(key), id, name, None)?,
        };
        if let Some(kind) = type_of(entry)
            && kind != "function"
        {
            let kind = kind.to_string();
            table.fail(index, CallError::UnsupportedType { kind });
            return Ok(());
        }
        match function.get("arguments") {
            Some(Value::String(fragment)) => table.append(index, fragment),
            None | Some(Value::Null) => {}
            // Some compatible servers send the arguments as an object, whole.
            Some(whole) => table.append(index, &whole.to_string()),
        }
        Ok(())
    }

    /// `[DONE]`: every open call is complete.
    pub(super) fn done(&mut self, table: &mut Table) -> Ending {
        table.complete_open();
        Ending::Stopped {
            reason: self.finish_reason.take(),
        }
    }
}
