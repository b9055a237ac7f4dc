//! The gate stage: the permission decision for a validated input and, when it says `ask`, the
//! question to the call's approver. Every way the question can end (approved, declined,
//! unanswered, mismatched, cancelled) is decided here, once, for every front end: its own audit
//! value and its own sentence to the model.

use serde_json::Value;

use super::health::Asker;
use super::live::caller_name;
use super::pipeline::Pipeline;
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape::{self, audit_unavailable};
use super::timing::{Stage, Stopwatch};
use crate::audit::{AuditRecord, Decision as AuditDecision};
use crate::registry::Tool;
use toolhost_policy::call::{Answer, ApprovalRequest, Approver, ErrorKind, Progress};
use toolhost_policy::config::ApprovalRoute;
use toolhost_policy::gate::{Decision, Permissions};
use toolhost_policy::text::OneLine;

/// How often a call waiting for an approval tells its client it is still waiting.
const STILL_WAITING: std::time::Duration = std::time::Duration::from_secs(5);

/// Tell the client, if it asked for progress, that its call waits for an approval from `place`:
/// at once and every [`STILL_WAITING`], so that clients that reset their timeout on progress
/// keep waiting. Never returns.
async fn keep_informed(req: &CallRequest, place: &str) {
    let Some(sink) = &req.progress else {
        return std::future::pending().await;
    };
    let message = format!("waiting for approval from {place}");
    let mut every = tokio::time::interval(STILL_WAITING);
    loop {
        every.tick().await;
        // Nothing done yet: the relay sends each as a value that still increases.
        sink(Progress {
            done: 0,
            total: None,
            message: message.clone(),
        });
    }
}

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
        let route = self.config().console.approvals;
        let client = req.approver.as_ref().filter(|_| route.asks_client());
        let questions = self.questions();
        // The console is asked only while someone can answer there, unless the operator said
        // to wait for one anyway (`approvals = "console"`): nobody waits on an empty room.
        let console = questions.is_open()
            && match route {
                ApprovalRoute::Console => true,
                ApprovalRoute::Both => questions.attended(),
                ApprovalRoute::Client => false,
            };
        if client.is_none() && !console {
            record.decision = AuditDecision::Denied {
                by: format!("{by} (no approver)"),
            };
            let mut message = decision.unapproved_message().unwrap_or_default();
            if let Some(address) = questions.address().filter(|_| route.asks_console()) {
                message.push_str(&format!(
                    "; or have an operator open the console at {address} (nobody was there to \
                     answer)"
                ));
            }
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
        let place = match (console, questions.address(), client.is_some()) {
            (true, Some(address), true) => format!("the client and the console at {address}"),
            (true, Some(address), false) => format!("the console at {address}"),
            (true, None, _) => "the console".to_owned(),
            (false, _, _) => "the client".to_owned(),
        };
        tracing::info!(
            call_id = %call_id,
            tool = %OneLine(name),
            caller = %OneLine(&caller),
            "waiting for approval from {place}"
        );
        self.live().set_waiting(&call_id, true);
        let asked = tokio::select! {
            a = self.ask(req, &call_id, &request, client, console) => Some(a),
            () = req.cancel.cancelled() => None,
            () = keep_informed(req, &place) => None,
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

    /// Put `request` to the client's approver and to the console, as the gate routes it; the
    /// first answer wins, and a side that cannot answer (its question timed out, the client
    /// failed) leaves the question to the other. With the answer, the operator who gave it.
    async fn ask(
        &self,
        req: &CallRequest,
        call_id: &str,
        request: &ApprovalRequest,
        client: Option<&std::sync::Arc<dyn Approver>>,
        console: bool,
    ) -> (Answer, Option<String>) {
        let caller = caller_name(req.caller.as_deref());
        let timeout = self.config().server.approval_timeout;
        let from_client = async {
            match client {
                Some(a) => (a.approve(request).await, None),
                None => std::future::pending().await,
            }
        };
        let from_console = async {
            if console {
                let call = (call_id, caller.as_str(), req.origin);
                self.questions()
                    .ask(self.live(), call, request, timeout)
                    .await
            } else {
                std::future::pending().await
            }
        };
        tokio::pin!(from_client, from_console);
        let (mut client_open, mut console_open) = (client.is_some(), console);
        loop {
            let answer = tokio::select! {
                a = &mut from_client, if client_open => { client_open = false; a }
                a = &mut from_console, if console_open => { console_open = false; a }
            };
            let undecided = matches!(answer.0, Answer::Unanswered(_));
            if !undecided || !(client_open || console_open) {
                return answer;
            }
        }
    }
}
