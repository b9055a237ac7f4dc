//! MCP tasks in both eras, over [`crate::tasks`]:
//!
//! - 2026-07-28, the `io.modelcontextprotocol/tasks` extension: a client that declares it may get
//!   `resultType: "task"` from `tools/call`; it polls `tasks/get` (the result or error inlined
//!   once the task ends), answers approvals with `tasks/update`, and stops it with `tasks/cancel`.
//! - 2025-11-25 (experimental tasks): the client asks with `task` in the call's params; `tools/list`
//!   says each tool's `execution.taskSupport`; `tasks/get`, `tasks/result` (waits for the end),
//!   `tasks/list` and `tasks/cancel`.
//!
//! Either way the call runs through the pipeline like any other (same gate, limits and audit
//! record, with the task id as its parent id), and only its owner sees the task.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult, ErrorCode,
    ProtocolVersion,
};
use rmcp::model::{ElicitRequest, ElicitResult, InputRequest, InputRequests};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolhost_call::call::{CallStatus, ErrorKind};
use toolhost_gate::caller::Caller;
use toolhost_gate::task::{TaskChoice, TaskSupport};

use super::approval::{self, APPROVAL_KEY, ElicitingApprover};
use super::outcome::{self, Era};
use super::task_view::task;
use crate::exec::{Answer, ApprovalRequest, Approver, CallRequest};
use crate::server::shared::Shared;
use crate::state::{TaskKind, TaskRecord};
use crate::tasks::{Finish, NewTask, TaskError, TaskHandle, Tasks};

/// Who answers an approval inside a task.
pub(super) enum AskVia {
    /// The task shows `input_required` with the question; the client answers with `tasks/update`.
    Task,
    /// An `initialize`-era session that elicits: asked over it while the task waits.
    Peer(Peer<RoleServer>),
    /// Nobody: `ask` means deny.
    Nobody,
}

/// One `tools/call` to run as a task.
pub(super) struct TaskCall {
    pub(super) tool: String,
    pub(super) arguments: Value,
    pub(super) caller: Option<Arc<Caller>>,
    pub(super) era: Era,
    pub(super) ask: AskVia,
    /// The TTL the client asked for (2025-11-25), capped by the configured one.
    pub(super) ttl: Option<Duration>,
}

/// The tasks, or the error a client gets when the daemon has none (yet).
pub(super) fn tasks_of(shared: &Shared) -> Result<&Arc<Tasks>, ErrorData> {
    shared.tasks().ok_or_else(|| {
        ErrorData::internal_error(
            "tasks are unavailable: toolhost's state store is not reachable yet; retry shortly",
            None,
        )
    })
}

/// How a request to run a call as a task ended.
pub(super) enum Started {
    /// The task was created.
    Task(TaskRecord),
    /// The pipeline admitted no new work (shutdown): the call was refused, and recorded, without
    /// a task; its outcome is the answer.
    Refused(CallToolResult),
}

/// Start `call` as a task; the record as created, or the call's refusal.
pub(super) async fn start(shared: &Arc<Shared>, call: TaskCall) -> Result<Started, ErrorData> {
    let tasks = tasks_of(shared)?.clone();
    let request = CallRequest {
        tool: call.tool.clone(),
        input: call.arguments,
        origin: "mcp",
        caller: call.caller,
        ..CallRequest::default()
    };
    let ticket = match shared.services.admission.admit() {
        Ok(ticket) => ticket,
        Err(_) => {
            // Refused by the pipeline, which records it like any call it refuses.
            let outcome = shared.pipeline.call(request).await;
            return outcome::to_result(&call.tool, outcome, call.era).map(Started::Refused);
        }
    };
    let owner = toolhost_gate::task::owner_of(request.caller.as_deref());
    let new = NewTask {
        kind: TaskKind::Tool,
        owner,
        name: call.tool.clone(),
        ttl: call.ttl,
    };
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let shared = shared.clone();
    let approval_timeout = shared.approval_timeout;
    let work = move |handle: TaskHandle| async move {
        let approver: Option<Arc<dyn Approver>> = match call.ask {
            AskVia::Task => Some(Arc::new(TaskApprover {
                handle: handle.clone(),
                timeout: approval_timeout,
            })),
            AskVia::Peer(peer) => Some(Arc::new(PeerTaskApprover {
                handle: handle.clone(),
                eliciting: ElicitingApprover::new(peer, approval_timeout),
            })),
            AskVia::Nobody => None,
        };
        let progress = {
            let handle = handle.clone();
            Arc::new(move |p: toolhost_call::call::Progress| handle.report(p.message))
                as toolhost_call::call::ProgressSink
        };
        let request = CallRequest {
            parent_id: Some(handle.id().to_owned()),
            progress: Some(progress),
            cancel,
            approver,
            admitted: Some(ticket),
            ..request
        };
        let outcome = shared.pipeline.call(request).await;
        if outcome.status == CallStatus::Failed(ErrorKind::Cancelled) {
            // The pipeline says who stopped it: the owner, or the daemon's shutdown.
            return Finish::Cancelled(outcome.content);
        }
        match outcome::to_result(&call.tool, outcome, call.era) {
            Ok(result) => Finish::Completed(serde_json::to_value(result).unwrap_or_default()),
            Err(e) => Finish::Failed(serde_json::to_value(e).unwrap_or_default()),
        }
    };
    let record = tasks.spawn(new, token, work).await.map_err(|e| {
        tracing::error!("cannot create a task: {e}");
        ErrorData::internal_error("toolhost could not create the task; retry shortly", None)
    })?;
    Ok(Started::Task(record))
}

/// How a plain `tools/call` (no 2025 `task` param) meets the tool's task support: `Some` answer
/// when it runs as a 2026 task or is refused, `None` to run it inline. A retry that answers an
/// approval (`has_state`) always runs inline.
pub(super) async fn offer(
    shared: &Arc<Shared>,
    context: &RequestContext<RoleServer>,
    tool: &str,
    arguments: &Value,
    caller: Option<Arc<Caller>>,
    elicits: bool,
    has_state: bool,
) -> Result<Option<CallToolResponse>, ErrorData> {
    let modern = context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let support = support_for(shared, caller.as_deref(), tool).await;
    if !modern {
        if support.asked(false) == TaskChoice::Refuse {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool {tool} runs only as a task: call it with `task` (2025-11-25 tasks)"),
                None,
            ));
        }
        return Ok(None);
    }
    if has_state {
        return Ok(None);
    }
    let declared = context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks());
    // An optional task runs inline while the state store is unreachable; a required one is
    // refused with that reason.
    let followable = declared && (shared.tasks().is_some() || support == TaskSupport::Required);
    match support.offered(followable) {
        TaskChoice::Inline => Ok(None),
        TaskChoice::Refuse => Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        )),
        TaskChoice::Task => {
            let call = TaskCall {
                tool: tool.to_owned(),
                arguments: arguments.clone(),
                caller,
                era: Era::of(context.protocol_version()),
                ask: if elicits {
                    AskVia::Task
                } else {
                    AskVia::Nobody
                },
                ttl: None,
            };
            let record = match start(shared, call).await? {
                Started::Task(record) => record,
                Started::Refused(answer) => return Ok(Some(answer.into())),
            };
            let poll = tasks_of(shared)?.options().poll_interval;
            Ok(Some(CallToolResponse::Task(CreateTaskResult::new(task(
                &record, poll,
            )))))
        }
    }
}

/// `tool`'s task support as `caller` may know it: a tool its profile hides is as unknown as a name
/// nothing has (`Never`), so that neither "runs only as a task" nor a task created for it reveals
/// that it exists; the pipeline then answers "unknown tool" as for any other name.
/// A tool still loading is waited for, as the pipeline waits for it.
pub(super) async fn support_for(
    shared: &Shared,
    caller: Option<&Caller>,
    tool: &str,
) -> TaskSupport {
    if !shared.services.sees(caller, tool) {
        return TaskSupport::Never;
    }
    shared
        .services
        .catalog_with(tool)
        .await
        .get(tool)
        .map_or(TaskSupport::Never, |t| t.plugin.policy.task)
}

/// A task operation's error as JSON-RPC: an unknown (or someone else's) task is invalid params.
pub(super) fn task_error(e: TaskError) -> ErrorData {
    match e {
        TaskError::NotFound(_) | TaskError::NotWaiting(_) => {
            ErrorData::invalid_params(e.to_string(), None)
        }
        TaskError::State(e) => {
            tracing::error!("task store: {e}");
            ErrorData::internal_error("toolhost's state store did not answer; retry", None)
        }
    }
}

/// The approval question as a task's `inputRequests`: one form elicitation under [`APPROVAL_KEY`].
fn approval_question(request: &ApprovalRequest) -> Value {
    let mut requests = InputRequests::new();
    requests.insert(
        APPROVAL_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(approval::elicitation(request))),
    );
    serde_json::to_value(requests).unwrap_or_default()
}

/// Approval inside a task: the question goes into the task record (`input_required`), the answer
/// comes with `tasks/update`, through whichever daemon the client reaches.
struct TaskApprover {
    handle: TaskHandle,
    timeout: Duration,
}

impl Approver for TaskApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let requests = approval_question(request);
            let Some(answers) = self
                .handle
                .ask(requests, approval::question(request), self.timeout)
                .await
            else {
                return Answer::Unanswered(format!(
                    "no answer came to the task's question, which waits at most {} s",
                    self.timeout.as_secs()
                ));
            };
            match answers
                .get(APPROVAL_KEY)
                .cloned()
                .map(serde_json::from_value::<ElicitResult>)
            {
                Some(Ok(answer)) => Answer::from_yes(approval::approves(&answer)),
                Some(Err(e)) => Answer::Unanswered(format!(
                    "the answer to the task's question was not an elicitation result: {e}"
                )),
                None => Answer::Unanswered(format!(
                    "the task's input responses had no answer under {APPROVAL_KEY:?}"
                )),
            }
        })
    }
}

/// Approval inside a 2025-11-25 task: asked over the session with `elicitation/create`, the task
/// showing `input_required` (with the same question) until the answer comes.
struct PeerTaskApprover {
    handle: TaskHandle,
    eliciting: ElicitingApprover,
}

impl Approver for PeerTaskApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let requests = approval_question(request);
            self.handle
                .show_waiting(requests, approval::question(request))
                .await;
            let approved = self.eliciting.approve(request).await;
            self.handle.show_working().await;
            approved
        })
    }
}
