//! The call pipeline in-process: every error kind, every permission mode, coercion, truncation,
//! audit records under concurrency, cancellation, progress, no state across calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost::exec::{Answer, ApprovalRequest, Approver, CallOutcome, CallRequest, Pipeline};

use crate::harness::{EVENT_WAIT, Env, audit_line_at, wait_for_async};

fn req(tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tool: tool.into(),
        input,
        origin: "test",
        ..CallRequest::default()
    }
}

async fn call(p: &Pipeline, tool: &str, input: Value) -> CallOutcome {
    p.call(req(tool, input)).await
}

#[track_caller]
fn assert_kind(o: &CallOutcome, kind: &str, needle: &str) {
    assert!(o.is_error(), "expected {kind}, got success: {}", o.content);
    assert_eq!(
        o.error_kind().map(|k| k.as_str()),
        Some(kind),
        "{}",
        o.content
    );
    assert!(
        o.content.contains(needle),
        "{:?} lacks {needle:?}",
        o.content
    );
    assert!(o.structured().is_none());
}

/// Says `yes` or `no` to every question, and keeps each question's reason.
pub(crate) struct Person(pub(crate) bool, pub(crate) Mutex<Vec<String>>);

impl Approver for Person {
    fn approve<'a>(
        &'a self,
        r: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        self.1.lock().unwrap().push(r.reason.clone());
        Box::pin(async move { Answer::from_yes(self.0) })
    }
}

const FS: &str = "[plugins.fs]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n";

#[tokio::test]
async fn unknown_tool_lists_the_closest_names_first() {
    let env = Env::new(&["fs", "echo"], "");
    let p = env.pipeline(64).await;
    let o = call(&p, "reed_file", json!({})).await;
    assert_kind(
        &o,
        "unknown_tool",
        "Unknown tool 'reed_file'. Available tools: read_file,",
    );
    assert_eq!(env.audit()[0]["decision"]["kind"], "not_reached");
}

#[tokio::test]
async fn reports_every_violation_at_once() {
    let env = Env::new(&["math"], "");
    let p = env.pipeline(64).await;
    let o = call(&p, "calc", json!({ "op": "root", "a": "x", "extra": 1 })).await;
    assert_kind(&o, "invalid_input", "Invalid input for tool 'calc':");
    let lines: Vec<&str> = o.content.lines().skip(1).collect();
    assert!(lines.len() >= 3, "{}", o.content);
    assert!(lines.iter().all(|l| l.starts_with("- /")), "{}", o.content);
    assert!(
        o.content.contains("- /op:") && o.content.contains("- /a:"),
        "{}",
        o.content
    );
}

#[tokio::test]
async fn coerces_what_models_commonly_send_and_records_it() {
    let env = Env::new(&["math"], "");
    let p = env.pipeline(64).await;
    let o = call(&p, "calc", json!({ "op": "add", "a": "2", "b": "3.5" })).await;
    assert!(!o.is_error(), "{}", o.content);
    assert_eq!(o.structured(), Some(&json!({ "result": 5.5 })));
    let rec = env.audit().pop().unwrap();
    assert_eq!(rec["coercions"].as_array().unwrap().len(), 2, "{rec}");
    let o = call(&p, "calc", json!({ "op": "add", "a": "two", "b": 1 })).await;
    assert_kind(&o, "invalid_input", "- /a:");
}

#[tokio::test]
async fn plugin_errors_come_back_as_results() {
    let env = Env::new(&["hostile", "math"], "[permissions]\nmode = \"bypass\"\n");
    let p = env.pipeline(64).await;
    assert_kind(
        &call(
            &p,
            "fail",
            json!({ "kind": "invalid-input", "message": "no such user" }),
        )
        .await,
        "invalid_input",
        "Invalid input for tool 'fail':\n- no such user",
    );
    assert_kind(
        &call(&p, "fail", json!({ "message": "disk on fire" })).await,
        "tool_failed",
        "disk on fire",
    );
    assert_kind(
        &call(&p, "calc", json!({ "op": "div", "a": 1, "b": 0 })).await,
        "tool_failed",
        "zero",
    );
    assert_kind(
        &call(&p, "bad_structured", json!({})).await,
        "bad_output",
        "does not match its output schema",
    );
    assert_kind(
        &call(&p, "not_json", json!({})).await,
        "bad_output",
        "not valid JSON",
    );
    assert_kind(
        &call(&p, "missing_structured", json!({})).await,
        "bad_output",
        "no structured",
    );
}

#[tokio::test]
async fn plan_mode_allows_only_read_only_tools() {
    let env = Env::new(
        &["fs"],
        &format!("[permissions]\nmode = \"plan\"\nallow = [\"write_file\"]\n{FS}"),
    );
    let p = env.pipeline(64).await;
    assert!(
        !call(&p, "list_dir", json!({ "path": "." }))
            .await
            .is_error()
    );
    assert_kind(
        &call(&p, "write_file", json!({ "path": "a.txt", "content": "x" })).await,
        "denied",
        "plan",
    );
    assert!(!env.work().join("a.txt").exists());
}

#[tokio::test]
async fn default_mode_asks_for_writes_and_names_the_rule_that_would_allow() {
    let env = Env::new(&["fs"], FS);
    let p = env.pipeline(64).await;
    let o = call(
        &p,
        "write_file",
        json!({ "path": "./notes/../a.txt", "content": "x" }),
    )
    .await;
    assert_kind(&o, "denied", "allow = [\"write_file(./a.txt)\"]");
    assert!(!env.work().join("a.txt").exists());

    let yes = Arc::new(Person(true, Mutex::default()));
    let o = p
        .call(CallRequest {
            approver: Some(yes.clone()),
            ..req("write_file", json!({ "path": "a.txt", "content": "x" }))
        })
        .await;
    assert!(!o.is_error(), "{}", o.content);
    assert_eq!(yes.1.lock().unwrap().len(), 1);
    let no = Arc::new(Person(false, Mutex::default()));
    let o = p
        .call(CallRequest {
            approver: Some(no),
            ..req("write_file", json!({ "path": "b.txt", "content": "x" }))
        })
        .await;
    assert_kind(&o, "denied", "declined");
    assert!(!env.work().join("b.txt").exists());
    let decisions: Vec<Value> = env.audit().iter().map(|r| r["decision"].clone()).collect();
    assert_eq!(decisions[1], json!({ "kind": "asked", "answer": true }));
    assert_eq!(decisions[2], json!({ "kind": "asked", "answer": false }));
}

/// Answers yes once told to.
struct Later(tokio::sync::Notify);

impl Approver for Later {
    fn approve<'a>(
        &'a self,
        _: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            self.0.notified().await;
            Answer::Approved
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_approval_is_recorded_before_the_answer_comes() {
    let env = Env::new(&["fs"], FS);
    let p = env.pipeline(64).await;
    let later = Arc::new(Later(tokio::sync::Notify::new()));
    let asked = later.clone();
    let pipeline = p.clone();
    let task = tokio::spawn(async move {
        let approver: Arc<dyn Approver> = asked;
        pipeline
            .call(CallRequest {
                approver: Some(approver),
                ..req("write_file", json!({ "path": "a.txt", "content": "x" }))
            })
            .await
    });
    let log = env.path().join(".toolhost/audit.jsonl");
    let lines = || -> Vec<Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let begin = wait_for_async("a begin line while asking", EVENT_WAIT, || {
        lines().into_iter().find(|l| l["event"] == "begin")
    })
    .await;
    assert_eq!(begin["decision"]["kind"], "asking", "{begin}");
    assert!(!env.work().join("a.txt").exists());
    later.0.notify_one();
    let o = task.await.unwrap();
    assert!(!o.is_error(), "{}", o.content);
    let mine: Vec<Value> = lines()
        .into_iter()
        .filter(|l| l["call_id"] == o.call_id.as_str())
        .collect();
    assert_eq!(mine.len(), 2, "one begin and one end line: {mine:?}");
    assert_eq!(
        mine[1]["decision"],
        json!({ "kind": "asked", "answer": true })
    );
}

#[tokio::test]
async fn accept_edits_allows_edits_but_asks_for_destructive_tools() {
    let env = Env::new(
        &["fs"],
        &format!("[permissions]\nmode = \"accept-edits\"\n{FS}"),
    );
    std::fs::write(env.work().join("f.txt"), "hello world").unwrap();
    let p = env.pipeline(64).await;
    let o = call(
        &p,
        "edit_file",
        json!({ "path": "f.txt", "old_string": "world", "new_string": "there" }),
    )
    .await;
    assert!(!o.is_error(), "{}", o.content);
    assert_kind(
        &call(&p, "write_file", json!({ "path": "f.txt", "content": "x" })).await,
        "denied",
        "approval",
    );
}

#[tokio::test]
async fn deny_beats_allow_and_bypass() {
    let env = Env::new(
        &["fs"],
        &format!(
            "[permissions]\nmode = \"bypass\"\nallow = [\"write_file\"]\ndeny = [\"write_file(./secrets/**)\"]\n{FS}"
        ),
    );
    std::fs::create_dir(env.work().join("secrets")).unwrap();
    let p = env.pipeline(64).await;
    assert!(
        !call(
            &p,
            "write_file",
            json!({ "path": "ok.txt", "content": "x" })
        )
        .await
        .is_error()
    );
    for path in ["secrets/k", "./secrets/k", "x/../secrets/k", "secrets//k"] {
        let o = call(&p, "write_file", json!({ "path": path, "content": "x" })).await;
        assert_kind(&o, "denied", "deny");
    }
    assert_eq!(
        std::fs::read_dir(env.work().join("secrets"))
            .unwrap()
            .count(),
        0
    );
}

#[tokio::test]
async fn per_plugin_rules_add_to_global_ones() {
    let env = Env::new(
        &["fs"],
        "[permissions]\nmode = \"bypass\"\n[plugins.fs]\ndirs = [{ host = \"work\", mode = \"rw\" }]\npermissions = { mode = \"plan\" }\n",
    );
    let p = env.pipeline(64).await;
    assert_kind(
        &call(&p, "write_file", json!({ "path": "a", "content": "x" })).await,
        "denied",
        "plan",
    );
}

#[tokio::test]
async fn truncates_a_10_mb_output_with_a_marker() {
    let env = Env::new(&["hostile"], "[permissions]\nmode = \"bypass\"\n");
    let p = env.pipeline(64).await;
    let o = call(&p, "big_output", json!({ "bytes": 10 << 20 })).await;
    assert!(!o.is_error(), "{}", o.content);
    assert!(o.content.len() < (256 << 10) + 400);
    assert!(
        o.content.contains("bytes cut"),
        "{}",
        &o.content[o.content.len() - 300..]
    );
    let rec = env.audit().pop().unwrap();
    assert_eq!(rec["truncated"], true);
}

#[tokio::test]
async fn concurrent_calls_leave_exactly_one_intact_audit_line_each() {
    let env = Env::new(&["echo", "math"], "");
    let p = env.pipeline(64).await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..48 {
        let p = p.clone();
        tasks.spawn(async move {
            let tool = if i % 3 == 0 { "calc" } else { "echo" };
            let input = if tool == "calc" {
                json!({ "op": "mul", "a": i, "b": 2 })
            } else {
                json!({ "text": format!("msg {i}") })
            };
            p.call(req(tool, input)).await
        });
    }
    let mut ids = std::collections::BTreeSet::new();
    while let Some(o) = tasks.join_next().await {
        let o = o.unwrap();
        assert!(!o.is_error(), "{}", o.content);
        ids.insert(o.call_id);
    }
    let audit = env.audit();
    assert_eq!(audit.len(), 48);
    let logged: std::collections::BTreeSet<String> = audit
        .iter()
        .map(|r| r["call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(logged, ids);
}

#[tokio::test]
async fn every_call_gets_a_fresh_instance_and_survives_a_timeout() {
    let env = Env::new(
        &["hostile"],
        "[permissions]\nmode = \"bypass\"\n[limits]\ntimeout-ms = 200\n",
    );
    let p = env.pipeline(64).await;
    let first = call(&p, "remember", json!({ "value": "secret" })).await;
    assert!(!first.is_error());
    let second = call(&p, "remember", json!({})).await;
    assert!(
        !second.content.contains("secret"),
        "state leaked between calls: {}",
        second.content
    );
    assert_kind(&call(&p, "spin", json!({})).await, "timeout", "200 ms");
    assert!(
        !call(&p, "remember", json!({})).await.is_error(),
        "the call after a timeout failed"
    );
}

#[tokio::test]
async fn cancellation_stops_a_running_plugin_promptly() {
    let env = Env::new(&["hostile"], "[permissions]\nmode = \"bypass\"\n");
    let p = env.pipeline(64).await;
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let log = env.path().join(".toolhost/audit.jsonl");
    let (cancelled_tx, cancelled_at) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        // Cancel once the plugin runs: its begin line is written as it starts.
        wait_for_async("the begin line of spin", EVENT_WAIT, || {
            audit_line_at(&log, |l| l["event"] == "begin")
        })
        .await;
        let _ = cancelled_tx.send(std::time::Instant::now());
        c.cancel();
    });
    let o = p
        .call(CallRequest {
            cancel,
            ..req("spin", json!({}))
        })
        .await;
    let took = cancelled_at.await.unwrap().elapsed();
    assert_kind(&o, "cancelled", "cancelled");
    assert!(
        took < Duration::from_secs(2),
        "stopped {took:?} after the cancel"
    );
    assert_eq!(env.audit().pop().unwrap()["outcome"], "cancelled");
}

#[tokio::test]
async fn forwards_progress_reports() {
    let env = Env::new(&["hostile"], "[permissions]\nmode = \"bypass\"\n");
    let p = env.pipeline(64).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let o = p
        .call(CallRequest {
            progress: Some(Arc::new(move |pr| sink.lock().unwrap().push(pr.done))),
            ..req("progress_flood", json!({ "count": 5 }))
        })
        .await;
    assert!(!o.is_error(), "{}", o.content);
    assert_eq!(seen.lock().unwrap().len(), 5);
}
