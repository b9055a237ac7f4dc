//! The 2025-11-25 tasks wire as JSON-RPC values: the renamed methods ([`CALL_AS_TASK`], [`GET`],
//! [`CANCEL`]), which requests are renamed ([`rewrite_request`], [`incoming`]) and how their
//! answers are amended ([`rewrite_response`]). Pure functions over messages: no I/O, no calls,
//! and nothing of the HTTP or stdio transports that apply them.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::{Value, json};
use toolhost_gate::task::TaskSupport;

/// `tools/call` with `task`, renamed.
pub(crate) const CALL_AS_TASK: &str = "toolhost/legacy/tasks/call";
/// 2025-11-25 `tasks/get`, renamed.
pub(crate) const GET: &str = "toolhost/legacy/tasks/get";
/// 2025-11-25 `tasks/cancel`, renamed.
pub(crate) const CANCEL: &str = "toolhost/legacy/tasks/cancel";

/// The revision that replaced these tasks with the extension.
const EXTENSION_ERA: &str = "2026-07-28";

/// What a response needs, given its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Nothing.
    AsIs,
    /// An `initialize` result: declare tasks if the session is on 2025-11-25.
    Initialize,
    /// A `tools/list` result: say each tool's task support.
    ToolList,
}

/// The revision a request declares for itself in `_meta` (2026-07-28 requests carry it), if any.
fn declared_revision(message: &Value) -> Option<&str> {
    message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
}

/// A client's message after [`rewrite_request`].
pub(crate) struct Incoming {
    /// What its response will need.
    pub(crate) answer: Answer,
    /// Its JSON-RPC id as JSON text, when `answer` is not [`Answer::AsIs`] and it has one.
    pub(crate) id: Option<String>,
    /// Its new text when it was renamed; `None` when its bytes pass on as they are.
    pub(crate) renamed: Option<Vec<u8>>,
}

/// `bytes`, one JSON-RPC message, through [`rewrite_request`]; parsed only when
/// [`worth_parsing`] says it may need it.
pub(crate) fn incoming(bytes: &[u8], revision: Option<&str>) -> Incoming {
    let mut seen = Incoming {
        answer: Answer::AsIs,
        id: None,
        renamed: None,
    };
    let parsed = match worth_parsing(bytes) {
        true => serde_json::from_slice::<Value>(bytes).ok(),
        false => None,
    };
    if let Some(mut message) = parsed.filter(Value::is_object) {
        let before = message.get("method").cloned();
        seen.answer = rewrite_request(&mut message, revision);
        if seen.answer != Answer::AsIs {
            seen.id = message.get("id").map(Value::to_string);
        }
        if message.get("method") != before.as_ref() {
            seen.renamed = Some(serde_json::to_vec(&message).unwrap_or_default());
        }
    }
    seen
}

/// Whether a message may need [`rewrite_request`]: a cheap look at the bytes, so that the many
/// messages that do not (every `tools/call` without `task`) are not parsed twice.
fn worth_parsing(bytes: &[u8]) -> bool {
    static NEEDLES: LazyLock<[Finder<'static>; 4]> = LazyLock::new(|| {
        [
            b"tasks/".as_slice(),
            b"\"task\"",
            b"initialize",
            b"tools/list",
        ]
        .map(Finder::new)
    });
    NEEDLES.iter().any(|n| n.find(bytes).is_some())
}

/// Rename a 2025-11-25 task request in place; what its response will need. `revision` is the
/// transport's idea of the client's revision (the HTTP header), if any.
pub(crate) fn rewrite_request(message: &mut Value, revision: Option<&str>) -> Answer {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return Answer::AsIs;
    };
    let modern = declared_revision(message)
        .or(revision)
        .is_some_and(|r| r >= EXTENSION_ERA);
    let renamed = match method {
        "initialize" => return Answer::Initialize,
        "tools/list" if !modern => return Answer::ToolList,
        "tools/call"
            if message
                .pointer("/params/task")
                .is_some_and(Value::is_object) =>
        {
            CALL_AS_TASK
        }
        "tasks/get" if !modern => GET,
        "tasks/cancel" if !modern => CANCEL,
        _ => return Answer::AsIs,
    };
    message["method"] = json!(renamed);
    Answer::AsIs
}

/// Add what a 2025-11-25 client reads from a response; `support` says a tool's task support.
pub(crate) fn rewrite_response(
    message: &mut Value,
    answer: Answer,
    support: impl Fn(&str) -> Option<TaskSupport>,
) {
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    match answer {
        Answer::AsIs => {}
        Answer::Initialize => {
            let version = result.get("protocolVersion").and_then(Value::as_str);
            if version.is_some_and(|v| ("2025-11-25"..EXTENSION_ERA).contains(&v))
                && let Some(Value::Object(caps)) = result.get_mut("capabilities")
            {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
        }
        Answer::ToolList => {
            if let Some(Value::Array(tools)) = result.get_mut("tools") {
                for tool in tools {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                    if let Some(s) = support(name)
                        && s != TaskSupport::Never
                    {
                        tool["execution"] = json!({ "taskSupport": s.as_mcp() });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_only_2025_task_requests() {
        let mut call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {}, "task": {"ttl": 1000}}});
        rewrite_request(&mut call, Some("2025-11-25"));
        assert_eq!(call["method"], CALL_AS_TASK);
        let mut plain = json!({"method": "tools/call", "params": {"name": "sleep"}});
        rewrite_request(&mut plain, None);
        assert_eq!(plain["method"], "tools/call");
        let mut get = json!({"method": "tasks/get", "params": {"taskId": "t"}});
        rewrite_request(&mut get, Some("2025-11-25"));
        assert_eq!(get["method"], GET);
        let mut modern = json!({"method": "tasks/get", "params": {"taskId": "t",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        rewrite_request(&mut modern, None);
        assert_eq!(modern["method"], "tasks/get");
        let mut by_header = json!({"method": "tasks/cancel", "params": {"taskId": "t"}});
        rewrite_request(&mut by_header, Some("2026-07-28"));
        assert_eq!(by_header["method"], "tasks/cancel");
    }

    #[test]
    fn declares_tasks_to_2025_sessions_and_task_support_per_tool() {
        let mut init = json!({"id": 0, "result": {"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}}});
        rewrite_response(&mut init, Answer::Initialize, |_| None);
        assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
        let mut old = json!({"result": {"protocolVersion": "2025-06-18", "capabilities": {}}});
        rewrite_response(&mut old, Answer::Initialize, |_| None);
        assert!(old["result"]["capabilities"].get("tasks").is_none());
        let mut list = json!({"result": {"tools": [{"name": "sleep"}, {"name": "echo"}]}});
        rewrite_response(&mut list, Answer::ToolList, |n| {
            Some(if n == "sleep" {
                TaskSupport::Required
            } else {
                TaskSupport::Never
            })
        });
        assert_eq!(
            list["result"]["tools"][0]["execution"]["taskSupport"],
            "required"
        );
        assert!(list["result"]["tools"][1].get("execution").is_none());
    }
}
