//! OpenAI Responses streaming events: `response.output_item.added` with a `function_call` item
//! opens a call under its `output_index`, `response.function_call_arguments.delta` events carry
//! fragments of its arguments, and `response.function_call_arguments.done` (or, if that is
//! missing, `response.output_item.done`) completes it with the whole arguments, which are the ones
//! it runs with. `response.completed` and `response.incomplete` end the stream,
//! `response.failed` and `error` fail it; other items (messages, reasoning) and events are not
//! calls.
//!
//! A delta names its item by `output_index` and `item_id`; either finds the call. A
//! `function_call` item added under an `output_index` whose call has ended is answered as a broken
//! stream, never run.

use std::collections::HashMap;

use serde_json::Value;

use super::super::calls::{text, type_of};
use super::error_event::error_message;
use super::event::Ending;
use super::table::{Fields, Key, Table, TooManyCalls};

/// Where a `function_call` item keeps its id and name.
pub(super) const FIELDS: Fields = Fields {
    id: "call_id",
    name: "name",
};

/// What the reader remembers between events.
#[derive(Debug, Default)]
pub(super) struct Reader {
    /// The `output_index` of each function call item, by item id.
    items: HashMap<String, Key>,
}

impl Reader {
    /// Reads one event; the ending, if it ends the stream.
    pub(super) fn event(
        &mut self,
        table: &mut Table,
        event: &Value,
    ) -> Result<Option<Ending>, TooManyCalls> {
        let item = event.get("item").unwrap_or(&Value::Null);
        let response = event.get("response").unwrap_or(&Value::Null);
        match type_of(event) {
            Some("response.output_item.added") if type_of(item) == Some("function_call") => {
                let key = self.key(event, item);
                let (id, name) = (text(item, "call_id"), text(item, "name"));
                let index = table.open_unique(key, id, name, None)?;
                if let Some(Value::String(arguments)) = item.get("arguments") {
                    table.append(index, arguments);
                }
                if key.is_none() {
                    table.broken(index, "its output item has no output_index");
                }
            }
            Some("response.function_call_arguments.delta") => {
                let Some(key) = self.key(event, item) else {
                    table.break_open("an arguments delta named no output item");
                    return Ok(None);
                };
                let index = match table.find_open(key) {
                    Some(index) => index,
                    // A fragment after its call ended: already answered.
                    None if table.find(key).is_some() => return Ok(None),
                    // A fragment of an item that was never added: a call with no id or name.
                    None => table.open(Some(key), None, None, None)?,
                };
                match event.get("delta").and_then(Value::as_str) {
                    Some(fragment) => table.append(index, fragment),
                    None => table.broken(index, "an arguments delta had no delta"),
                }
            }
            Some("response.function_call_arguments.done") => {
                if let Some(index) = self.key(event, item).and_then(|k| table.find_open(k)) {
                    table.fill(index, None, text(event, "name"));
                    let arguments = event.get("arguments").and_then(Value::as_str);
                    table.complete(index, arguments);
                }
            }
            Some("response.output_item.done") if type_of(item) == Some("function_call") => {
                let key = self.key(event, item);
                let (id, name) = (text(item, "call_id"), text(item, "name"));
                let index = match key.map(|k| (table.find_open(k), table.find(k))) {
                    Some((Some(open), _)) => {
                        table.fill(open, id, name);
                        open
                    }
                    // Completed by its `arguments.done`, as usual.
                    Some((None, Some(_))) => return Ok(None),
                    // An item seen only whole.
                    Some((None, None)) | None => table.open(key, id, name, None)?,
                };
                let arguments = item.get("arguments").and_then(Value::as_str);
                table.complete(index, arguments);
            }
            Some("response.completed") => {
                let reason = text(response, "status");
                return Ok(Some(Ending::Stopped { reason }));
            }
            Some("response.incomplete") => {
                let details = response.get("incomplete_details").unwrap_or(&Value::Null);
                let reason = text(details, "reason").or_else(|| Some("incomplete".into()));
                return Ok(Some(Ending::Stopped { reason }));
            }
            Some("response.failed") => {
                let message = error_message(response);
                return Ok(Some(Ending::Failed { message }));
            }
            Some("error") => {
                let message = error_message(event);
                return Ok(Some(Ending::Failed { message }));
            }
            _ => {}
        }
        Ok(None)
    }

    /// The key of the item an event is about: its `output_index`, or the one its item id was
    /// added under. Remembers the item id of an item that has both.
    fn key(&mut self, event: &Value, item: &Value) -> Option<Key> {
        let item_id = text(event, "item_id").or_else(|| text(item, "id"));
        match (event.get("output_index").and_then(Value::as_u64), item_id) {
            (Some(key), Some(id)) if type_of(item) == Some("function_call") => {
                self.items.insert(id, key);
                Some(key)
            }
            (Some(key), _) => Some(key),
            (None, Some(id)) => self.items.get(&id).copied(),
            (None, None) => None,
        }
    }

    /// `[DONE]`, which the Responses API does not send: the stream ends without a status.
    pub(super) fn done(&mut self) -> Ending {
        Ending::Stopped { reason: None }
    }
}

/// The ending an event too large to read was, by its SSE name: `response.completed` repeats every
/// call's arguments, so it is the event most likely to be over the limit.
pub(super) fn lost(name: &str) -> Option<Ending> {
    match name {
        "response.completed" | "response.incomplete" => Some(Ending::Stopped {
            reason: Some(name.trim_start_matches("response.").to_string()),
        }),
        "response.failed" => Some(Ending::Failed {
            message: "the response failed (its event was too large to read)".into(),
        }),
        _ => None,
    }
}
