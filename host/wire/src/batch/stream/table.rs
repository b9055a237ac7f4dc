//! The calls of one stream, whatever its format: each opened under the format's key for it (a
//! content block index, a `tool_calls` index, an `output_index`), fed its arguments, then made
//! ready exactly once. The formats' modules say when; this one holds the bounds and writes the
//! events.
//!
//! A call is answered as early as its fate is known: arguments over the limit, or a stream that
//! broke while they arrived, make it ready at once with its error (and free what it held).

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::super::calls::{
    BrokenCall, CallError, ParsedCall, empty_object, id_and_name, ready, require,
};
use super::MAX_PENDING_INPUT_BYTES;
use super::event::{Limits, Pending, StreamEvent};
use super::partial::Prefix;

/// What a format calls one of its calls in the stream.
pub(super) type Key = u64;

/// The fields a format's calls keep their id and name in, for the errors that say one is missing.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fields {
    pub(super) id: &'static str,
    pub(super) name: &'static str,
}

/// The stream started more calls than the limit allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooManyCalls;

/// A call whose arguments are still arriving.
#[derive(Debug)]
struct Open {
    /// The format's key for it, if the event that started it had one.
    key: Option<Key>,
    id: Option<String>,
    name: Option<String>,
    args: String,
    /// The input the call started with (Anthropic's `input`), used if no arguments arrive.
    initial: Option<Value>,
    prefix: Prefix,
    /// `args.len()` and the readable length when the last `Pending` was sent.
    shown_len: usize,
    shown_readable: usize,
}

impl Open {
    /// Bytes this call holds against the limits.
    fn size(&self) -> usize {
        self.args.len()
            + self.id.as_ref().map_or(0, String::len)
            + self.name.as_ref().map_or(0, String::len)
    }
}

/// How an open call ends.
enum End<'a> {
    /// Its arguments are complete: these, or the ones it was fed when `None`.
    Complete(Option<&'a str>),
    /// It cannot run.
    Broken(CallError),
}

/// Every call of a stream, by index.
#[derive(Debug)]
pub(super) struct Table {
    limits: Limits,
    fields: Fields,
    /// `None` once a call is ready.
    calls: Vec<Option<Box<Open>>>,
    keys: HashMap<Key, usize>,
    open: BTreeSet<usize>,
    /// Bytes the open calls hold.
    held: usize,
    ids: HashSet<String>,
    events: Vec<StreamEvent>,
}

impl Table {
    pub(super) fn new(limits: Limits, fields: Fields) -> Self {
        Self {
            limits,
            fields,
            calls: Vec::new(),
            keys: HashMap::new(),
            open: BTreeSet::new(),
            held: 0,
            ids: HashSet::new(),
            events: Vec::new(),
        }
    }

    /// The events written since the last call, in order.
    pub(super) fn take_events(&mut self) -> Vec<StreamEvent> {
        std::mem::take(&mut self.events)
    }

    /// The call last opened under `key`, open or not.
    pub(super) fn find(&self, key: Key) -> Option<usize> {
        self.keys.get(&key).copied()
    }

    /// The open call under `key`.
    pub(super) fn find_open(&self, key: Key) -> Option<usize> {
        self.find(key).filter(|i| self.open.contains(i))
    }

    /// The calls still open, in index order.
    pub(super) fn open_calls(&self) -> Vec<usize> {
        self.open.iter().copied().collect()
    }

    /// The id of the open call `index`.
    pub(super) fn id(&self, index: usize) -> Option<&str> {
        self.open_call(index)?.id.as_deref()
    }

    /// The key of the open call `index`.
    pub(super) fn key_of(&self, index: usize) -> Option<Key> {
        self.open_call(index)?.key
    }

    /// Whether a call already made ready has this id.
    pub(super) fn seen_id(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Starts a call under `key` (none when the event gave none: nothing more can reach it). A
    /// call still open under the same key is broken first: its remaining arguments could not be
    /// told from the new call's.
    pub(super) fn open(
        &mut self,
        key: Option<Key>,
        id: Option<String>,
        name: Option<String>,
        initial: Option<Value>,
    ) -> Result<usize, TooManyCalls> {
        if let Some(old) = key.and_then(|k| self.find_open(k)) {
            self.broken(old, "another call started in its place before it ended");
        }
        if self.calls.len() >= self.limits.max_calls {
            return Err(TooManyCalls);
        }
        let index = self.calls.len();
        let call = Box::new(Open {
            key,
            id,
            name,
            args: String::new(),
            initial: initial.filter(|v| v.as_object().is_some_and(|o| !o.is_empty())),
            prefix: Prefix::new(),
            shown_len: 0,
            shown_readable: 0,
        });
        self.held += call.size();
        self.calls.push(Some(call));
        if let Some(key) = key {
            self.keys.insert(key, index);
        }
        self.open.insert(index);
        self.show(index);
        self.bound(index);
        Ok(index)
    }

    /// Starts a call as [`Table::open`] does, for a format whose keys name one call each (a
    /// content block index, an output index): a key whose call has already ended makes the new
    /// call broken at once, so a stream that reuses an index cannot have a second call run under it.
    pub(super) fn open_unique(
        &mut self,
        key: Option<Key>,
        id: Option<String>,
        name: Option<String>,
        initial: Option<Value>,
    ) -> Result<usize, TooManyCalls> {
        let reused = key.filter(|k| self.find(*k).is_some_and(|i| !self.open.contains(&i)));
        let index = self.open(key, id, name, initial)?;
        if let Some(key) = reused {
            self.broken(index, &format!("the stream reused index {key}"));
        }
        Ok(index)
    }

    /// Gives the open call `index` its id or name, if it has none yet.
    pub(super) fn fill(&mut self, index: usize, id: Option<String>, name: Option<String>) {
        let Some(call) = self.open_call_mut(index) else {
            return;
        };
        let mut added = 0;
        if let (None, Some(id)) = (&call.id, id) {
            added += id.len();
            call.id = Some(id);
        }
        if let (None, Some(name)) = (&call.name, name) {
            added += name.len();
            call.name = Some(name);
        }
        if added > 0 {
            self.held += added;
            if !self.bound(index) {
                self.show(index);
            }
        }
    }

    /// Adds `fragment` to the arguments of the open call `index`; a call not open is left alone.
    pub(super) fn append(&mut self, index: usize, fragment: &str) {
        let Some(call) = self.open_call_mut(index) else {
            return;
        };
        call.args.push_str(fragment);
        self.held += fragment.len();
        if self.bound(index) {
            return;
        }
        let Some(call) = self.open_call_mut(index) else {
            return;
        };
        if call.args.len() > MAX_PENDING_INPUT_BYTES {
            return;
        }
        call.prefix.feed(&call.args);
        // Shown again when more reads, and the arguments grew by an eighth since last shown:
        // each small call as it grows, a large one a bounded number of times.
        let readable = call.prefix.readable(&call.args);
        if readable > call.shown_readable && call.args.len() >= call.shown_len + call.shown_len / 8
        {
            self.show(index);
        }
    }

    /// The open call `index` has all its arguments: `full` when the event repeats them whole,
    /// else the ones fed.
    pub(super) fn complete(&mut self, index: usize, full: Option<&str>) {
        self.end(index, End::Complete(full));
    }

    /// The open call `index` cannot run, for `error`.
    pub(super) fn fail(&mut self, index: usize, error: CallError) {
        self.end(index, End::Broken(error));
    }

    /// The open call `index` cannot run: the stream broke while its arguments arrived.
    pub(super) fn broken(&mut self, index: usize, reason: &str) {
        let tool = self.tool(index);
        let reason = reason.to_string();
        self.fail(index, CallError::BrokenStream { tool, reason });
    }

    /// Every open call cannot run: the stream broke while their arguments arrived (an event
    /// that may have held part of them was lost).
    pub(super) fn break_open(&mut self, reason: &str) {
        for index in self.open_calls() {
            self.broken(index, reason);
        }
    }

    /// Every open call cannot run: their arguments were cut off.
    pub(super) fn cut_open(&mut self) {
        for index in self.open_calls() {
            let tool = self.tool(index);
            self.fail(index, CallError::IncompleteArguments { tool });
        }
    }

    /// Every open call has all its arguments.
    pub(super) fn complete_open(&mut self) {
        for index in self.open_calls() {
            self.complete(index, None);
        }
    }

    /// Ends the open call `index` if it, or the open calls together, hold more than allowed.
    /// Returns whether it did.
    fn bound(&mut self, index: usize) -> bool {
        let Some(call) = self.open_call(index) else {
            return false;
        };
        let (max, held) = (
            self.limits.max_argument_bytes,
            self.limits.max_buffered_bytes,
        );
        if call.args.len() > max {
            let tool = self.tool(index);
            self.fail(index, CallError::ArgumentsTooLarge { tool, max });
        } else if self.held > held {
            let reason = format!("the calls arriving at once held more than {held} bytes");
            self.broken(index, &reason);
        } else {
            return false;
        }
        true
    }

    /// The tool the open call `index` names, or "" (the call is then refused for its missing
    /// name before this is shown).
    pub(super) fn tool(&self, index: usize) -> String {
        self.open_call(index)
            .and_then(|c| c.name.clone())
            .unwrap_or_default()
    }

    fn open_call(&self, index: usize) -> Option<&Open> {
        self.calls.get(index)?.as_deref()
    }

    fn open_call_mut(&mut self, index: usize) -> Option<&mut Open> {
        self.calls.get_mut(index)?.as_deref_mut()
    }

    /// Writes a `Pending` event for the open call `index`.
    fn show(&mut self, index: usize) {
        let Some(call) = self.open_call_mut(index) else {
            return;
        };
        let input = if call.args.len() <= MAX_PENDING_INPUT_BYTES {
            call.prefix.value(&call.args)
        } else {
            None
        };
        call.shown_len = call.args.len();
        call.shown_readable = call.prefix.readable(&call.args);
        let pending = Pending {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
            input,
        };
        self.events.push(StreamEvent::Pending(pending));
    }

    /// Makes the open call `index` ready, once.
    fn end(&mut self, index: usize, end: End<'_>) {
        let Some(call) = self.calls.get_mut(index).and_then(Option::take) else {
            return;
        };
        self.open.remove(&index);
        self.held = self.held.saturating_sub(call.size());
        let Open {
            id,
            name,
            args,
            initial,
            ..
        } = *call;
        let args = args.as_str();
        let call = match end {
            // A call of a type toolhost does not run says so, whatever else it lacks.
            End::Broken(error @ CallError::UnsupportedType { .. }) => {
                Err(BrokenCall { id, name, error })
            }
            end => match require(id, name, self.fields.id, self.fields.name) {
                Err(broken) => Err(broken),
                Ok((id, name)) => {
                    let input = match end {
                        End::Broken(error) => Err(error),
                        End::Complete(full) => self.input(&name, full.unwrap_or(args), initial),
                    };
                    ready(id, name, input)
                }
            },
        };
        let call = self.unique(call);
        self.events.push(StreamEvent::Ready { index, call });
    }

    /// A call whose id an earlier call has is not run, as in a whole batch.
    fn unique(&mut self, call: ParsedCall) -> ParsedCall {
        let Some(id) = id_and_name(&call).0 else {
            return call;
        };
        if self.ids.insert(id.to_owned()) {
            return call;
        }
        match call {
            Ok(c) => Err(BrokenCall {
                error: CallError::DuplicateId { id: c.id.clone() },
                id: Some(c.id),
                name: Some(c.name),
            }),
            broken => broken,
        }
    }
}

impl Table {
    /// The input complete arguments give: `{}` (or the input the call started with) for none,
    /// [`CallError::IncompleteArguments`] for JSON that stops too early (the model's output
    /// ended inside it), [`CallError::ArgumentsNotJson`] for anything else that is not JSON.
    fn input(&self, tool: &str, text: &str, initial: Option<Value>) -> Result<Value, CallError> {
        let max = self.limits.max_argument_bytes;
        if text.len() > max {
            let tool = tool.to_string();
            return Err(CallError::ArgumentsTooLarge { tool, max });
        }
        parse_input(tool, text, initial)
    }
}

fn parse_input(tool: &str, text: &str, initial: Option<Value>) -> Result<Value, CallError> {
    if text.trim().is_empty() {
        return Ok(initial.unwrap_or_else(empty_object));
    }
    serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            CallError::IncompleteArguments {
                tool: tool.to_string(),
            }
        } else {
            CallError::ArgumentsNotJson {
                tool: tool.to_string(),
                reason: e.to_string(),
            }
        }
    })
}
