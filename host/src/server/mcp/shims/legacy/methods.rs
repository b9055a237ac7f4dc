//! The answers to 2025-11-25 task requests (`tools/call` with `task`, `tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`), over the same tasks as the 2026 extension.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::{Value, json};
use toolhost_gate::caller::Caller;
use toolhost_gate::task::{TaskChoice, TaskStatus};

use crate::server::mcp::outcome::Era;
use crate::server::mcp::task_view::legacy_task;
use crate::server::mcp::tasks::{
    AskVia, Started, TaskCall, start, support_for, task_error, tasks_of,
};
use crate::server::shared::Shared;

/// The methods of 2025-11-25 tasks, as they reach the custom-request handler: `tasks/list` and
/// `tasks/result` as sent; `tools/call` with `task`, `tasks/get` and `tasks/cancel` renamed by
/// [`super`] (rmcp would read the first without its `task` and the others as the 2026
/// extension's).
pub(crate) const LEGACY_METHODS: &[&str] = &[
    "tasks/list",
    "tasks/result",
    super::wire::CALL_AS_TASK,
    super::wire::GET,
    super::wire::CANCEL,
];

/// How many tasks one `tasks/list` page holds.
const LIST_PAGE: usize = 50;

/// Answer one 2025-11-25 task request (`method` is one of [`LEGACY_METHODS`]).
pub(in crate::server::mcp) async fn answer(
    shared: &Arc<Shared>,
    method: &str,
    params: Value,
    caller: Option<Arc<Caller>>,
    ask: AskVia,
) -> Result<Value, ErrorData> {
    let tasks = tasks_of(shared)?.clone();
    let poll = tasks.options().poll_interval;
    let owner = toolhost_gate::task::owner_of(caller.as_deref());
    let task_id = || {
        params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ErrorData::invalid_params("taskId (a string) is required", None))
    };
    match method {
        "tasks/list" => {
            let cursor = params.get("cursor").and_then(Value::as_str);
            let (page, next) = tasks
                .list(&owner, cursor, LIST_PAGE)
                .await
                .map_err(task_error)?;
            let mut answer = json!({
                "tasks": page.iter().map(|t| legacy_task(t, poll)).collect::<Vec<_>>(),
            });
            if let Some(next) = next {
                answer["nextCursor"] = json!(next);
            }
            Ok(answer)
        }
        super::wire::GET => {
            let record = tasks.get(&task_id()?, &owner).await.map_err(task_error)?;
            Ok(legacy_task(&record, poll))
        }
        super::wire::CANCEL => {
            let id = task_id()?;
            let record = tasks.get(&id, &owner).await.map_err(task_error)?;
            if record.status.is_terminal() {
                return Err(ErrorData::invalid_params(
                    format!(
                        "task {id} already ended ({}); nothing to cancel",
                        record.status
                    ),
                    None,
                ));
            }
            let record = tasks.cancel(&id, &owner).await.map_err(task_error)?;
            Ok(legacy_task(&record, poll))
        }
        "tasks/result" => {
            let id = task_id()?;
            // Blocks until the task ends, as the specification says; the HTTP request timeout
            // still bounds it.
            let record = loop {
                let record = tasks.get(&id, &owner).await.map_err(task_error)?;
                if record.status.is_terminal() {
                    break record;
                }
                tokio::select! {
                    () = tokio::time::sleep(poll.min(Duration::from_millis(250))) => {}
                    () = shared.services.admission.stopping().cancelled() => {
                        return Err(ErrorData::internal_error(
                            "toolhost is shutting down; ask again once it is back",
                            None,
                        ));
                    }
                }
            };
            let related = json!({ "io.modelcontextprotocol/related-task": { "taskId": id } });
            match record.status {
                TaskStatus::Completed => {
                    let mut result = record.result.unwrap_or_else(|| json!({"content": []}));
                    result["_meta"] = match result.get("_meta") {
                        Some(Value::Object(m)) => {
                            let mut m = m.clone();
                            m.insert(
                                "io.modelcontextprotocol/related-task".into(),
                                json!({ "taskId": id }),
                            );
                            Value::Object(m)
                        }
                        _ => related,
                    };
                    Ok(result)
                }
                TaskStatus::Failed => Err(record
                    .error
                    .and_then(|e| serde_json::from_value::<ErrorData>(e).ok())
                    .unwrap_or_else(|| {
                        ErrorData::internal_error(record.message.unwrap_or_default(), None)
                    })),
                _ => Err(ErrorData::invalid_params(
                    format!(
                        "task {id} was cancelled: {}",
                        record.message.unwrap_or_default()
                    ),
                    None,
                )),
            }
        }
        super::wire::CALL_AS_TASK => {
            let tool = params
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ErrorData::invalid_params("name (a string) is required", None))?
                .to_owned();
            let arguments = match params.get("arguments") {
                None | Some(Value::Null) => json!({}),
                Some(a @ Value::Object(_)) => a.clone(),
                Some(_) => {
                    return Err(ErrorData::invalid_params(
                        "arguments must be an object",
                        None,
                    ));
                }
            };
            let ttl = params
                .pointer("/task/ttl")
                .and_then(Value::as_u64)
                .map(Duration::from_millis);
            let support = support_for(shared, caller.as_deref(), &tool).await;
            if support.asked(true) == TaskChoice::Refuse {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "tool {tool} does not run as a task (its taskSupport is forbidden); \
                         call it without `task`"
                    ),
                    None,
                ));
            }
            let call = TaskCall {
                tool,
                arguments,
                caller,
                era: Era::ObjectsOnly,
                ask,
                ttl,
            };
            match start(shared, call).await? {
                Started::Task(record) => Ok(json!({ "task": legacy_task(&record, poll) })),
                // Refused without a task (shutdown): the plain result, as for a tool that does
                // not run as a task.
                Started::Refused(answer) => Ok(serde_json::to_value(answer).unwrap_or_default()),
            }
        }
        other => Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
            None,
        )),
    }
}
