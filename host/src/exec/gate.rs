//! The gate stage: the permission decision for a validated input and, when it says `ask`, the
//! question to the call's approver. Every way the question can end (approved, declined,
//! unanswered, mismatched, cancelled) is decided here, once, for every front end: its own audit
//! value and its own sentence to the model. Who is asked, and the asking itself, are
//! [`super::asking`]'s.

use serde_json::Value;

use super::asking::{Asking, keep_informed};
use super::health::{Asker, ToolsHealth};
use super::live::{Live, caller_name};
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape::{self, audit_unavailable};
use super::timing::{Stage, Stopwatch};
use crate::audit::{AuditLog, AuditRecord, Decision as AuditDecision};
use toolhost_call::call::{Answer, ApprovalRequest, ErrorKind};
use toolhost_call::text::OneLine;
use toolhost_call::tool::ToolSpec;
use toolhost_gate::gate::{Decision, Permissions};

/// What the gate let through.
pub(super) enum Passed {
    /// Allowed by a rule or mode.
    Allowed,
    /// Approved by a person: the sandbox's ask areas open at the call's subject.
    Approved,
}

/// The gate stage, over the breakers (nobody is asked about a call they would refuse), the
/// questions' routes, the live calls (which show a call waiting) and the audit log (a question is
/// recorded before it is asked).
pub(super) struct Gate<'a> {
    pub(super) health: &'a ToolsHealth,
    pub(super) asking: Asking<'a>,
    pub(super) live: &'a Live,
    pub(super) audit: &'a AuditLog,
}

/// The tool a call is judged for: its spec and the plugin that serves it.
pub(super) struct Judged<'a> {
    pub(super) spec: &'a ToolSpec,
    pub(super) plugin: &'a str,
    pub(super) permissions: &'a Permissions,
}

impl Gate<'_> {
    /// Judge `input` for `tool`, asking `req`'s approver when the decision is `ask`; the call's
    /// end when it may not run.
    pub(super) async fn judge(
        &self,
        req: &CallRequest,
        tool: &Judged<'_>,
        input: &Value,
        asker: &Asker,
        record: &mut AuditRecord,
        clock: &mut Stopwatch,
    ) -> Result<Passed, Finished> {
        let call_id = record.call_id.clone();
        let fail = |kind: ErrorKind, content: String| Finished::failed(&call_id, kind, content);
        let name = &tool.spec.name;
        let decision = tool.permissions.decide(tool.spec, input);
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
        if let Some((kind, message)) = self.health.refusal(name, asker, record) {
            return Err(fail(kind, message));
        }
        let asking = &self.asking;
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
            plugin: tool.plugin.to_owned(),
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
        if self.audit.write_begin(record).is_err() && self.audit.refuses_on_failure() {
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
        self.live.set_waiting(&call_id, true);
        let asked = tokio::select! {
            a = asking.ask((&call_id, &caller, req.origin), &request, &askees) => Some(a),
            () = req.cancel.cancelled() => None,
            () = keep_informed(req.progress.as_ref(), &place) => None,
        };
        self.live.set_waiting(&call_id, false);
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

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;
    use toolhost_call::call::Approver;
    use toolhost_config::config::ApprovalRoute;

    use super::*;
    use crate::exec::fixture::Fixture;

    /// An approver that answers `answer` and counts the questions it was put.
    struct Fake {
        answer: Answer,
        asked: AtomicUsize,
    }

    impl Approver for Fake {
        fn approve<'a>(
            &'a self,
            _: &'a ApprovalRequest,
        ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            let answer = self.answer.clone();
            Box::pin(async move { answer })
        }
    }

    fn fake(answer: Answer) -> Arc<Fake> {
        Arc::new(Fake {
            answer,
            asked: AtomicUsize::new(0),
        })
    }

    /// Judge `{"x": 2}` for `double` under `config`, asked of `approver`: what passed or the end
    /// the call was given, and its record.
    async fn judge(
        config: &str,
        approver: Option<Arc<dyn Approver>>,
    ) -> (Result<Passed, Finished>, AuditRecord, Fixture) {
        let fixture = Fixture::open(config).await;
        let s = &fixture.services;
        let tool = fixture.tool();
        let input = json!({ "x": 2 });
        let req = CallRequest {
            tool: tool.spec.name.clone(),
            approver,
            ..CallRequest::default()
        };
        let mut record = s.audit.begin("call-1", "test", &req.tool, &input);
        let gate = Gate {
            health: &s.health,
            asking: Asking::new(
                ApprovalRoute::Both,
                &s.questions,
                &s.live,
                Duration::from_secs(5),
            ),
            live: &s.live,
            audit: &s.audit,
        };
        let judged = Judged {
            spec: &tool.spec,
            plugin: &tool.plugin.name,
            permissions: &tool.plugin.policy.permissions,
        };
        let mut clock = Stopwatch::start();
        let asker = Asker::default();
        let passed = gate
            .judge(&req, &judged, &input, &asker, &mut record, &mut clock)
            .await;
        (passed, record, fixture)
    }

    fn denied(passed: Result<Passed, Finished>) -> String {
        let Err(finished) = passed else {
            panic!("the call passed");
        };
        assert_eq!(finished.outcome.error_kind(), Some(ErrorKind::Denied));
        finished.outcome.content
    }

    #[tokio::test]
    async fn an_allow_rule_lets_the_call_through_and_names_itself() {
        let (passed, record, _) = judge("[permissions]\nallow = [\"double\"]", None).await;
        assert!(matches!(passed, Ok(Passed::Allowed)));
        let AuditDecision::Allowed { by } = record.decision else {
            panic!("{:?}", record.decision);
        };
        assert!(by.contains("double"), "{by}");
    }

    #[tokio::test]
    async fn deny_wins_over_allow_and_no_one_is_asked() {
        let approver = fake(Answer::Approved);
        let config = "[permissions]\nallow = [\"double\"]\nask = [\"double\"]\ndeny = [\"double\"]";
        let (passed, record, _) = judge(config, Some(approver.clone())).await;
        let message = denied(passed);
        assert!(message.contains("double"), "{message}");
        assert!(matches!(record.decision, AuditDecision::Denied { .. }));
        assert_eq!(approver.asked.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn an_ask_is_recorded_before_it_is_put_and_its_answer_decides() {
        let approver = fake(Answer::Approved);
        let (passed, record, fixture) =
            judge("[permissions]\nask = [\"double\"]", Some(approver.clone())).await;
        assert!(matches!(passed, Ok(Passed::Approved)));
        assert!(matches!(
            record.decision,
            AuditDecision::Asked { answer: true, .. }
        ));
        assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
        // The begin line went out before the question: a daemon killed meanwhile still shows it.
        let lines = fixture.audit_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["event"], "begin");
        assert_eq!(lines[0]["call_id"], "call-1");

        let (passed, record, _) = judge(
            "[permissions]\nask = [\"double\"]",
            Some(fake(Answer::Declined)),
        )
        .await;
        assert!(denied(passed).contains("declined"));
        assert!(matches!(
            record.decision,
            AuditDecision::Asked { answer: false, .. }
        ));

        let (passed, record, _) = judge(
            "[permissions]\nask = [\"double\"]",
            Some(fake(Answer::Unanswered("the client went away".into()))),
        )
        .await;
        denied(passed);
        assert!(matches!(record.decision, AuditDecision::Unanswered { .. }));
    }

    #[tokio::test]
    async fn an_ask_with_nobody_to_ask_is_denied_at_once_saying_how_to_allow_it() {
        // No client approver, and the console is not served: nobody can answer.
        let (passed, record, fixture) = judge("[permissions]\nask = [\"double\"]", None).await;
        let message = denied(passed);
        assert!(message.contains("no approver"), "{message}");
        assert!(message.contains("without asking"), "{message}");
        let AuditDecision::Denied { by } = record.decision else {
            panic!("{:?}", record.decision);
        };
        assert!(by.ends_with("(no approver)"), "{by}");
        assert!(
            fixture.audit_lines().is_empty(),
            "nothing was asked, so nothing begun"
        );
    }
}
