//! The execute and shape stages: the begin line, the sandbox run of an admitted call, and its
//! report turned into an outcome a model can act on. Knows no front end and no gate.

use std::sync::{Arc, Weak};

use serde_json::Value;

use super::checks::Checks;
use super::nested::{Inherited, Runner};
use super::nesting::Nested;
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape::{self, audit_unavailable, error, file_notes, network_notes};
use super::timing::{SandboxTimes, Stage, Stopwatch};
use crate::audit::{AuditLog, AuditRecord, Decision as AuditDecision};
use crate::registry::Tool;
use crate::sandbox::{CallIo, GuestError, GuestOutput, NestedCalls, RunError, RunReport, Sandbox};
use toolhost_call::call::ErrorKind;
use toolhost_call::text::OneLine;
use toolhost_gate::gate::PathGuard;
use toolhost_gate::grants::Caps;
use toolhost_gate::network::SecretGrant;

/// The execute stage, over the sandbox and the audit log (a call's begin line is written before
/// it runs), lending the plugin calls through the pipeline when it may make them.
pub(super) struct Execute<'a> {
    pub(super) sandbox: &'a Sandbox,
    pub(super) audit: &'a AuditLog,
    /// The pipeline, for the nested calls a plugin makes (which outlive a borrow of it).
    pub(super) pipeline: &'a Weak<dyn Runner>,
    pub(super) shape: Shape<'a>,
}

/// The shape stage: a sandbox's report turned into the outcome a model reads.
pub(super) struct Shape<'a> {
    /// Where a large structured output's check against the output schema runs.
    pub(super) checks: &'a Checks,
}

impl Execute<'_> {
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
        if !begun && self.audit.write_begin(record).is_err() && self.audit.refuses_on_failure() {
            return Finished::failed(call_id, ErrorKind::AuditUnavailable, audit_unavailable());
        }
        let plugin = &tool.plugin;
        // Through serde_json's writer, not `Display`'s formatter, which costs twice as much; a
        // `Value` always encodes.
        let input_text = serde_json::to_string(&input).unwrap_or_default();
        clock.mark(Stage::Instantiate);
        // Boxed: the sandbox's part of the call is most of its future's size (wasmtime's
        // instantiation and call), which every move of the pipeline's future would copy.
        let report = Box::pin(self.sandbox.call(
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
        let finished = self.shape.shape(tool, report, call_id).await;
        clock.mark(Stage::Shape);
        finished
    }
}

impl Shape<'_> {
    /// The outcome of a call of `tool` that the sandbox ran as `report` says.
    pub(super) async fn shape(
        &self,
        tool: &Arc<Tool>,
        report: RunReport<Result<GuestOutput, GuestError>>,
        call_id: &str,
    ) -> Finished {
        let plugin = &tool.plugin;
        if !report.stderr.is_empty() || !report.stdout.is_empty() {
            tracing::debug!(plugin = %OneLine(&plugin.name), call_id, stdout = %OneLine(&report.stdout),
                stderr = %OneLine(&report.stderr), dropped = report.stdio_dropped, "guest output");
        }
        let (fuel, peak_memory) = (Some(report.fuel_used), Some(report.peak_memory));
        let name = &tool.spec.name;
        let mut detail = None;
        let (outcome, truncated) = match report.result {
            Ok(Ok(out)) => {
                shape::success(self.checks, tool, out.content, out.structured, call_id).await
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

impl Execute<'_> {
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
            pipeline: self.pipeline.clone(),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::exec::fixture::Fixture;
    use crate::exec::services::Services;

    /// A pipeline for a plugin that makes no nested calls: never asked anything.
    struct NoRunner;

    impl Runner for NoRunner {
        fn services(&self) -> &Services {
            unreachable!("double makes no nested calls")
        }
        fn run(
            self: Arc<Self>,
            _: CallRequest,
        ) -> futures_util::future::BoxFuture<'static, toolhost_call::call::CallOutcome> {
            unreachable!("double makes no nested calls")
        }
        fn reject(
            &self,
            _: &CallRequest,
            _: ErrorKind,
            _: String,
        ) -> toolhost_call::call::CallOutcome {
            unreachable!("double makes no nested calls")
        }
    }

    /// Runs `double` on `{"x": x}` with `caps`.
    async fn execute(fixture: &Fixture, x: u32, caps: Caps) -> Finished {
        let s = &fixture.services;
        let tool = fixture.tool();
        let req = CallRequest {
            tool: tool.spec.name.clone(),
            ..CallRequest::default()
        };
        let input = json!({ "x": x });
        let record = s.audit.begin("call-1", "test", &req.tool, &input);
        let nobody: Weak<dyn Runner> = Weak::<NoRunner>::new();
        let stage = Execute {
            sandbox: s.registry.sandbox(),
            audit: &s.audit,
            pipeline: &nobody,
            shape: Shape { checks: &s.checks },
        };
        let mut clock = Stopwatch::start();
        let grants = (tool.files.clone(), caps, Vec::new());
        stage
            .execute(&tool, input, &req, &record, &mut clock, grants)
            .await
    }

    #[tokio::test]
    async fn runs_the_tool_after_its_begin_line_and_shapes_its_answer() {
        let fixture = Fixture::open("").await;
        let finished = execute(&fixture, 21, Caps::default()).await;
        assert_eq!(
            finished.outcome.error_kind(),
            None,
            "{}",
            finished.outcome.content
        );
        assert!(
            finished.outcome.content.contains("42"),
            "{}",
            finished.outcome.content
        );
        assert!(finished.fuel.is_some_and(|f| f > 0));
        let lines = fixture.audit_lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["event"], "begin");
    }

    #[tokio::test]
    async fn a_lowered_fuel_cap_stops_the_tool_as_out_of_fuel() {
        let fixture = Fixture::open("").await;
        let caps = Caps {
            fuel: Some(1),
            ..Caps::default()
        };
        let finished = execute(&fixture, 21, caps).await;
        assert_eq!(finished.outcome.error_kind(), Some(ErrorKind::OutOfFuel));
        assert!(
            finished.outcome.content.contains("fuel"),
            "{}",
            finished.outcome.content
        );
    }
}
