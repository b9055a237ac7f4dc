//! The pipeline: admit -> find -> validate -> gate -> execute -> shape -> record, for every call
//! from every front end. It decides admission (shutdown, in-flight work), deadlines and every
//! outcome; front ends hand it a [`CallRequest`] and translate the [`CallOutcome`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::admission::{Admission, Stopping, Ticket};
use super::checks::Checks;
use super::credentials::{Brought, Credentials};
use super::gate::Passed;
use super::health::{Asker, ToolsHealth};
use super::live::Live;
use super::questions::Questions;
use super::quiet::Slots;
use super::quota::{Ledger, Quotas};
use super::recorder::{Finished, Started};
use super::request::CallRequest;
use super::shape;
use super::timing::{Stage, StageTimes};
use crate::audit::{AuditLog, AuditRecord, Decision as AuditDecision};
use crate::registry::{Catalog, Registry, Tool};
use crate::stats::Stats;
use toolhost_call::call::{CallOutcome, ErrorKind};
use toolhost_config::config::Config;
use toolhost_gate::breaker::Lowered;
use toolhost_gate::caller::{Access, NO_PROFILE};
use toolhost_gate::task::owner_of;

/// How long a call to a tool that is not served waits while plugins load (one of them may bring
/// it): long enough for the last of several large plugins' first compiles on a busy machine. A
/// client that gives up first cancels its call, which ends the wait.
const LOAD_WAIT: Duration = Duration::from_secs(90);

/// How long a listing during a start waits for the plugins: a restart (from the compile cache)
/// and a first start's small plugins load within it, and a client's first `tools/list` still
/// answers well within the 5 s the most impatient clients wait.
const LIST_WAIT: Duration = Duration::from_secs(3);

/// Runs calls. Shared by every front end (`Arc<Pipeline>`); all methods take `&self`.
pub struct Pipeline {
    /// The operator's config, as the host loaded it: the callers' profiles come from here.
    config: Arc<Config>,
    registry: Arc<Registry>,
    audit: AuditLog,
    stats: Stats,
    slots: Arc<Slots>,
    /// Where schema checks that are not surely quick run, under a deadline.
    checks: Checks,
    /// Each tool's circuit breaker and recent failures.
    health: ToolsHealth,
    /// Whether new work is taken, what is in flight, and the shutdown's cancellation.
    admission: Admission,
    /// Calls running and recently ended, for the console.
    live: Live,
    /// Questions waiting for the console's operators.
    questions: Questions,
    /// This pipeline, for the nested calls it lends plugins (which outlive a borrow of it).
    me: std::sync::Weak<Pipeline>,
    /// Each caller's share of calls, calls at once and fuel.
    quotas: Quotas,
    /// Callers' own credentials for plugins' requests.
    credentials: Credentials,
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
    /// A pipeline under `config` over `registry`, recording to `audit`, running at most
    /// `max_calls` calls at once.
    pub fn new(
        config: Arc<Config>,
        registry: Arc<Registry>,
        audit: AuditLog,
        max_calls: usize,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            registry,
            audit,
            stats: Stats::new(),
            slots: Slots::new(max_calls),
            checks: Checks::new(),
            health: ToolsHealth::default(),
            admission: Admission::new(),
            live: Live::default(),
            questions: Questions::default(),
            me: me.clone(),
            quotas: Quotas::default(),
            credentials: Credentials::new(
                config.auth.as_ref().and_then(|a| a.token_exchange.as_ref()),
            ),
            config,
        })
    }

    /// Share every quota's budget with the other daemons of a fleet through `ledger` (the state
    /// store's), from the next call on.
    pub fn share_quotas(&self, ledger: Arc<dyn Ledger>) {
        self.quotas.share(ledger);
    }

    /// The config this pipeline runs under.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// The registry whose tools this pipeline serves.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The current tools.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.registry.catalog()
    }

    /// The catalog once it serves `tool`, or nothing loading could bring it (waiting at most as
    /// long as a call does, 90 s): what a front end that must know a tool before the call reads.
    pub async fn catalog_with(&self, tool: &str) -> Arc<Catalog> {
        self.registry.loaded(tool, LOAD_WAIT, self.stopping()).await
    }

    /// The catalog to list tools from: during a start, once every plugin is loaded or 3 s have
    /// passed; plugins still compiling then join later, announced by `tools/list_changed`.
    pub async fn listing(&self) -> Arc<Catalog> {
        self.registry.listing(LIST_WAIT, self.stopping()).await
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

    /// Calls running and recently ended; an operator cancels a call here.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The console's approval queue.
    pub fn questions(&self) -> &Questions {
        &self.questions
    }

    /// This pipeline, shared.
    pub(super) fn me(&self) -> std::sync::Weak<Pipeline> {
        self.me.clone()
    }

    pub(super) fn checks(&self) -> &Checks {
        &self.checks
    }

    /// Calls running in a sandbox right now.
    pub fn running(&self) -> usize {
        self.slots.running()
    }

    /// Admit a front end's work that spans several calls or outlives its request (a batch, a
    /// task): counted in flight until the ticket drops, and its calls (given a clone in
    /// [`CallRequest::admitted`]) run even once shutdown has started. Refused once it has.
    pub fn admit(&self) -> Result<Ticket, Stopping> {
        self.admission.admit()
    }

    /// Work in flight: calls, batches and tasks admitted and not yet ended (calls waiting for an
    /// approval included).
    pub fn in_flight(&self) -> usize {
        self.admission.in_flight()
    }

    /// Cancelled once shutdown starts: for front ends to end what only waits (subscriptions,
    /// long polls).
    pub fn stopping(&self) -> &CancellationToken {
        self.admission.stopping()
    }

    /// A token that is cancelled when the shutdown's grace period ends, for a front end that
    /// derives its own cancellation from it (a transport whose client went away).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.admission.calls().child_token()
    }

    /// Shut down: refuse new work from now on (each refused call recorded as `busy`), give the
    /// work in flight `grace` to finish, then stop every call (recorded as cancelled by the
    /// shutdown). Returns whether any work was in flight.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.admission.drain(grace).await
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
        let mut started = self.start_record(req);
        self.name_plugin(req, &mut started.record);
        let finished = Finished::failed(&started.record.call_id, kind, content);
        self.record(req, started, finished).0
    }

    /// Names the plugin on `record` when `req`'s caller may see its tool: stats then count a
    /// refused call under the tool, not under the label for unknown names.
    fn name_plugin(&self, req: &CallRequest, record: &mut AuditRecord) {
        let catalog = self.registry.catalog();
        if let Some(tool) = catalog
            .get(&req.tool)
            .filter(|_| self.sees(req.caller.as_deref(), &req.tool))
        {
            note_plugin(record, tool);
        }
    }

    async fn timed(&self, mut req: CallRequest) -> (CallOutcome, StageTimes) {
        let mut started = self.start_record(&req);
        // Hashed for the record; from here on only the checks below read it.
        let input = std::mem::take(&mut req.input);
        started.clock.mark(Stage::Begin);
        let call_id = started.record.call_id.clone();
        // Admission: a call that is part of admitted work runs; any other is admitted here.
        // Held by the request until the call ends; its nested calls run under it too.
        req.admitted = match req.admitted.take().map_or_else(|| self.admit(), Ok) {
            Ok(ticket) => Some(ticket),
            Err(stopping) => {
                self.name_plugin(&req, &mut started.record);
                let refused = Finished::failed(&call_id, ErrorKind::Busy, stopping.to_string());
                return self.record(&req, started, refused);
            }
        };
        if self.admission.calls().is_cancelled() {
            // Admitted work's later call, after the shutdown's grace period ended.
            self.name_plugin(&req, &mut started.record);
            let message = shape::shut_down(&req.tool);
            let late = Finished::failed(&call_id, ErrorKind::Cancelled, message);
            return self.record(&req, started, late);
        }
        if let Some(deadline) = req.deadline.filter(|d| d.at() <= std::time::Instant::now()) {
            // A batch's later call whose deadline passed while earlier ones ran.
            self.name_plugin(&req, &mut started.record);
            let message = shape::request_timeout(&req.tool, deadline.limit());
            let late = Finished::failed(&call_id, ErrorKind::Timeout, message);
            return self.record(&req, started, late);
        }
        // The caller's token stops the call; so do the deadline and the end of the shutdown's
        // grace, through a child of it, so that the three can be told apart afterwards.
        let caller = req.cancel.clone();
        let stop = caller.child_token();
        req.cancel = stop.clone();
        let listed = self.live.start(
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
                () = self.admission.calls().cancelled() => {
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
        self.record(&req, started, finished)
    }

    async fn run(
        &self,
        req: &CallRequest,
        input: Value,
        record: &mut AuditRecord,
        clock: &mut super::timing::Stopwatch,
    ) -> Finished {
        let call_id = record.call_id.clone();
        let fail = |kind: ErrorKind, content: String| Finished::failed(&call_id, kind, content);
        if self.audit.refuses_on_failure() && self.audit.is_failing() {
            return fail(ErrorKind::AuditUnavailable, shape::audit_unavailable());
        }
        if req.cancel.is_cancelled() {
            return fail(ErrorKind::Cancelled, shape::cancelled(&req.tool));
        }

        // Who asks: a caller's profile narrows what they see and may do.
        let profile = match req.caller.as_deref().map(|c| self.config.callers.access(c)) {
            None | Some(Access::Unprofiled) => None,
            Some(Access::Profile(p)) => Some(p),
            Some(Access::Denied) => {
                return fail(
                    ErrorKind::Denied,
                    format!("Permission denied: {NO_PROFILE}."),
                );
            }
        };
        let sees = |name: &str| profile.is_none_or(|p| p.allows_tool(name));

        // Find: a tool that is not served yet may be in a plugin still loading, and is waited for.
        let mut catalog = self.registry.catalog();
        if catalog.get(&req.tool).is_none() && catalog.is_loading() && sees(&req.tool) {
            let stop = self.stopping().child_token();
            let cancel = req.cancel.clone();
            let waited = async {
                tokio::select! {
                    c = self.registry.loaded(&req.tool, LOAD_WAIT, &stop) => c,
                    () = cancel.cancelled() => self.registry.catalog(),
                }
            };
            catalog = waited.await;
        }
        let Some(tool) = catalog.get(&req.tool).filter(|_| sees(&req.tool)).cloned() else {
            if req.cancel.is_cancelled() {
                return fail(ErrorKind::Cancelled, shape::cancelled(&req.tool));
            }
            if catalog.is_loading() && sees(&req.tool) {
                return fail(
                    ErrorKind::UnknownTool,
                    shape::still_loading(&req.tool, LOAD_WAIT, catalog.loading.keys()),
                );
            }
            return fail(
                ErrorKind::UnknownTool,
                shape::unknown_tool(&req.tool, catalog.tools.keys().filter(|n| sees(n))),
            );
        };
        drop(catalog);
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
        let mut share = match self
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
        let input = match self.validate(&tool, input, req, record).await {
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
        let passed = match self
            .gate(req, (&tool, permissions, &input), &asker, record, clock)
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
            match self
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
        let files = match passed {
            Passed::Approved => Arc::new(permissions.approved_guard(&tool.spec, &input)),
            Passed::Allowed => match profile {
                Some(p) if p.rules.has_path_rules() => {
                    Arc::new(permissions.path_guard(&tool.spec.name))
                }
                _ => tool.files.clone(),
            },
        };
        let mut finished = self
            .execute(&tool, input, req, record, clock, (files, caps, grants))
            .await;
        finished.admitted = Some(admitted);
        share.settle(finished.fuel.unwrap_or(0));
        finished
    }
}

/// Names `tool`'s plugin, its digest and source on `record`.
fn note_plugin(record: &mut AuditRecord, tool: &Tool) {
    let plugin = &tool.plugin;
    record.plugin = Some(plugin.name.clone());
    record.plugin_digest = Some(plugin.provenance.digest.as_str().to_owned());
    record.plugin_source = Some(plugin.provenance.source.clone());
}
