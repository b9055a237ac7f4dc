//! The execute and shape stages: the begin line, the sandbox run of an admitted call, and its
//! report turned into an outcome a model can act on. Knows no front end and no gate.

use std::sync::Arc;

use serde_json::Value;

use super::nested::{Inherited, Nested};
use super::pipeline::Pipeline;
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape::{self, audit_unavailable, error, file_notes, network_notes};
use super::timing::{SandboxTimes, Stage, Stopwatch};
use crate::audit::{AuditRecord, Decision as AuditDecision};
use crate::registry::Tool;
use crate::sandbox::{CallIo, GuestError, NestedCalls, RunError};
use toolhost_call::call::ErrorKind;
use toolhost_call::text::OneLine;
use toolhost_gate::gate::PathGuard;
use toolhost_gate::grants::Caps;
use toolhost_gate::network::SecretGrant;

impl Pipeline {
    /// Run `input` through `tool`'s plugin in a fresh sandbox with `files` and `caps`, and shape
    /// what it returned.
    pub(super) async fn execute(
        &self,
        tool: &Arc<Tool>,
        input: Value,
        req: &CallRequest,
        record: &AuditRecord,
        clock: &mut Stopwatch,
        (files, caps, credentials): (Arc<PathGuard>, Caps, Vec<SecretGrant>),
    ) -> Finished {
        let call_id = record.call_id.as_str();
        // Recorded before the plugin runs, so that a daemon killed mid-call still shows the call
        // (unless it was recorded before its approval question).
        let begun = matches!(record.decision, AuditDecision::Asked { .. });
        if !begun && self.audit().write_begin(record).is_err() && self.audit().refuses_on_failure()
        {
            return Finished::failed(call_id, ErrorKind::AuditUnavailable, audit_unavailable());
        }
        let plugin = &tool.plugin;
        // Through serde_json's writer, not `Display`'s formatter, which costs twice as much; a
        // `Value` always encodes.
        let input_text = serde_json::to_string(&input).unwrap_or_default();
        clock.mark(Stage::Instantiate);
        // Boxed: the sandbox's part of the call is most of its future's size (wasmtime's
        // instantiation and call), which every move of the pipeline's future would copy.
        let report = Box::pin(self.registry().sandbox().call(
            &plugin.prepared,
            &tool.guest_name,
            input_text,
            CallIo {
                files,
                progress: req.progress.clone(),
                cancel: &req.cancel,
                caps,
                tools: self.nested_calls(tool, req, call_id),
                credentials,
            },
        ))
        .await;
        clock.sandbox(SandboxTimes {
            instantiate: report.instantiate,
            instance: report.instance,
            ran: report.elapsed,
            store_drop: report.store_drop,
        });
        if !report.stderr.is_empty() || !report.stdout.is_empty() {
            tracing::debug!(plugin = %OneLine(&plugin.name), call_id, stdout = %OneLine(&report.stdout),
                stderr = %OneLine(&report.stderr), dropped = report.stdio_dropped, "guest output");
        }
        let (fuel, peak_memory) = (Some(report.fuel_used), Some(report.peak_memory));
        let name = &tool.spec.name;
        let mut detail = None;
        let (outcome, truncated) = match report.result {
            Ok(Ok(out)) => {
                shape::success(self.checks(), tool, out.content, out.structured, call_id).await
            }
            Ok(Err(GuestError::InvalidInput(m))) => (
                error(
                    call_id,
                    ErrorKind::InvalidInput,
                    format!("Invalid input for tool '{name}':\n- {m}"),
                ),
                false,
            ),
            Ok(Err(GuestError::Failed(m))) => {
                let mut text = format!(
                    "Tool '{name}' failed: {m}{}{}",
                    file_notes(&report.files),
                    network_notes(&report.network)
                );
                let cut = shape::truncate(&mut text, plugin.policy.output_bytes);
                (error(call_id, ErrorKind::ToolFailed, text), cut)
            }
            Err(e) => {
                let kind = match &e {
                    RunError::Timeout(_) => ErrorKind::Timeout,
                    RunError::OutOfFuel(_) => ErrorKind::OutOfFuel,
                    RunError::MemoryLimit { .. } => ErrorKind::MemoryLimit,
                    RunError::Trap(_) => ErrorKind::Trap,
                    RunError::Cancelled => ErrorKind::Cancelled,
                    RunError::Setup(_) => ErrorKind::Internal,
                };
                if let RunError::Setup(why) = &e {
                    // Host paths and OS errors are the operator's business: the log and the
                    // audit record get them, the model a sentence that reveals nothing.
                    tracing::error!(plugin = %OneLine(&plugin.name), call_id, tool = %OneLine(name),
                        "the call could not be set up: {}", OneLine(why));
                    detail = Some(why.clone());
                }
                let text = shape::run_error(name, &e)
                    + &file_notes(&report.files)
                    + &network_notes(&report.network);
                (error(call_id, kind, text), false)
            }
        };
        clock.mark(Stage::Shape);
        let mut refused = report.files;
        refused.extend(report.network);
        Finished {
            outcome,
            fuel,
            peak_memory,
            truncated,
            admitted: None,
            detail,
            refused,
        }
    }
}

impl Pipeline {
    /// The nested-call service for a call of `tool`, when its plugin may call tools at all.
    fn nested_calls(
        &self,
        tool: &Tool,
        req: &CallRequest,
        call_id: &str,
    ) -> Option<Arc<dyn NestedCalls>> {
        let policy = &tool.plugin.policy;
        if policy.grants.calls.is_empty() {
            return None;
        }
        Some(Arc::new(Inherited {
            pipeline: self.me(),
            parent_id: call_id.to_owned(),
            origin: req.origin,
            caller: req.caller.clone(),
            approver: req.approver.clone(),
            admitted: req.admitted.clone(),
            trace: req.trace.clone(),
            deadline: req.deadline,
            place: req
                .nested
                .clone()
                .unwrap_or_else(|| Nested::root(policy.nesting)),
        }))
    }
}
