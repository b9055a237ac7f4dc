//! One call: each capability prepared for it, then a fresh store ([`FreshStore`]) on the calling
//! task, or on a thread of its own when the guest may block in file operations ([`super::thread`]).
//! Calling a contract plugin's exports is here too; a generic plugin's is [`super::generic`]'s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::bindings::PluginPre;
use super::bindings::v2;
use super::capability::{CallInputs, CallIo};
use super::limiter::MemoryLimiter;
use super::output::CappedOutput;
use super::prepared::Prepared;
use super::report::{GuestError, GuestOutput, GuestSpec, RunError, RunReport};
use super::secrets::Secrets;
use super::state::{Capabilities, State};
use super::store::{FreshStore, Instantiate};
use super::thread::{self, Abandoned};
use super::ticker::Ticker;

/// How long after its deadline (or its cancellation) a call on its own thread is waited for.
const GRACE: Duration = Duration::from_secs(1);

/// What running a call needs of the sandbox.
pub(crate) struct Runner<'a> {
    pub(crate) ticker: &'a Ticker,
    pub(crate) capabilities: &'a Capabilities,
    /// The call's secrets, when they differ from the plugin's (the caller brought credentials).
    pub(crate) secrets: Option<Arc<Secrets>>,
}

impl Runner<'_> {
    /// Ask a contract plugin which tools it provides.
    pub(crate) async fn describe(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &PluginPre<State>,
    ) -> RunReport<Vec<GuestSpec>> {
        self.run(prepared, io, pre, async |store, p| {
            let specs = p.toolhost_plugin_tool().call_describe(store).await?;
            Ok(specs.into_iter().map(GuestSpec::from).collect())
        })
        .await
    }

    /// Call a contract plugin's `tool` with `input` (JSON text).
    pub(crate) async fn call(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &PluginPre<State>,
        tool: &str,
        input: String,
    ) -> RunReport<Result<GuestOutput, GuestError>> {
        let tool = tool.to_owned();
        self.run(prepared, io, pre, async move |store, p| {
            let r = p
                .toolhost_plugin_tool()
                .call_call(store, &tool, &input)
                .await?;
            Ok(r.map(GuestOutput::from).map_err(GuestError::from))
        })
        .await
    }

    /// Ask a WASI 0.3 contract plugin (`toolhost:plugin@0.2.0`) which tools it provides.
    pub(crate) async fn describe_v2(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &v2::PluginPre<State>,
    ) -> RunReport<Vec<GuestSpec>> {
        self.run(prepared, io, pre, async |store, p| {
            let specs = store
                .run_concurrent(async |a| p.toolhost_plugin_tool().call_describe(a).await)
                .await??;
            Ok(specs.into_iter().map(GuestSpec::from).collect())
        })
        .await
    }

    /// Call a WASI 0.3 contract plugin's `tool` with `input` (JSON text): its `call` is an `async
    /// func`, run with its subtasks in the call's store until it returns (whatever of them is still
    /// running then goes with the store).
    pub(crate) async fn call_v2(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &v2::PluginPre<State>,
        tool: &str,
        input: String,
    ) -> RunReport<Result<GuestOutput, GuestError>> {
        let tool = tool.to_owned();
        self.run(prepared, io, pre, async move |store, p| {
            let r = store
                .run_concurrent(async |a| p.toolhost_plugin_tool().call_call(a, tool, input).await)
                .await??;
            Ok(r.map(GuestOutput::from).map_err(GuestError::from))
        })
        .await
    }

    /// One call of `prepared`: each capability prepared for it, then its store ([`FreshStore`]) on
    /// this task, or on a thread of its own when the guest may block in file operations.
    pub(crate) async fn run<P, T, B>(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &P,
        body: B,
    ) -> RunReport<T>
    where
        P: Instantiate + Clone + Send + 'static,
        T: Send + 'static,
        B: AsyncFnOnce(&mut Store<State>, P::Instance) -> wasmtime::Result<T> + Send + 'static,
    {
        let started = Instant::now();
        // Deadlines and yielding need the epoch to move while this store lives.
        let ticking = self.ticker.running();
        let limits = prepared.limits.capped(io.caps);
        let stdout = CappedOutput::new(limits.stdio_bytes);
        let stderr = CappedOutput::new(limits.stdio_bytes);
        // Only granted directories give a guest anything to block on.
        let apart = prepared.bound.files.has_dirs();
        let secrets = self
            .secrets
            .clone()
            .unwrap_or_else(|| prepared.bound.secrets.clone());
        let inputs = CallInputs {
            secrets: &secrets,
            io: &io,
            stdout: &stdout,
            stderr: &stderr,
            apart,
            deadline: started + limits.timeout,
        };
        let limiter = MemoryLimiter::new(limits.memory_bytes);
        let state =
            match self
                .capabilities
                .prepare(&prepared.name, &prepared.bound, &inputs, limiter)
            {
                Ok(state) => state,
                Err(e) => {
                    return RunReport {
                        elapsed: started.elapsed(),
                        instantiate: started.elapsed(),
                        ..RunReport::refused(RunError::Setup(e.to_string()))
                    };
                }
            };
        let fresh = FreshStore {
            store: Store::new(pre.engine(), state),
            limits,
            cancel: io.cancel.clone(),
            started,
            stdout,
            stderr,
            ticking,
        };
        if !apart {
            return fresh.run(pre, body).await;
        }
        let (pre, runtime) = (pre.clone(), tokio::runtime::Handle::current());
        let work = move || runtime.block_on(fresh.run(&pre, body));
        let cancel = io.cancel.clone();
        let deadline = tokio::time::Instant::from_std(started + limits.timeout);
        let give_up = async move {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = cancel.cancelled() => {}
            }
            // The store stops the guest at either; only a thread stuck in the kernel is still busy.
            tokio::time::sleep(GRACE).await;
        };
        match thread::apart(work, give_up).await {
            Ok(report) => report,
            Err(Abandoned) => {
                let why = if io.cancel.is_cancelled() {
                    RunError::Cancelled
                } else {
                    RunError::Timeout(limits.timeout)
                };
                tracing::warn!(plugin = %prepared.name, "the call's thread is stuck in a file operation; answered without it");
                RunReport {
                    elapsed: started.elapsed(),
                    ..RunReport::refused(why)
                }
            }
        }
    }
}
