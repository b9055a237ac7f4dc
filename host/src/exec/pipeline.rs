//! The pipeline: admit -> find -> validate -> gate -> execute -> shape -> record, for every call
//! from every front end. It decides admission (shutdown, in-flight work), deadlines and every
//! outcome; front ends hand it a [`CallRequest`] and translate the [`CallOutcome`].

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::admit::Admit;
use super::asking::Asking;
use super::credentials::Brought;
use super::execution::{Execute, Shape};
use super::find::{Find, Found};
use super::gate::{Gate, Judged, Passed};
use super::health::Asker;
use super::nested::Runner;
use super::recorder::{Finished, Recorder, Started};
use super::request::CallRequest;
use super::services::Services;
use super::shape;
use super::timing::{Stage, StageTimes, Stopwatch};
use super::validation::Validate;
use crate::audit::{AuditRecord, Decision as AuditDecision};
use crate::registry::Tool;
use toolhost_call::call::{CallOutcome, ErrorKind};
use toolhost_gate::breaker::Lowered;
use toolhost_gate::task::owner_of;

/// Runs calls. Shared by every front end (`Arc<Pipeline>`); all methods take `&self`. Each call
/// goes through the stages in order, each a type borrowing the [`Services`] it needs.
pub struct Pipeline {
    services: Arc<Services>,
    /// This pipeline, for the nested calls it lends plugins (which outlive a borrow of it).
    me: Weak<dyn Runner>,
}

/// Why a call stopped before it ended by itself, when the pipeline stopped it.
#[derive(Clone, Copy)]
enum Stopped {
    /// The request's deadline passed.
    Deadline(Duration),
    /// The shutdown's grace period ended.
    Shutdown,
}

impl Pipeline {
    /// A pipeline over `services`.
    pub fn new(services: Arc<Services>) -> Arc<Self> {
        Arc::new_cyclic(|me: &Weak<Self>| Self {
            services,
            me: me.clone(),
        })
    }

    /// The services this pipeline's stages borrow.
    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    fn recorder(&self) -> Recorder<'_> {
        let s = &*self.services;
        Recorder {
            audit: &s.audit,
            live: &s.live,
            stats: &s.stats,
        }
    }

    /// Run one call through every stage. Never panics on bad input or a bad plugin: every failure is an
    /// outcome with `is_error` set, and every call leaves exactly one end record in the audit log
    /// (and, when it passes the gate, a begin line written before it runs).
    pub async fn call(&self, req: CallRequest) -> CallOutcome {
        // Boxed: a call's state is over 3 KB, and front ends hold it in tasks that the runtime moves
        // several times (rmcp spawns one per request); moving a pointer instead saved ~100 KB of
        // memcpy per MCP call (callgrind).
        Box::pin(self.timed(req)).await.0
    }

    /// [`Self::call`], also saying where the time went, stage by stage (for benchmarks and profiling).
    pub async fn call_timed(&self, req: CallRequest) -> (CallOutcome, StageTimes) {
        self.timed(req).await
    }

    /// End a call a front end could not even hand over as a call (a batch entry that does not
    /// parse, a batch task that failed) as `kind`, recorded like every other outcome.
    pub fn reject(&self, req: &CallRequest, kind: ErrorKind, content: String) -> CallOutcome {
        let recorder = self.recorder();
        let mut started = recorder.start(req);
        self.name_plugin(req, &mut started.record);
        let finished = Finished::failed(&started.record.call_id, kind, content);
        recorder.record(req, started, finished).0
    }

    /// Names the plugin on `record` when `req`'s caller may see its tool: stats then count a
    /// refused call under the tool, not under the label for unknown names.
    fn name_plugin(&self, req: &CallRequest, record: &mut AuditRecord) {
        let catalog = self.services.registry.catalog();
        if let Some(tool) = catalog
            .get(&req.tool)
            .filter(|_| self.services.sees(req.caller.as_deref(), &req.tool))
        {
            note_plugin(record, tool);
        }
    }

    async fn timed(&self, mut req: CallRequest) -> (CallOutcome, StageTimes) {
        let recorder = self.recorder();
        let services = &*self.services;
        let mut started = recorder.start(&req);
        // Hashed for the record; from here on only the checks below read it.
        let input = std::mem::take(&mut req.input);
        started.clock.mark(Stage::Begin);
        let call_id = started.record.call_id.clone();
        let admit = Admit {
            admission: &services.admission,
        };
        if let Err((kind, message)) = admit.admit(&mut req) {
            self.name_plugin(&req, &mut started.record);
            let refused = Finished::failed(&call_id, kind, message);
            return recorder.record(&req, started, refused);
        }
        // The caller's token stops the call; so do the deadline and the end of the shutdown's
        // grace, through a child of it, so that the three can be told apart afterwards.
        let caller = req.cancel.clone();
        let stop = caller.child_token();
        req.cancel = stop.clone();
        let listed = services.live.start(
            &call_id,
            (
                &req.tool,
                req.caller.as_ref(),
                req.origin,
                req.parent_id.as_deref(),
            ),
            stop.clone(),
        );
        let mut stopped = None;
        let mut finished = {
            let Started { record, clock, .. } = &mut started;
            let run = self.run(&req, input, record, clock);
            tokio::pin!(run);
            let deadline = async {
                match req.deadline {
                    Some(d) => tokio::time::sleep_until(d.at().into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                finished = &mut run => finished,
                () = deadline => {
                    stopped = req.deadline.map(|d| Stopped::Deadline(d.limit()));
                    stop.cancel();
                    run.await
                }
                () = services.admission.calls().cancelled() => {
                    stopped = Some(Stopped::Shutdown);
                    stop.cancel();
                    run.await
                }
            }
        };
        // What the tool's breaker learns: how the sandbox and the tool ended the call, before a
        // front end's deadline (which also counts time spent waiting for an approval).
        let tool_kind = finished.outcome.error_kind();
        if tool_kind == Some(ErrorKind::Cancelled) {
            // One place says why a cancelled call stopped: the caller, the deadline, the
            // shutdown, or a question handed to the client. The caller sees the same kind the
            // audit log and stats record.
            let (kind, message) = match stopped.filter(|_| !caller.is_cancelled()) {
                Some(Stopped::Deadline(limit)) => {
                    (ErrorKind::Timeout, shape::request_timeout(&req.tool, limit))
                }
                Some(Stopped::Shutdown) => (ErrorKind::Cancelled, shape::shut_down(&req.tool)),
                None if listed.cancelled_by().is_some() => {
                    let operator = listed.cancelled_by().unwrap_or_default();
                    finished.detail = Some(format!("cancelled by the operator {operator}"));
                    (
                        ErrorKind::Cancelled,
                        shape::cancelled_by_operator(&req.tool),
                    )
                }
                None if req.approver.as_ref().is_some_and(|a| a.deferred()) => {
                    started.record.decision = AuditDecision::Deferred;
                    (ErrorKind::InputRequired, shape::input_required(&req.tool))
                }
                None => (ErrorKind::Cancelled, shape::cancelled(&req.tool)),
            };
            finished.outcome = shape::error(&call_id, kind, message);
        }
        if let Some(admitted) = finished.admitted.take() {
            admitted.finish(tool_kind, &mut started.record, &mut finished.outcome);
        }
        recorder.record(&req, started, finished)
    }

    async fn run(
        &self,
        req: &CallRequest,
        input: Value,
        record: &mut AuditRecord,
        clock: &mut Stopwatch,
    ) -> Finished {
        let services = &*self.services;
        let call_id = record.call_id.clone();
        let fail = |kind: ErrorKind, content: String| Finished::failed(&call_id, kind, content);

        // Find: who asks, and the tool they mean.
        let find = Find {
            registry: &services.registry,
            callers: &services.config.callers,
            audit: &services.audit,
            stopping: services.admission.stopping(),
        };
        let Found { tool, profile } = match find.find(req).await {
            Ok(found) => found,
            Err((kind, message)) => return fail(kind, message),
        };
        let plugin = &tool.plugin;
        note_plugin(record, &tool);
        clock.mark(Stage::Find);

        // Fair shares: the caller's own, and its share of this tool; before any work.
        let of_tool = plugin
            .policy
            .tools
            .get(&tool.guest_name)
            .and_then(|o| o.quota());
        // The profile's caps, lowered to the fuel the call reserves from a fuel budget: calls
        // started together can never spend more than the budget holds.
        let mut caps = profile.map(|p| p.caps()).unwrap_or_default();
        let fuel = plugin.policy.limits.capped(caps).fuel;
        let mut share = match services
            .quotas
            .admit(
                req.caller.as_deref(),
                &tool.spec.name,
                (profile.and_then(|p| p.quota.as_ref()), of_tool),
                fuel,
            )
            .await
        {
            Ok(held) => held,
            Err(refused) => {
                let mut finished = fail(ErrorKind::RateLimited, refused.message);
                finished.outcome.retry_after = refused.retry_after;
                return finished;
            }
        };

        // Validate (coercions included), off the runtime unless surely quick.
        let validate = Validate {
            checks: &services.checks,
        };
        let input = match validate.validate(&tool, input, req, record).await {
            Ok(input) => input,
            Err(finished) => return finished,
        };
        clock.mark(Stage::Validate);

        // Who asks, as the breakers tell callers apart: failures under limits the caller's
        // profile lowered count in its own breaker, never in the tool's that everyone shares.
        if let Some(reserved) = share.fuel() {
            caps.fuel = Some(reserved);
        }
        let lowered = Lowered::new(&plugin.policy.limits, &caps);
        let asker = Asker {
            key: lowered.any().then(|| owner_of(req.caller.as_deref())),
            lowered,
        };

        // Gate.
        let layered = profile.map(|p| plugin.policy.permissions.for_caller(&p.rules));
        let permissions = layered.as_ref().unwrap_or(&plugin.policy.permissions);
        let gate = Gate {
            health: &services.health,
            asking: Asking::new(
                services.config.console.approvals,
                &services.questions,
                &services.live,
                services.config.server.approval_timeout,
            ),
            live: &services.live,
            audit: &services.audit,
        };
        let judged = Judged {
            spec: &tool.spec,
            plugin: &plugin.name,
            permissions,
        };
        let passed = match gate
            .judge(req, &judged, &input, &asker, record, clock)
            .await
        {
            Ok(passed) => passed,
            Err(finished) => return finished,
        };
        clock.mark(Stage::Gate);

        // The caller's own credentials, when the plugin's secrets want any.
        let wanted = &plugin.policy.grants.caller_secrets;
        let brought = if wanted.is_empty() {
            Brought::default()
        } else {
            match services
                .credentials
                .bring(&plugin.name, wanted, req.caller.as_deref(), profile)
                .await
            {
                Ok(brought) => brought,
                Err((kind, message)) => return fail(kind, message),
            }
        };
        let Brought { grants, used } = brought;
        record.credentials = used;

        // Execute.
        let Some(_slot) = services.slots.try_take() else {
            return fail(
                ErrorKind::Busy,
                format!(
                    "toolhost is busy ({} calls running, the configured maximum); try again shortly.",
                    services.slots.max()
                ),
            );
        };
        // The tool's breaker: a tool that keeps failing is suspended for a while. Admitted with a
        // slot in hand, so that a trial call always runs.
        let admitted = match services.health.admit(&tool, asker, record) {
            Ok(admitted) => admitted,
            Err((kind, message)) => return fail(kind, message),
        };
        // A profile's path rules hold in the sandbox's filesystem too; its limits lower the plugin's.
        // An approved call may reach the ask areas at its subject, and only there.
        let files = match passed {
            Passed::Approved => Arc::new(permissions.approved_guard(&tool.spec, &input)),
            Passed::Allowed => match profile {
                Some(p) if p.rules.has_path_rules() => {
                    Arc::new(permissions.path_guard(&tool.spec.name))
                }
                _ => tool.files.clone(),
            },
        };
        let execute = Execute {
            sandbox: services.registry.sandbox(),
            audit: &services.audit,
            pipeline: &self.me,
            shape: Shape {
                checks: &services.checks,
            },
        };
        let mut finished = execute
            .execute(&tool, input, req, record, clock, (files, caps, grants))
            .await;
        finished.admitted = Some(admitted);
        share.settle(finished.fuel.unwrap_or(0));
        finished
    }
}

impl Runner for Pipeline {
    fn services(&self) -> &Services {
        &self.services
    }

    fn run(self: Arc<Self>, req: CallRequest) -> BoxFuture<'static, CallOutcome> {
        Box::pin(async move { self.call(req).await })
    }

    fn reject(&self, req: &CallRequest, kind: ErrorKind, content: String) -> CallOutcome {
        Pipeline::reject(self, req, kind, content)
    }
}

/// Names `tool`'s plugin, its digest and source on `record`.
fn note_plugin(record: &mut AuditRecord, tool: &Tool) {
    let plugin = &tool.plugin;
    record.plugin = Some(plugin.name.clone());
    record.plugin_digest = Some(plugin.provenance.digest.as_str().to_owned());
    record.plugin_source = Some(plugin.provenance.source.clone());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::exec::fixture::Fixture;

    #[tokio::test]
    async fn a_call_goes_through_every_stage_to_one_begin_and_one_end_line() {
        let fixture = Fixture::open("[permissions]\nallow = [\"double\"]").await;
        let pipeline = Pipeline::new(fixture.services.clone());
        let outcome = pipeline
            .call(CallRequest {
                tool: "double".into(),
                input: json!({ "x": "21" }),
                origin: "test",
                ..CallRequest::default()
            })
            .await;
        assert_eq!(outcome.error_kind(), None, "{}", outcome.content);
        assert!(outcome.content.contains("42"), "{}", outcome.content);
        let lines = fixture.audit_lines();
        let events: Vec<_> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(events, ["begin", "end"]);
        assert_eq!(lines[1]["call_id"], outcome.call_id.as_str());
        assert_eq!(lines[1]["coercions"].as_array().map(Vec::len), Some(1));
        assert_eq!(fixture.services.admission.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_call_refused_at_any_stage_leaves_one_end_line_and_no_begin() {
        let fixture = Fixture::open("[permissions]\ndeny = [\"double\"]").await;
        let pipeline = Pipeline::new(fixture.services.clone());
        let call = |tool: &str, input| CallRequest {
            tool: tool.into(),
            input,
            origin: "test",
            ..CallRequest::default()
        };
        let unknown = pipeline.call(call("nosuch", json!({}))).await;
        assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));
        let invalid = pipeline.call(call("double", json!({ "x": "y" }))).await;
        assert_eq!(invalid.error_kind(), Some(ErrorKind::InvalidInput));
        let denied = pipeline.call(call("double", json!({ "x": 1 }))).await;
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        let lines = fixture.audit_lines();
        let events: Vec<_> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(events, ["end", "end", "end"]);
        let kinds: Vec<_> = lines
            .iter()
            .map(|l| l["error_kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["unknown_tool", "invalid_input", "denied"]);
    }
}
