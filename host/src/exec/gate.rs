//! The gate stage: the permission decision for a validated input and, when it says `ask`, the
//! question to the call's approver. Every way the question can end (approved, declined,
//! unanswered, mismatched, cancelled) is decided here, once, for every front end: its own audit
//! value and its own sentence to the model. Who is asked, and the asking itself, are
//! [`super::asking`]'s.

use serde_json::Value;

use super::asking::{Asking, keep_informed};
use super::health::Asker;
use super::live::caller_name;
use super::pipeline::Pipeline;
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape::{self, audit_unavailable};
use super::timing::{Stage, Stopwatch};
use crate::audit::{AuditRecord, Decision as AuditDecision};
use crate::registry::Tool;
use toolhost_call::call::{Answer, ApprovalRequest, ErrorKind};
use toolhost_call::text::OneLine;
use toolhost_gate::gate::{Decision, Permissions};

/// What the gate let through.
pub(super) enum Passed {
    /// Allowed by a rule or mode.
    Allowed,
    /// Approved by a person: the sandbox's ask areas open at the call's subject.
    Approved,
}

impl Pipeline {
    /// Judge `input` for `tool` under `permissions`, asking `req`'s approver when the decision is
    /// `ask`; the call's end when it may not run.
    pub(super) async fn gate(
        &self,
        req: &CallRequest,
        (tool, permissions, input): (&Tool, &Permissions, &Value),
        asker: &Asker,
        record: &mut AuditRecord,
        clock: &mut Stopwatch,
    ) -> Result<Passed, Finished> {
        let call_id = record.call_id.clone();
        let fail = |kind: ErrorKind, content: String| Finished::failed(&call_id, kind, content);
        let name = &tool.spec.name;
        let decision = permissions.decide(&tool.spec, input);
        let by = match decision.rule() {
            Some(rule) => format!("rule {rule}"),
            None => decision.reason().to_string(),
        };
        let reason = match &decision {
            Decision::Allow { .. } => {
                record.decision = AuditDecision::Allowed { by };
                return Ok(Passed::Allowed);
            }
            Decision::Deny { reason, .. } => {
                record.decision = AuditDecision::Denied { by };
                return Err(fail(
                    ErrorKind::Denied,
                    format!("Permission denied for '{name}': {reason}"),
                ));
            }
            Decision::Ask { reason, .. } => reason,
        };
        // Nobody is asked to approve a call the breaker would refuse.
        if let Some((kind, message)) = self.health().refusal(tool, asker, record) {
            return Err(fail(kind, message));
        }
        let asking = Asking::new(
            self.config().console.approvals,
            self.questions(),
            self.live(),
            self.config().server.approval_timeout,
        );
        let askees = asking.askees(req.approver.as_ref());
        if askees.nobody() {
            record.decision = AuditDecision::Denied {
                by: format!("{by} (no approver)"),
            };
            let mut message = decision.unapproved_message().unwrap_or_default();
            message.push_str(&asking.nobody_there().unwrap_or_default());
            return Err(fail(
                ErrorKind::Denied,
                format!("Permission denied: {message}"),
            ));
        }
        let request = ApprovalRequest {
            tool: name.clone(),
            plugin: tool.plugin.name.clone(),
            subject: tool
                .spec
                .permission_subject
                .as_ref()
                .and_then(|p| input.pointer(p).map(|v| (p.clone(), v.clone()))),
            input: input.clone(),
            reason: reason.clone(),
        };
        // Recorded before asking: a person may take minutes, and the daemon may be killed
        // meanwhile. The begin line is then not written again before the call runs.
        record.decision = AuditDecision::Asking;
        if self.audit().write_begin(record).is_err() && self.audit().refuses_on_failure() {
            return Err(fail(ErrorKind::AuditUnavailable, audit_unavailable()));
        }
        clock.mark(Stage::Gate);
        let caller = caller_name(req.caller.as_deref());
        let place = asking.place(&askees);
        tracing::info!(
            call_id = %call_id,
            tool = %OneLine(name),
            caller = %OneLine(&caller),
            "waiting for approval from {place}"
        );
        self.live().set_waiting(&call_id, true);
        let asked = tokio::select! {
            a = asking.ask((&call_id, &caller, req.origin), &request, &askees) => Some(a),
            () = req.cancel.cancelled() => None,
            () = keep_informed(req.progress.as_ref(), &place) => None,
        };
        self.live().set_waiting(&call_id, false);
        clock.mark(Stage::Approval);
        let Some((answer, operator)) = asked else {
            return Err(fail(ErrorKind::Cancelled, shape::cancelled(name)));
        };
        let (decision, ended) = match answer {
            Answer::Approved => (
                AuditDecision::Asked {
                    answer: true,
                    operator,
                },
                Ok(Passed::Approved),
            ),
            Answer::Declined => (
                AuditDecision::Asked {
                    answer: false,
                    operator,
                },
                Err(shape::declined(name)),
            ),
            Answer::Unanswered(why) => {
                let message = shape::unanswered(name, &why);
                (AuditDecision::Unanswered { why }, Err(message))
            }
            Answer::Mismatched => (AuditDecision::Mismatched, Err(shape::mismatched(name))),
        };
        record.decision = decision;
        ended.map_err(|message| fail(ErrorKind::Denied, message))
    }
}
