//! A task record as each era shows it on the wire: the 2026 extension's `Task` and `DetailedTask`
//! (the result or error inlined once the task ends), and 2025-11-25's plain task object. Pure
//! shaping of [`TaskRecord`]s: it starts, ends and decides nothing.

use std::time::Duration;

use rmcp::model::{DetailedTask, Task as McpTask, TaskPayload, TaskStatus as McpStatus};
use serde_json::{Value, json};
use toolhost_gate::task::TaskStatus;

use crate::state::TaskRecord;

/// RFC 3339 with milliseconds, as both eras print times.
fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The record as the 2026 extension's `Task`.
pub(super) fn task(record: &TaskRecord, poll: Duration) -> McpTask {
    let status = match record.status {
        TaskStatus::Working => McpStatus::Working,
        TaskStatus::InputRequired => McpStatus::InputRequired,
        TaskStatus::Completed => McpStatus::Completed,
        TaskStatus::Failed => McpStatus::Failed,
        TaskStatus::Cancelled => McpStatus::Cancelled,
    };
    let ttl = u64::try_from(record.expires_ms - record.created_ms).unwrap_or(0);
    let mut task = McpTask::new(
        record.id.clone(),
        status,
        iso(record.created_ms),
        iso(record.updated_ms),
    )
    .with_ttl_ms(ttl)
    .with_poll_interval_ms(millis(poll));
    if let Some(m) = &record.message {
        task = task.with_status_message(m.clone());
    }
    task
}

/// The record as the 2026 extension's `DetailedTask` (what `tasks/get` answers).
pub(super) fn detailed(record: &TaskRecord, poll: Duration) -> DetailedTask {
    let object = |v: &Option<Value>| v.as_ref().and_then(Value::as_object).cloned();
    let payload = match record.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::InputRequired => match record
            .input_requests
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
        {
            Some(input_requests) => TaskPayload::InputRequired { input_requests },
            None => TaskPayload::Working,
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: object(&record.result).unwrap_or_default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: object(&record.error).unwrap_or_default(),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(task(record, poll), payload)
}

/// The record as 2025-11-25's `Task`.
pub(super) fn legacy_task(record: &TaskRecord, poll: Duration) -> Value {
    let mut task = json!({
        "taskId": record.id,
        "status": record.status.as_str(),
        "createdAt": iso(record.created_ms),
        "lastUpdatedAt": iso(record.updated_ms),
        "ttl": record.expires_ms - record.created_ms,
        "pollInterval": millis(poll),
    });
    if let Some(m) = &record.message {
        task["statusMessage"] = json!(m);
    }
    task
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::TaskKind;

    fn record(status: TaskStatus) -> TaskRecord {
        TaskRecord {
            id: "t1".into(),
            kind: TaskKind::Tool,
            owner: "local".into(),
            name: "sleep".into(),
            status,
            message: Some("step 2 of 3".into()),
            daemon: "d".into(),
            created_ms: 1_700_000_000_000,
            updated_ms: 1_700_000_001_500,
            expires_ms: 1_700_003_600_000,
            cancel_requested: false,
            input_requests: None,
            result: Some(json!({"content": [], "isError": false})),
            error: None,
        }
    }

    #[test]
    fn the_2026_shape_inlines_the_result_once_completed() {
        let poll = Duration::from_millis(500);
        let done = serde_json::to_value(detailed(&record(TaskStatus::Completed), poll)).unwrap();
        assert_eq!(done["status"], "completed");
        assert_eq!(done["result"]["isError"], false);
        assert_eq!(done["ttlMs"], 3_600_000);
        assert_eq!(done["pollIntervalMs"], 500);
        assert_eq!(done["createdAt"], "2023-11-14T22:13:20.000Z");
        let working = serde_json::to_value(detailed(&record(TaskStatus::Working), poll)).unwrap();
        assert!(working.get("result").is_none());
        assert_eq!(working["statusMessage"], "step 2 of 3");
    }

    #[test]
    fn the_2025_shape_names_ttl_and_poll_interval_plainly() {
        let t = legacy_task(&record(TaskStatus::Working), Duration::from_secs(1));
        assert_eq!(t["taskId"], "t1");
        assert_eq!(t["ttl"], 3_600_000);
        assert_eq!(t["pollInterval"], 1000);
        assert!(t.get("result").is_none());
    }
}
