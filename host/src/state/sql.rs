//! The statements both backends run, in SQL both dialects accept (SQLite's `?N` placeholders;
//! the PostgreSQL store rewrites them to `$N`).

use super::{COLUMNS, Change, ORPHANED, Param, Statement, TaskRecord, opt_json, text};

/// The statuses a task may still change from.
const UNFINISHED: &str = "status IN ('working', 'input_required')";

pub(super) fn insert(t: &TaskRecord) -> Statement {
    Statement {
        sql: format!(
            "INSERT INTO tasks ({COLUMNS}) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
        ),
        params: vec![
            text(&t.id),
            text(t.kind.as_str()),
            text(&t.owner),
            text(&t.name),
            text(t.status.as_str()),
            Param::Text(t.message.clone()),
            text(&t.daemon),
            Param::Int(t.created_ms),
            Param::Int(t.updated_ms),
            Param::Int(t.expires_ms),
            Param::Bool(t.cancel_requested),
            opt_json(t.input_requests.as_ref()),
            opt_json(t.result.as_ref()),
            opt_json(t.error.as_ref()),
        ],
    }
}

pub(super) fn get(id: &str, now: i64) -> Statement {
    Statement {
        sql: format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1 AND expires_ms > ?2"),
        params: vec![text(id), Param::Int(now)],
    }
}

/// A list cursor is `created_ms.id` of the last task of the previous page.
pub(super) fn list(owner: &str, after: Option<&str>, limit: usize, now: i64) -> Statement {
    let limit = Param::Int(i64::try_from(limit).unwrap_or(i64::MAX));
    let cursor = after.and_then(|c| {
        let (ms, id) = c.split_once('.')?;
        Some((ms.parse::<i64>().ok()?, id.to_owned()))
    });
    match cursor {
        Some((ms, id)) => Statement {
            sql: format!(
                "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND expires_ms > ?2 \
                 AND (created_ms > ?3 OR (created_ms = ?3 AND id > ?4)) \
                 ORDER BY created_ms, id LIMIT ?5"
            ),
            params: vec![
                text(owner),
                Param::Int(now),
                Param::Int(ms),
                text(&id),
                limit,
            ],
        },
        None => Statement {
            sql: format!(
                "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND expires_ms > ?2 \
                 ORDER BY created_ms, id LIMIT ?3"
            ),
            params: vec![text(owner), Param::Int(now), limit],
        },
    }
}

/// Every owner's live tasks, newest first, at most `limit`: the operator's view.
pub(super) fn newest(limit: usize, now: i64) -> Statement {
    Statement {
        sql: format!(
            "SELECT {COLUMNS} FROM tasks WHERE expires_ms > ?1 ORDER BY created_ms DESC, id LIMIT ?2"
        ),
        params: vec![
            Param::Int(now),
            Param::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
        ],
    }
}

pub(super) fn update(id: &str, change: &Change, now: i64) -> Statement {
    let (set, mut params, only_waiting) = match change {
        Change::Progress(message) => ("message = ?3", vec![text(message)], false),
        Change::InputRequired { requests, message } => (
            "status = 'input_required', input_requests = ?3, input_responses = NULL, \
             message = ?4",
            vec![opt_json(Some(requests)), text(message)],
            false,
        ),
        Change::Respond(answers) => ("input_responses = ?3", vec![opt_json(Some(answers))], true),
        Change::Resume => (
            "status = 'working', input_requests = NULL, input_responses = NULL, \
             message = NULL",
            vec![],
            false,
        ),
        Change::Finish {
            status,
            message,
            result,
            error,
        } => (
            "status = ?3, message = ?4, result = ?5, error = ?6, input_requests = NULL, \
             input_responses = NULL",
            vec![
                text(status.as_str()),
                Param::Text(message.clone()),
                opt_json(result.as_ref()),
                opt_json(error.as_ref()),
            ],
            false,
        ),
    };
    let condition = if only_waiting {
        "status = 'input_required'"
    } else {
        UNFINISHED
    };
    let mut all = vec![text(id), Param::Int(now)];
    all.append(&mut params);
    Statement {
        sql: format!("UPDATE tasks SET {set}, updated_ms = ?2 WHERE id = ?1 AND {condition}"),
        params: all,
    }
}

pub(super) fn request_cancel(id: &str, now: i64) -> Statement {
    Statement {
        sql: format!(
            "UPDATE tasks SET cancel_requested = TRUE, updated_ms = ?2 \
             WHERE id = ?1 AND {UNFINISHED}"
        ),
        params: vec![text(id), Param::Int(now)],
    }
}

pub(super) fn responses(id: &str) -> Statement {
    Statement {
        sql: "SELECT input_responses FROM tasks WHERE id = ?1 AND status = 'input_required'".into(),
        params: vec![text(id)],
    }
}

pub(super) fn cancel_requests(daemon: &str) -> Statement {
    Statement {
        sql: format!(
            "SELECT id FROM tasks WHERE daemon = ?1 AND cancel_requested AND {UNFINISHED}"
        ),
        params: vec![text(daemon)],
    }
}

pub(super) fn heartbeat(daemon: &str, now: i64) -> Statement {
    Statement {
        sql: "INSERT INTO daemons (id, started_ms, heartbeat_ms) VALUES (?1, ?2, ?2) \
              ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms"
            .into(),
        params: vec![text(daemon), Param::Int(now)],
    }
}

/// The sweep, in order: fail orphans, forget silent daemons, delete what expired.
pub(super) fn sweep(now: i64, silent_since: i64, except: &str) -> [Statement; 4] {
    let error = serde_json::json!({"code": -32603, "message": ORPHANED}).to_string();
    [
        Statement {
            sql: format!(
                "UPDATE tasks SET status = 'failed', message = ?1, error = ?2, \
                 input_requests = NULL, input_responses = NULL, updated_ms = ?3 \
                 WHERE {UNFINISHED} AND daemon <> ?4 AND daemon NOT IN \
                 (SELECT id FROM daemons WHERE heartbeat_ms >= ?5)"
            ),
            params: vec![
                text(ORPHANED),
                Param::Text(Some(error)),
                Param::Int(now),
                text(except),
                Param::Int(silent_since),
            ],
        },
        Statement {
            sql: "DELETE FROM daemons WHERE heartbeat_ms < ?1 AND id <> ?2".into(),
            params: vec![Param::Int(silent_since), text(except)],
        },
        Statement {
            sql: "DELETE FROM tasks WHERE expires_ms <= ?1".into(),
            params: vec![Param::Int(now)],
        },
        Statement {
            sql: "DELETE FROM used_states WHERE expires_ms <= ?1".into(),
            params: vec![Param::Int(now)],
        },
    ]
}

pub(super) fn use_once(nonce: &str, expires: i64) -> Statement {
    Statement {
        sql: "INSERT INTO used_states (nonce, expires_ms) VALUES (?1, ?2) \
              ON CONFLICT (nonce) DO NOTHING"
            .into(),
        params: vec![text(nonce), Param::Int(expires)],
    }
}
