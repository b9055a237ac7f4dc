//! The pipeline: find -> validate -> gate -> execute -> shape -> record, for every call from every front end.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::checks::Checks;
use super::health::{Admitted, Asker, ToolsHealth};
use super::quiet::Slots;
use super::request::CallRequest;
use super::shape::{self, audit_unavailable, error, network_notes};
use super::timing::{SandboxTimes, Stage, StageTimes, Stopwatch};
use crate::audit::{AuditLog, AuditRecord, Decision as AuditDecision};
use crate::registry::{Catalog, Registry, Tool};
use crate::sandbox::{CallIo, GuestError, RunError};
use crate::stats::{Stats, UNKNOWN_TOOL};
use crate::telemetry;
use toolhost_policy::breaker::Lowered;
use toolhost_policy::call::{ApprovalRequest, CallOutcome, ErrorKind};
use toolhost_policy::caller::Access;
use toolhost_policy::gate::{Decision, PathGuard, defaults};
use toolhost_policy::grants::Caps;
use toolhost_policy::task::owner_of;
use toolhost_policy::text::OneLine;

/// Runs calls. Shared by every front end (`Arc<Pipeline>`); all methods take `&self`.
pub struct Pipeline {
    registry: Arc<Registry>,
    audit: AuditLog,
    stats: Stats,
    slots: Arc<Slots>,
    /// Where schema checks that are not surely quick run, under a deadline.
    checks: Checks,
    /// Each tool's circuit breaker and recent failures.
    health: ToolsHealth,
}

/// What a finished stage hands to the recorder.
struct Finished {
    outcome: CallOutcome,
    fuel: Option<u64>,
    peak_memory: Option<u64>,
    truncated: bool,
    /// The breaker's admission, when the call was let run: given back with the outcome.
    admitted: Option<Admitted>,
    /// What the operator should know and the caller was told only in general terms (why a call
    /// could not be set up: host paths, OS errors), for the audit record.
    detail: Option<String>,
}

impl Pipeline {
    /// A pipeline over `registry`, recording to `audit`, running at most `max_calls` calls at once.
    pub fn new(registry: Arc<Registry>, audit: AuditLog, max_calls: usize) -> Self {
        Self {
            registry,
            audit,
            stats: Stats::new(),
            slots: Slots::new(max_calls),
            checks: Checks::new(),
            health: ToolsHealth::default(),
        }
    }

    /// The registry whose tools this pipeline serves.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The current tools.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.registry.catalog()
    }

    /// Live per-tool statistics.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Each tool's circuit breaker and recent failures.
    pub fn health(&self) -> &ToolsHealth {
        &self.health
    }

    /// The audit log.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Calls running right now.
    pub fn running(&self) -> usize {
        self.slots.running()
    }

    /// Run one call through every stage. Never panics on bad input or a bad plugin: every failure is an
    /// outcome with `is_error` set, and every call leaves exactly one end record in the audit log
    /// (and, when it passes the gate, a begin line written before it runs).
    pub async fn call(&self, req: CallRequest) -> CallOutcome {
        // Boxed: a call's state is over 3 KB, and front ends hold it in tasks that the runtime moves
        // several times (rmcp spawns one per request); moving a pointer instead saved ~100 KB of
        // memcpy per MCP call (callgrind).
        Box::pin(self.timed(req, None)).await.0
    }

    /// [`Self::call`], stopped once it has taken `limit` (a front end's limit on a whole call,
    /// approval included): it then ends, for the caller and in the audit log and stats alike, as
    /// `timeout`.
    pub async fn call_within(&self, req: CallRequest, limit: Duration) -> CallOutcome {
        Box::pin(self.timed(req, Some(limit))).await.0
    }

    /// [`Self::call`], also saying where the time went, stage by stage (for benchmarks and profiling).
    pub async fn call_timed(&self, req: CallRequest) -> (CallOutcome, StageTimes) {
        self.timed(req, None).await
    }

    /// Record a call the front end refuses without running it (the daemon is shutting down): one
    /// end record with `kind`, counted in the stats like any other call.
    pub fn refuse(&self, req: &CallRequest, kind: ErrorKind, message: String) -> CallOutcome {
        let call_id = AuditRecord::new_call_id();
        let mut record = self
            .audit
            .begin(&call_id, req.origin, &req.tool, &req.input);
        record.parent_id = req.parent_id.clone();
        record.finish(Some(kind), Duration::ZERO);
        let _ = self.audit.write(&record); // failures are logged by the writer
        let known = self.registry.catalog().get(&req.tool).is_some()
            && self.sees(req.caller.as_deref(), &req.tool);
        let label = if known {
            req.tool.as_str()
        } else {
            UNKNOWN_TOOL
        };
        self.stats.record(label, Err(kind), Duration::ZERO, None);
        error(&call_id, kind, message)
    }

    async fn timed(
        &self,
        mut req: CallRequest,
        limit: Option<Duration>,
    ) -> (CallOutcome, StageTimes) {
        let mut clock = Stopwatch::start();
        let wall_start = req.trace.as_ref().map(|_| std::time::SystemTime::now());
        let call_id = AuditRecord::new_call_id();
        let mut record = self
            .audit
            .begin(&call_id, req.origin, &req.tool, &req.input);
        record.parent_id = req.parent_id.clone();
        // Hashed for the record; from here on only the checks below read it.
        let input = std::mem::take(&mut req.input);
        clock.mark(Stage::Begin);
        // The caller's token stops the call; so does the deadline, through a child of it, so that the
        // two can be told apart when the call comes back cancelled.
        let caller = req.cancel.clone();
        let stop = caller.child_token();
        req.cancel = stop.clone();
        let mut timed_out = false;
        let mut finished = {
            let run = self.run(&req, input, &call_id, &mut record, &mut clock);
            match limit {
                None => run.await,
                Some(limit) => {
                    tokio::pin!(run);
                    tokio::select! {
                        biased;
                        finished = &mut run => finished,
                        () = tokio::time::sleep(limit) => {
                            timed_out = !caller.is_cancelled();
                            stop.cancel();
                            run.await
                        }
                    }
                }
            }
        };
        // What the tool's breaker learns: how the sandbox and the tool ended the call, before a
        // front end's deadline (which also counts time spent waiting for an approval).
        let tool_kind = finished.outcome.error_kind();
        if finished.outcome.error_kind() == Some(ErrorKind::Cancelled) {
            // One place says why a cancelled call stopped: the caller, the deadline, or a question
            // handed to the client. The caller sees the same kind the audit log and stats record.
            if let Some(limit) = limit.filter(|_| timed_out) {
                finished.outcome = error(
                    &call_id,
                    ErrorKind::Timeout,
                    shape::request_timeout(&req.tool, limit),
                );
            } else if req.approver.as_ref().is_some_and(|a| a.deferred()) {
                finished.outcome = error(
                    &call_id,
                    ErrorKind::InputRequired,
                    shape::input_required(&req.tool),
                );
                record.decision = AuditDecision::Deferred;
            }
        }
        if let Some(admitted) = finished.admitted.take() {
            admitted.finish(tool_kind, &mut record, &mut finished.outcome);
        }
        let kind = finished.outcome.error_kind();
        let elapsed = clock.elapsed();
        record.fuel_used = finished.fuel;
        record.peak_memory_bytes = finished.peak_memory;
        record.output_bytes = finished.outcome.content.len() as u64;
        record.truncated = finished.truncated;
        record.detail = finished.detail.take();
        record.finish(kind, elapsed);
        let _ = self.audit.write(&record); // failures are logged by the writer; `run` refuses when configured to
        // Metrics are labelled by catalogue names only: a call that found no tool (a made-up or
        // hidden name, or one refused before the lookup) counts under one fixed label, so that
        // no client can grow `/metrics` by what it sends. The plugin is named once found.
        let label = match record.plugin {
            Some(_) => req.tool.as_str(),
            None => UNKNOWN_TOOL,
        };
        self.stats
            .record(label, kind.map_or(Ok(()), Err), elapsed, finished.fuel);
        clock.mark(Stage::Record);
        let times = clock.finish();
        if let (Some(parent), Some(started)) = (&req.trace, wall_start) {
            telemetry::stage_spans(parent, started, &times);
        }
        if telemetry::is_on() {
            let error = kind.map(telemetry::error_type);
            telemetry::record_call(label, error, finished.fuel, finished.peak_memory);
        }
        (finished.outcome, times)
    }

    async fn run(
        &self,
        req: &CallRequest,
        input: Value,
        call_id: &str,
        record: &mut AuditRecord,
        clock: &mut Stopwatch,
    ) -> Finished {
        let fail = |kind: ErrorKind, content: String| Finished {
            outcome: error(call_id, kind, content),
            fuel: None,
            peak_memory: None,
            truncated: false,
            admitted: None,
            detail: None,
        };
        if self.audit.refuses_on_failure() && self.audit.is_failing() {
            return fail(ErrorKind::AuditUnavailable, audit_unavailable());
        }
        if req.cancel.is_cancelled() {
            return fail(
                ErrorKind::Cancelled,
                format!("The call to '{}' was cancelled.", req.tool),
            );
        }

        // Who asks: a caller's profile narrows what they see and may do.
        record.caller = req.caller.as_deref().cloned();
        let config = self.registry.config();
        let profile = match req.caller.as_deref().map(|c| config.callers.access(c)) {
            None | Some(Access::Unprofiled) => None,
            Some(Access::Profile(p)) => Some(p),
            Some(Access::Denied) => {
                return fail(
                    ErrorKind::Denied,
                    "Permission denied: no [[callers]] profile matches this caller.".into(),
                );
            }
        };
        let sees = |name: &str| profile.is_none_or(|p| p.allows_tool(name));

        // Find.
        let catalog = self.registry.catalog();
        let Some(tool) = catalog.get(&req.tool).filter(|_| sees(&req.tool)).cloned() else {
            return fail(
                ErrorKind::UnknownTool,
                shape::unknown_tool(&req.tool, catalog.tools.keys().filter(|n| sees(n))),
            );
        };
        drop(catalog);
        let plugin = &tool.plugin;
        record.plugin = Some(plugin.name.clone());
        record.plugin_digest = Some(plugin.provenance.digest.as_str().to_owned());
        record.plugin_source = Some(plugin.provenance.source.clone());
        clock.mark(Stage::Find);

        // Validate (coercions included), off the runtime unless surely quick.
        // Schemas the cache vouched for compile here if the warm-up has not reached them yet.
        let quick = tool
            .schemas
            .ready()
            .is_some_and(|s| s.input.is_quick(&input));
        let (checked, limits) = (tool.clone(), plugin.policy.input);
        let check = self.checks.run(quick, move || {
            let schemas = checked.schemas.get(&checked.spec).map_err(str::to_owned)?;
            Ok::<_, String>(schemas.input.check(&checked.spec.name, input, &limits))
        });
        let validated = tokio::select! {
            checked = check => match checked {
                Ok(Ok(Ok(v))) => v,
                Ok(Ok(Err(e))) => return fail(ErrorKind::InvalidInput, e.to_string()),
                Ok(Err(broken)) => return fail(
                    ErrorKind::Internal,
                    format!("The schemas of '{}' did not compile: {broken}", tool.spec.name),
                ),
                Err(u) => {
                    let what = format!("the input of '{}'", tool.spec.name);
                    return fail(u.kind(), u.message(&what));
                }
            },
            () = req.cancel.cancelled() => return fail(
                ErrorKind::Cancelled,
                format!("The call to '{}' was cancelled.", req.tool),
            ),
        };
        record.coercions = validated
            .coercions
            .iter()
            .map(ToString::to_string)
            .collect();
        // The gate judges, and the tool gets, what the tool would use: schema defaults filled in.
        let mut input = validated.input;
        for pointer in defaults::fill(&tool.spec.input_schema, &mut input) {
            record
                .coercions
                .push(format!("{pointer}: the schema's default filled in"));
        }
        clock.mark(Stage::Validate);

        // Who asks, as the breakers tell callers apart: failures under limits the caller's
        // profile lowered count in its own breaker, never in the tool's that everyone shares.
        let caps = profile.map(|p| p.caps()).unwrap_or_default();
        let lowered = Lowered::new(&plugin.policy.limits, &caps);
        let asker = Asker {
            key: lowered.any().then(|| owner_of(req.caller.as_deref())),
            lowered,
        };

        // Gate.
        let layered = profile.map(|p| plugin.policy.permissions.for_caller(&p.rules));
        let permissions = layered.as_ref().unwrap_or(&plugin.policy.permissions);
        let decision = permissions.decide(&tool.spec, &input);
        let by = match decision.rule() {
            Some(rule) => format!("rule {rule}"),
            None => decision.reason().to_string(),
        };
        // Whether a person approved this call: the ask areas of the sandbox's filesystem then open
        // at its subject.
        let mut approved = false;
        match &decision {
            Decision::Allow { .. } => record.decision = AuditDecision::Allowed { by },
            Decision::Deny { reason, .. } => {
                record.decision = AuditDecision::Denied { by };
                return fail(
                    ErrorKind::Denied,
                    format!("Permission denied for '{}': {reason}", tool.spec.name),
                );
            }
            Decision::Ask { reason, .. } => {
                // Nobody is asked to approve a call the breaker would refuse.
                if let Some((kind, message)) = self.health.refusal(&tool, &asker, record) {
                    return fail(kind, message);
                }
                let Some(approver) = &req.approver else {
                    record.decision = AuditDecision::Denied {
                        by: format!("{by} (no approver)"),
                    };
                    let message = decision.unapproved_message().unwrap_or_default();
                    return fail(ErrorKind::Denied, format!("Permission denied: {message}"));
                };
                let request = ApprovalRequest {
                    tool: tool.spec.name.clone(),
                    plugin: plugin.name.clone(),
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
                    return fail(ErrorKind::AuditUnavailable, audit_unavailable());
                }
                clock.mark(Stage::Gate);
                let answer = tokio::select! {
                    a = approver.approve(&request) => Some(a),
                    () = req.cancel.cancelled() => None,
                };
                clock.mark(Stage::Approval);
                let Some(answer) = answer else {
                    return fail(
                        ErrorKind::Cancelled,
                        format!("The call to '{}' was cancelled.", tool.spec.name),
                    );
                };
                record.decision = AuditDecision::Asked { answer };
                approved = answer;
                if !answer {
                    return fail(
                        ErrorKind::Denied,
                        format!(
                            "Permission denied for '{}': the user declined the call.",
                            tool.spec.name
                        ),
                    );
                }
            }
        }

        clock.mark(Stage::Gate);

        // Execute.
        let Some(_slot) = self.slots.try_take() else {
            return fail(
                ErrorKind::Busy,
                format!(
                    "toolhost is busy ({} calls running, the configured maximum); try again shortly.",
                    self.slots.max()
                ),
            );
        };
        // The tool's breaker: a tool that keeps failing is suspended for a while. Admitted with a
        // slot in hand, so that a trial call always runs.
        let admitted = match self.health.admit(&tool, asker, record) {
            Ok(admitted) => admitted,
            Err((kind, message)) => return fail(kind, message),
        };
        // A profile's path rules hold in the sandbox's filesystem too; its limits lower the plugin's.
        // An approved call may reach the ask areas at its subject, and only there.
        let files = if approved {
            Arc::new(permissions.approved_guard(&tool.spec, &input))
        } else {
            match profile {
                Some(p) if p.rules.has_path_rules() => {
                    Arc::new(permissions.path_guard(&tool.spec.name))
                }
                _ => tool.files.clone(),
            }
        };
        let mut finished = self
            .execute(&tool, input, req, record, clock, (files, caps))
            .await;
        finished.admitted = Some(admitted);
        finished
    }

    async fn execute(
        &self,
        tool: &Arc<Tool>,
        input: Value,
        req: &CallRequest,
        record: &AuditRecord,
        clock: &mut Stopwatch,
        (files, caps): (Arc<PathGuard>, Caps),
    ) -> Finished {
        let call_id = record.call_id.as_str();
        // Recorded before the plugin runs, so that a daemon killed mid-call still shows the call
        // (unless it was recorded before its approval question).
        let begun = matches!(record.decision, AuditDecision::Asked { .. });
        if !begun && self.audit.write_begin(record).is_err() && self.audit.refuses_on_failure() {
            return Finished {
                outcome: error(call_id, ErrorKind::AuditUnavailable, audit_unavailable()),
                fuel: None,
                peak_memory: None,
                truncated: false,
                admitted: None,
                detail: None,
            };
        }
        let plugin = &tool.plugin;
        // Through serde_json's writer, not `Display`'s formatter, which costs twice as much; a
        // `Value` always encodes.
        let input_text = serde_json::to_string(&input).unwrap_or_default();
        clock.mark(Stage::Instantiate);
        // Boxed: the sandbox's part of the call is most of its future's size (wasmtime's
        // instantiation and call), which every move of the pipeline's future would copy.
        let report = Box::pin(self.registry.sandbox().call(
            &plugin.prepared,
            &tool.guest_name,
            input_text,
            CallIo {
                files,
                progress: req.progress.clone(),
                cancel: &req.cancel,
                caps,
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
                shape::success(&self.checks, tool, out.content, out.structured, call_id).await
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
                    "Tool '{name}' failed: {m}{}",
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
                let text = shape::run_error(name, &e) + &network_notes(&report.network);
                (error(call_id, kind, text), false)
            }
        };
        clock.mark(Stage::Shape);
        Finished {
            outcome,
            fuel,
            peak_memory,
            truncated,
            admitted: None,
            detail,
        }
    }
}
