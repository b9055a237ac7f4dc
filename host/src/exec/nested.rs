//! Tool calls a plugin makes from inside its sandbox (a `call-tools` grant): each one a whole call
//! through this pipeline, as the caller of the call that made it, with its approver and its
//! admission, under its deadline, and recorded with that call as its parent.
//!
//! The calls under one call from a front end form a tree that shares one budget: at most
//! `[limits] nested-calls` calls in all and `nesting-depth` levels, both read from the root's
//! plugin. A call over budget is refused and recorded like every refused call. Nested calls run
//! as tasks of their own, so that a calling call stopped mid-way (its deadline, a cancel, a
//! shutdown) cancels them without losing their records.

use std::sync::{Arc, Weak};
use std::time::Instant;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::admission::{Deadline, Ticket};
use super::nesting::Nested;
use super::request::CallRequest;
use super::services::Services;
use crate::registry::Tool;
use crate::sandbox::{GuestOutput, GuestSpec, NestedCalls, NestedFailure};
use toolhost_call::call::{Approver, CallOutcome, CallStatus, ErrorKind};
use toolhost_gate::caller::Caller;

/// What a nested call needs of the pipeline that runs it: named here and implemented by the
/// pipeline, so that nested calls depend on no stage.
pub(super) trait Runner: Send + Sync + 'static {
    /// The services the runner's calls share.
    fn services(&self) -> &Services;
    /// Run `req` through every stage, to its record.
    fn run(self: Arc<Self>, req: CallRequest) -> BoxFuture<'static, CallOutcome>;
    /// End `req` as `kind` without running it, recorded like every refused call.
    fn reject(&self, req: &CallRequest, kind: ErrorKind, content: String) -> CallOutcome;
}

/// The nested-call service one call lends its plugin: everything a nested call inherits.
pub(super) struct Inherited {
    pub(super) pipeline: Weak<dyn Runner>,
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
        let services = pipeline.services();
        let catalog = services.registry.catalog();
        catalog
            .tools
            .values()
            .filter(|t| services.sees(self.caller.as_deref(), &t.spec.name))
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
        let running = tokio::spawn(pipeline.run(req));
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
