//! Tool calls a plugin makes from inside its sandbox (a `call-tools` grant): each one a whole call
//! through this pipeline, as the caller of the call that made it, with its approver and its
//! admission, under its deadline, and recorded with that call as its parent.
//!
//! The calls under one call from a front end form a tree that shares one budget: at most
//! `[limits] nested-calls` calls in all and `nesting-depth` levels, both read from the root's
//! plugin. A call over budget is refused and recorded like every refused call. Nested calls run
//! as tasks of their own, so that a calling call stopped mid-way (its deadline, a cancel, a
//! shutdown) cancels them without losing their records.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::admission::{Deadline, Ticket};
use super::pipeline::Pipeline;
use super::request::CallRequest;
use crate::registry::Tool;
use crate::sandbox::{GuestOutput, GuestSpec, NestedCalls, NestedFailure};
use toolhost_call::call::{Approver, CallStatus, ErrorKind};
use toolhost_gate::caller::Caller;
use toolhost_gate::grants::Nesting;

/// Where a call sits in a tree of nested calls: how deep, and the budget the tree shares. Set by
/// the pipeline on the calls it runs for a plugin; a front end leaves it unset (a root).
#[derive(Clone)]
pub struct Nested {
    depth: u32,
    tree: Arc<Tree>,
}

/// What a tree of nested calls may still do.
struct Tree {
    limits: Nesting,
    /// Calls the tree may still make.
    left: AtomicU32,
}

impl Nested {
    /// The root of a tree whose budget is `limits`.
    pub(super) fn root(limits: Nesting) -> Self {
        Self {
            depth: 0,
            tree: Arc::new(Tree {
                limits,
                left: AtomicU32::new(limits.calls),
            }),
        }
    }

    /// How deep this call is: 0 for a call from a front end.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// A place for one more call below this one, or why the tree may not grow.
    fn child(&self) -> Result<Self, String> {
        let limits = self.tree.limits;
        if self.depth >= limits.depth {
            return Err(format!(
                "Refused: tool calls from inside a tool may nest {} level(s) deep \
                 (`nesting-depth` in [limits] of toolhost.toml), and this call is already that deep",
                limits.depth
            ));
        }
        let took = self
            .tree
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if took.is_err() {
            return Err(format!(
                "Refused: this call and the calls under it already made {} tool calls, the budget \
                 (`nested-calls` in [limits] of toolhost.toml); return what you have",
                limits.calls
            ));
        }
        Ok(Self {
            depth: self.depth + 1,
            tree: self.tree.clone(),
        })
    }
}

/// The nested-call service one call lends its plugin: everything a nested call inherits.
pub(super) struct Inherited {
    pub(super) pipeline: Weak<Pipeline>,
    pub(super) parent_id: String,
    pub(super) origin: &'static str,
    pub(super) caller: Option<Arc<Caller>>,
    pub(super) approver: Option<Arc<dyn Approver>>,
    pub(super) admitted: Option<Ticket>,
    pub(super) trace: Option<opentelemetry::Context>,
    pub(super) deadline: Option<Deadline>,
    pub(super) place: Nested,
}

impl NestedCalls for Inherited {
    fn tools(&self) -> Vec<GuestSpec> {
        let Some(pipeline) = self.pipeline.upgrade() else {
            return Vec::new();
        };
        let catalog = pipeline.catalog();
        catalog
            .tools
            .values()
            .filter(|t| pipeline.sees(self.caller.as_deref(), &t.spec.name))
            .map(|t| spec_of(t))
            .collect()
    }

    fn call(
        &self,
        tool: String,
        input: String,
        cancel: CancellationToken,
        by: Instant,
    ) -> BoxFuture<'static, Result<GuestOutput, NestedFailure>> {
        let Some(pipeline) = self.pipeline.upgrade() else {
            return Box::pin(async { Err(failure(ErrorKind::Cancelled, "toolhost is stopping")) });
        };
        let by = Deadline::until(by);
        let mut req = CallRequest {
            tool,
            input: Value::Null,
            parent_id: Some(self.parent_id.clone()),
            origin: self.origin,
            progress: None,
            cancel,
            approver: self.approver.clone(),
            caller: self.caller.clone(),
            trace: self.trace.clone(),
            deadline: Some(match self.deadline {
                Some(d) if d.at() < by.at() => d,
                _ => by,
            }),
            admitted: self.admitted.clone(),
            nested: None,
        };
        let refused = match (self.place.child(), serde_json::from_str::<Value>(&input)) {
            (Err(why), _) => Some((ErrorKind::Denied, why)),
            (Ok(_), Err(e)) => Some((
                ErrorKind::InvalidInput,
                format!("Invalid input for tool '{}': not JSON ({e})", req.tool),
            )),
            (Ok(place), Ok(value)) => {
                req.input = value;
                req.nested = Some(place);
                None
            }
        };
        if let Some((kind, message)) = refused {
            // Recorded like every refused call, under its parent.
            let outcome = pipeline.reject(&req, kind, message);
            return Box::pin(async move { Err(failure_of(outcome)) });
        }
        // A task of its own: it runs to its record even if the calling call is dropped meanwhile
        // (the store's drop cancels it through `cancel`).
        let running = tokio::spawn(async move { pipeline.call(req).await });
        Box::pin(async move {
            match running.await {
                Ok(outcome) => match outcome.status {
                    CallStatus::Ok { structured } => Ok(GuestOutput {
                        content: outcome.content,
                        structured: structured.map(|v| v.to_string()),
                    }),
                    CallStatus::Failed(_) => Err(failure_of(outcome)),
                },
                Err(_) => Err(failure(ErrorKind::Internal, "the nested call stopped")),
            }
        })
    }
}

fn failure(kind: ErrorKind, message: &str) -> NestedFailure {
    NestedFailure {
        kind: kind.as_str().to_owned(),
        message: message.to_owned(),
    }
}

fn failure_of(outcome: toolhost_call::call::CallOutcome) -> NestedFailure {
    NestedFailure {
        kind: outcome
            .error_kind()
            .unwrap_or(ErrorKind::Internal)
            .as_str()
            .to_owned(),
        message: outcome.content,
    }
}

/// `tool`'s spec as a guest is given it.
fn spec_of(tool: &Tool) -> GuestSpec {
    let s = &tool.spec;
    GuestSpec {
        name: s.name.clone(),
        title: s.title.clone(),
        description: s.description.clone(),
        input_schema: s.input_schema.to_string(),
        output_schema: s.output_schema.as_ref().map(Value::to_string),
        hints: s.hints,
        permission_subject: s.permission_subject.clone(),
    }
}
