//! Runs a parsed batch: group by group (see `plan`), every call through [`Pipeline::call`] with
//! the batch's id as its parent and `"batch"` as its origin, so each leaves one audit line.
//!
//! Calls that cannot run (see `CallError`) are answered at once as `invalid_input`, recorded by
//! the pipeline's one recorder with the batch's caller. Cancelling the batch
//! cancels the calls that are running (the pipeline answers them as cancelled) and every call not
//! yet started is answered as cancelled, each still with its audit line.

use crate::telemetry;
use std::collections::HashMap;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::audit::AuditRecord;
use crate::exec::{
    Approver, CallOutcome, CallRequest, Deadline, ErrorKind, Pipeline, Progress, ProgressSink,
    Ticket,
};
use crate::registry::Catalog;
use toolhost_wire::batch::{
    Batch, BatchReport, BrokenCall, Call, CallResult, ParsedCall, Sharing, id_and_name, partition,
};

/// Calls of one group running at once, unless the caller says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 10;

/// The `origin` of batch calls in the audit log.
pub const ORIGIN: &str = "batch";

/// How a batch runs.
#[derive(Clone)]
pub struct BatchOptions {
    /// The most read-only calls running at once (0 is taken as 1). Defaults to
    /// [`DEFAULT_CONCURRENCY`].
    pub concurrency: usize,
    /// Who answers `ask` decisions; with none, ask means deny.
    pub approver: Option<Arc<dyn Approver>>,
    /// The authenticated caller, for every call of the batch.
    pub caller: Option<Arc<toolhost_gate::caller::Caller>>,
    /// The batch's span, parent of each call's, when telemetry is on.
    pub trace: Option<opentelemetry::Context>,
    /// The limit on the whole batch: every call still running or not yet started when it passes
    /// ends as `timeout`.
    pub deadline: Option<Deadline>,
    /// The batch's admission ([`Admission::admit`](crate::exec::Admission::admit)); without one each call is admitted (or, once
    /// shutdown has started, refused) by the pipeline on its own.
    pub admitted: Option<Ticket>,
    /// Where each running call's progress and partial output go, with the call's place in the
    /// batch (a streamed answer's `progress` events, [`super::progress_event`]); `None` drops them.
    pub progress: Option<OnCallProgress>,
}

/// What a batch's calls report while they run: the call (its index, the id the model gave it, its
/// tool) and its report. Called on the call's task, so it must not wait.
pub type OnCallProgress = Arc<dyn Fn(usize, &str, &str, Progress) + Send + Sync>;

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            approver: None,
            caller: None,
            trace: None,
            deadline: None,
            admitted: None,
            progress: None,
        }
    }
}

/// A fresh batch id: a UUID v7, like call ids, so that ids sort by time.
pub fn new_batch_id() -> String {
    AuditRecord::new_call_id()
}

/// Runs `batch` under `batch_id` and returns every result in the order the calls were given.
/// `on_result` sees each result as soon as it is known, in the order they complete.
///
/// Calls run in spawned tasks, which dropping this future aborts (each then ends as its pipeline
/// call does when dropped: the breaker freed, its begin line left `unfinished`); cancel `cancel` to
/// stop them with every call answered and recorded.
pub async fn run(
    pipeline: &Arc<Pipeline>,
    batch_id: &str,
    batch: Batch,
    options: &BatchOptions,
    cancel: &CancellationToken,
    mut on_result: impl FnMut(&CallResult) + Send,
) -> BatchReport {
    let sharing = sharing(&pipeline.services().registry.catalog(), &batch.calls);
    let mut results: Vec<Option<CallResult>> = vec![None; batch.calls.len()];
    let mut done = |index: usize, call: &ParsedCall, outcome: CallOutcome| {
        let result = result(index, call, outcome);
        on_result(&result);
        if let Some(slot) = results.get_mut(index) {
            *slot = Some(result);
        }
    };

    for group in partition(&sharing, options.concurrency) {
        let mut tasks = Calls::default();
        for index in group {
            let Some(call) = batch.calls.get(index) else {
                continue;
            };
            match call {
                Ok(ready) => tasks.start(pipeline, batch_id, options, cancel, index, ready),
                Err(broken) => done(index, call, reject(pipeline, batch_id, options, broken)),
            }
        }
        while let Some((index, outcome)) = tasks.next(pipeline, batch_id, options).await {
            if let Some(call) = batch.calls.get(index) {
                done(index, call, outcome);
            }
        }
    }

    BatchReport {
        batch_id: batch_id.to_string(),
        format: batch.format,
        results: results.into_iter().flatten().collect(),
    }
}

/// Why a batch that ran in the background ended without finishing, when shutdown stopped some of
/// its calls: the sentence its task ends with. `None` for a batch that finished.
pub fn cut_short(pipeline: &Pipeline, report: &BatchReport) -> Option<String> {
    let stopped = pipeline.services().admission.stopping().is_cancelled()
        && report
            .results
            .iter()
            .any(|r| r.outcome.error_kind() == Some(ErrorKind::Cancelled));
    stopped.then(|| {
        "toolhost shut down before the batch finished; the calls that ran are in the audit log"
            .to_owned()
    })
}

/// Call `index`'s result, with the id and name the model gave it.
pub(super) fn result(index: usize, call: &ParsedCall, outcome: CallOutcome) -> CallResult {
    let (id, name) = id_and_name(call);
    CallResult {
        index,
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        outcome,
    }
}

fn sharing(catalog: &Catalog, calls: &[ParsedCall]) -> Vec<Sharing> {
    calls.iter().map(|call| sharing_of(catalog, call)).collect()
}

/// Read-only tools share; so do calls that run nothing. Unknown tools run alone: a reload could
/// make them known, as anything, before they run.
pub(super) fn sharing_of(catalog: &Catalog, call: &ParsedCall) -> Sharing {
    let Ok(ready) = call else {
        return Sharing::Shared;
    };
    match catalog.get(&ready.name) {
        // Read-only and destructive at once counts as destructive, as in the gate.
        Some(t) if t.spec.hints.is_read_only() => Sharing::Shared,
        _ => Sharing::Exclusive,
    }
}

/// The calls of a batch that are running, each in its own task.
#[derive(Default)]
pub(super) struct Calls {
    tasks: JoinSet<(usize, CallOutcome)>,
    /// Each task's call: its index and tool.
    spawned: HashMap<tokio::task::Id, (usize, String)>,
}

impl Calls {
    /// Starts call `index` through the pipeline, as part of batch `batch_id`.
    pub(super) fn start(
        &mut self,
        pipeline: &Arc<Pipeline>,
        batch_id: &str,
        options: &BatchOptions,
        cancel: &CancellationToken,
        index: usize,
        ready: &Call,
    ) {
        let trace = options.trace.as_ref().map(|batch| {
            use opentelemetry::KeyValue;
            let attributes = vec![
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", ready.name.clone()),
                KeyValue::new("gen_ai.tool.call.id", ready.id.clone()),
            ];
            telemetry::child_span(format!("execute_tool {}", ready.name), batch, attributes)
        });
        let request = CallRequest {
            tool: ready.name.clone(),
            input: ready.input.clone(),
            parent_id: Some(batch_id.to_string()),
            origin: ORIGIN,
            progress: options.progress.clone().map(|report| {
                let (id, name) = (ready.id.clone(), ready.name.clone());
                Arc::new(move |p| report(index, &id, &name, p)) as ProgressSink
            }),
            cancel: cancel.clone(),
            approver: options.approver.clone(),
            caller: options.caller.clone(),
            trace: trace.clone(),
            deadline: options.deadline,
            admitted: options.admitted.clone(),
            nested: None,
        };
        let pipeline = pipeline.clone();
        let task = self.tasks.spawn(async move {
            let outcome = pipeline.call(request).await;
            if let Some(cx) = &trace {
                telemetry::end_span(cx, outcome.error_kind().map(telemetry::error_type));
            }
            (index, outcome)
        });
        self.spawned.insert(task.id(), (index, ready.name.clone()));
    }

    /// Whether no call is running.
    pub(super) fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// The next call to finish, with its outcome; `None` when none is running.
    pub(super) async fn next(
        &mut self,
        pipeline: &Pipeline,
        batch_id: &str,
        options: &BatchOptions,
    ) -> Option<(usize, CallOutcome)> {
        loop {
            match self.tasks.join_next().await? {
                Ok(finished) => return Some(finished),
                Err(e) => {
                    // The pipeline does not panic; if it ever does, the call is answered and
                    // recorded, not lost.
                    let Some((index, tool)) = self.spawned.get(&e.id()) else {
                        continue;
                    };
                    tracing::error!(batch_id, index, "a batch call's task failed: {e}");
                    let content = format!(
                        "toolhost failed while running this call (batch {batch_id}); it may not \
                         have finished."
                    );
                    let kind = ErrorKind::Internal;
                    let outcome = record(pipeline, batch_id, options, tool, kind, content);
                    return Some((*index, outcome));
                }
            }
        }
    }
}

/// Answers a call that cannot run, recorded by the pipeline.
pub(super) fn reject(
    pipeline: &Pipeline,
    batch_id: &str,
    options: &BatchOptions,
    call: &BrokenCall,
) -> CallOutcome {
    let tool = call.name.as_deref().unwrap_or_default();
    let content = call.error.to_string();
    record(
        pipeline,
        batch_id,
        options,
        tool,
        ErrorKind::InvalidInput,
        content,
    )
}

/// Answers a call of the batch that the pipeline could not run as `kind`, recorded by it.
fn record(
    pipeline: &Pipeline,
    batch_id: &str,
    options: &BatchOptions,
    tool: &str,
    kind: ErrorKind,
    content: String,
) -> CallOutcome {
    let request = CallRequest {
        tool: tool.to_owned(),
        parent_id: Some(batch_id.to_owned()),
        origin: ORIGIN,
        caller: options.caller.clone(),
        ..CallRequest::default()
    };
    pipeline.reject(&request, kind, content)
}
