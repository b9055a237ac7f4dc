//! The services one daemon shares: built once by the host, handed to the pipeline (whose stages
//! borrow what each needs) and to the front ends (which read the audit, stats, live calls,
//! questions and health, and admit work that spans calls). None of them runs a call: that is the
//! [`Pipeline`](super::Pipeline)'s.

use std::sync::Arc;
use std::time::Duration;

use toolhost_config::config::Config;
use toolhost_gate::caller::{Access, Caller};

use super::admission::Admission;
use super::board::{Board, Notice};
use super::checks::Checks;
use super::credentials::Credentials;
use super::health::ToolsHealth;
use super::live::Live;
use super::questions::Questions;
use super::quiet::Slots;
use super::quota::{Ledger, Quotas};
use crate::audit::AuditLog;
use crate::registry::{Catalog, PluginStatus, Registry};
use crate::stats::Stats;

/// How long a call to a tool that is not served waits while plugins load (one of them may bring
/// it): long enough for the last of several large plugins' first compiles on a busy machine. A
/// client that gives up first cancels its call, which ends the wait.
pub(super) const LOAD_WAIT: Duration = Duration::from_secs(90);

/// How long a listing during a start waits for the plugins: a restart (from the compile cache)
/// and a first start's small plugins load within it, and a client's first `tools/list` still
/// answers well within the 5 s the most impatient clients wait.
const LIST_WAIT: Duration = Duration::from_secs(3);

/// How often a daemon of a fleet shows its calls, when they changed.
const SHOW_EVERY: Duration = Duration::from_millis(250);
/// Every how many of those rounds it says whether someone is at its console, and hears the
/// others (every second).
const ATTEND_EVERY: u64 = 4;

/// What every call and every front end of one daemon shares.
pub struct Services {
    /// The operator's config, as the host loaded it: the callers' profiles come from here.
    pub config: Arc<Config>,
    /// The plugins and the tools they serve.
    pub registry: Arc<Registry>,
    /// Where every call's begin and end are recorded.
    pub audit: AuditLog,
    /// Live per-tool statistics.
    pub stats: Stats,
    /// Each tool's circuit breaker and recent failures.
    pub health: ToolsHealth,
    /// Whether new work is taken, what is in flight, and the shutdown's cancellation.
    pub admission: Admission,
    /// Calls running and recently ended; an operator cancels a call here.
    pub live: Live,
    /// Questions waiting for the console's operators.
    pub questions: Questions,
    /// Each caller's share of calls, calls at once and fuel.
    pub(super) quotas: Quotas,
    /// Callers' own credentials for plugins' requests.
    pub(super) credentials: Credentials,
    /// Sandbox slots: at most this many calls run at once.
    pub(super) slots: Arc<Slots>,
    /// Where schema checks that are not surely quick run, under a deadline.
    pub(super) checks: Checks,
}

impl Services {
    /// The services of a daemon under `config` serving `registry`, recording to `audit`, running
    /// at most `max_calls` calls at once.
    pub fn new(
        config: Arc<Config>,
        registry: Arc<Registry>,
        audit: AuditLog,
        max_calls: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            registry,
            audit,
            stats: Stats::new(),
            health: ToolsHealth::default(),
            admission: Admission::new(),
            live: Live::default(),
            questions: Questions::default(),
            quotas: Quotas::default(),
            credentials: Credentials::new(
                config.auth.as_ref().and_then(|a| a.token_exchange.as_ref()),
            ),
            slots: Slots::new(max_calls),
            checks: Checks::new(),
            config,
        })
    }

    /// Share every quota's budget with the other daemons of a fleet through `ledger` (the state
    /// store's), from the next call on.
    pub fn share_quotas(&self, ledger: Arc<dyn Ledger>) {
        self.quotas.share(ledger);
    }

    /// Share the console with the fleet through its `board`: questions, who is at a console, and
    /// the live calls; act on what the other daemons say (`notices`) until the services are
    /// dropped.
    pub fn share_console(
        self: &Arc<Self>,
        board: Arc<dyn Board>,
        mut notices: tokio::sync::mpsc::UnboundedReceiver<Notice>,
    ) {
        self.questions.share(board.clone());
        self.live.share(board);
        let services = Arc::downgrade(self);
        let rounds = services.clone();
        let stopping = self.admission.stopping().clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SHOW_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut said_stopping = false;
            for round in 0u64.. {
                // A daemon that starts stopping says so at once: the fleet shows it stopped, not
                // silent, once it is gone.
                let now_stopping = tokio::select! {
                    _ = every.tick() => false,
                    () = stopping.cancelled(), if !said_stopping => true,
                };
                said_stopping |= now_stopping;
                let Some(services) = rounds.upgrade() else {
                    return;
                };
                // Never the inputs: the snapshot is rewritten often and read by every daemon.
                services.live.show_fleet(false).await;
                if round % ATTEND_EVERY == 0 || now_stopping {
                    services.questions.attend_fleet(&services.summary()).await;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
                let Some(services) = services.upgrade() else {
                    return;
                };
                match notice {
                    Notice::Cancel { .. } | Notice::Calls { .. } => services.live.heard(&notice),
                    Notice::Missed => {
                        services.live.heard(&notice);
                        services.questions.heard(notice, &services.live).await;
                    }
                    _ => services.questions.heard(notice, &services.live).await,
                }
            }
        });
    }

    /// How this daemon is, in a few numbers: what the fleet's consoles show of it.
    pub fn summary(&self) -> serde_json::Value {
        let catalog = self.registry.catalog();
        let rejected = catalog
            .plugins
            .values()
            .filter(|p| matches!(p, PluginStatus::Rejected { .. }))
            .count();
        serde_json::json!({
            "ready": !catalog.is_loading(),
            "stopping": self.admission.stopping().is_cancelled(),
            "tools": catalog.tools.len(),
            "plugins": catalog.plugins.len() - rejected,
            "rejected": rejected,
            "running": self.running(),
            "in_flight": self.admission.in_flight(),
            "console": self.questions.address(),
            "version": env!("CARGO_PKG_VERSION"),
        })
    }

    /// Calls running in a sandbox right now.
    pub fn running(&self) -> usize {
        self.slots.running()
    }

    /// The catalog once it serves `tool`, or nothing loading could bring it (waiting at most as
    /// long as a call does, 90 s): what a front end that must know a tool before the call reads.
    pub async fn catalog_with(&self, tool: &str) -> Arc<Catalog> {
        self.registry
            .loaded(tool, LOAD_WAIT, self.admission.stopping())
            .await
    }

    /// The catalog to list tools from: during a start, once every plugin is loaded or 3 s have
    /// passed; plugins still compiling then join later, announced by `tools/list_changed`.
    pub async fn listing(&self) -> Arc<Catalog> {
        self.registry
            .listing(LIST_WAIT, self.admission.stopping())
            .await
    }

    /// Whether `caller` may see `tool`: every tool for the local operator and for callers without a
    /// profile; the profile's tools otherwise (none, when no profile matches).
    pub fn sees(&self, caller: Option<&Caller>, tool: &str) -> bool {
        match caller.map(|c| self.config.callers.access(c)) {
            None | Some(Access::Unprofiled) => true,
            Some(Access::Profile(p)) => p.allows_tool(tool),
            Some(Access::Denied) => false,
        }
    }

    /// Whether a listing for `caller` names `tool`: a tool it sees, within `server.short-list`
    /// when one is set (the others stay callable, and `search_tools` finds them).
    pub fn lists(&self, caller: Option<&Caller>, tool: &str) -> bool {
        let short = &self.config.server.short_list;
        (short.is_empty() || short.iter().any(|p| p.matches(tool))) && self.sees(caller, tool)
    }

    /// Whether `caller` sees the whole daemon, as the operator does: the local operator, and every
    /// caller when no `[[callers]]` profiles are configured. A profiled caller's view is narrowed
    /// to its tools, and leaves out what no tool of theirs did (calls of unknown names).
    pub fn sees_everything(&self, caller: Option<&Caller>) -> bool {
        match caller.map(|c| self.config.callers.access(c)) {
            None | Some(Access::Unprofiled) => true,
            Some(Access::Profile(_) | Access::Denied) => false,
        }
    }
}
