//! One outcome, decided once: each former side door (a front end that decided admission, a
//! deadline or how an approval ended by itself) now gives the pipeline's outcome, and the wire,
//! the audit record (with its caller) and the stats all say the same.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::exec::{
    Answer, ApprovalRequest, Approver, CallOutcome, CallRequest, Deadline, Pipeline,
};

use crate::daemon::{Daemon, HttpSession, Reply, http};
use crate::harness::{EVENT_WAIT, Env, wait_until};

const TOKEN: &str = "sesame-outcomes";

const CONFIG: &str = r#"
[permissions]
mode = "bypass"

[plugins.hostile]
task = "optional"

[plugins.hostile.limits]
timeout-ms = 60000

[server]
token-env = "OUTCOMES_TOKEN"
shutdown-grace-ms = 30000
"#;

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// The end records of the calls of `tool` in the audit log.
fn ends(env: &Env, tool: &str) -> Vec<Value> {
    env.audit()
        .into_iter()
        .filter(|r| r["tool"] == tool)
        .collect()
}

/// `toolhost_call_errors_total{tool, kind}` as `/metrics` shows it to the token's caller, or 0.
fn errors_counted(addr: SocketAddr, tool: &str, kind: &str) -> u64 {
    let auth = bearer();
    let reply = http(addr, "GET", "/metrics", &[("Authorization", &auth)], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let wanted = format!("toolhost_call_errors_total{{tool=\"{tool}\",kind=\"{kind}\"}} ");
    reply
        .text()
        .lines()
        .find_map(|l| l.strip_prefix(&wanted))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// `message` posted to the batch API at `path`, with the token.
fn post_batch(addr: SocketAddr, path: &str, message: &Value) -> Reply {
    let auth = bearer();
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    http(addr, "POST", path, &headers, message.to_string().as_bytes())
}

/// Waits (bounded) until `/ready` says the daemon is stopping.
fn wait_until_stopping(addr: SocketAddr) {
    wait_until("/ready to say the daemon is stopping", EVENT_WAIT, || {
        http(addr, "GET", "/ready", &[], b"").status == 503
    });
}

#[test]
fn once_shutdown_starts_every_front_end_refuses_a_call_as_busy_recorded_with_its_caller() {
    let env = Env::new(&["hostile", "echo"], CONFIG);
    let mut d = Daemon::start_env(
        &env,
        &["--no-watch", "--http", "127.0.0.1:0"],
        &[("OUTCOMES_TOKEN", TOKEN)],
    );
    let addr = d.http.unwrap();
    let auth = bearer();
    let headers = [("Authorization", auth.as_str())];
    // An MCP session opened before the shutdown, and a call in flight to hold the daemon in its
    // grace period.
    let mut session = HttpSession::open(addr, &headers).unwrap();
    let slow = d.id();
    d.send(&json!({
        "jsonrpc": "2.0", "id": slow, "method": "tools/call",
        "params": { "name": "sleep", "arguments": { "ms": 4000 } }
    }));
    env.wait_for_begin("sleep", |l| l["tool"] == "sleep");
    d.signal("TERM");
    wait_until_stopping(addr);

    // MCP.
    let answer = session.call("echo", json!({"text": "mcp"})).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["toolhost/errorKind"], "busy",
        "{answer}"
    );
    // The batch API: every call of the message refused and recorded, 503 with Retry-After.
    let message = json!({
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "b1", "name": "echo", "input": {"text": "batch"}}]
    });
    let reply = post_batch(addr, "/v1/tool-calls", &message);
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.header("retry-after"), Some("1"));
    let body: Value = serde_json::from_str(&reply.text()).unwrap();
    assert_eq!(body["content"][0]["is_error"], true, "{body}");
    assert!(
        body["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{body}"
    );
    // A 2025-11-25 task request: refused without a task, as a plain result.
    let task = json!({
        "jsonrpc": "2.0", "id": 90, "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 10}, "task": {"ttl": 60000}}
    });
    let reply = session.post(task.to_string().as_bytes()).unwrap();
    let answer = reply
        .messages()
        .into_iter()
        .find(|m| m["id"] == 90)
        .unwrap_or_else(|| panic!("no answer: {}", reply.text()));
    assert!(answer["result"].get("task").is_none(), "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["toolhost/errorKind"], "busy",
        "{answer}"
    );

    // The stats count what the wire said: two refused echo calls and one refused sleep.
    assert_eq!(errors_counted(addr, "echo", "busy"), 2);
    assert_eq!(errors_counted(addr, "sleep", "busy"), 1);
    assert_eq!(d.answer(slow)["result"]["isError"], false);
    assert!(d.wait(Duration::from_secs(60)).success());

    // The audit log: each refusal once, as `busy`, with the caller who made it.
    let echoes = ends(&env, "echo");
    assert_eq!(echoes.len(), 2, "{echoes:?}");
    let sleeps: Vec<Value> = ends(&env, "sleep")
        .into_iter()
        .filter(|r| r["error_kind"] == "busy")
        .collect();
    assert_eq!(sleeps.len(), 1, "{:?}", env.audit());
    for r in echoes.iter().chain(&sleeps) {
        assert_eq!(r["error_kind"], "busy", "{r}");
        assert_eq!(r["caller"]["subject"], "static-token", "{r}");
        assert_eq!(r["decision"]["kind"], "not_reached", "{r}");
    }
    let origins: Vec<&str> = echoes
        .iter()
        .map(|r| r["origin"].as_str().unwrap())
        .collect();
    assert!(
        origins.contains(&"mcp") && origins.contains(&"batch"),
        "{origins:?}"
    );
}

#[test]
fn a_batch_past_the_request_timeout_ends_as_timeout_everywhere() {
    let config = CONFIG.replace("[server]\n", "[server]\nrequest-timeout-ms = 1500\n");
    let env = Env::new(&["hostile", "echo"], &config);
    let d = Daemon::start_env(
        &env,
        &["--no-watch", "--http", "127.0.0.1:0"],
        &[("OUTCOMES_TOKEN", TOKEN)],
    );
    let addr = d.http.unwrap();
    // `spin` runs until stopped; with one call at a time, `sleep` starts only after it ends.
    let message = json!({
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "s", "name": "spin", "input": {}},
            {"type": "tool_use", "id": "e", "name": "sleep", "input": {"ms": 10}}
        ]
    });
    let reply = post_batch(addr, "/v1/tool-calls?concurrency=1", &message);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body: Value = serde_json::from_str(&reply.text()).unwrap();
    for result in body["content"].as_array().unwrap() {
        assert_eq!(result["is_error"], true, "{body}");
        let text = result["content"].as_str().unwrap();
        assert!(text.contains("request timeout of 1.5 s"), "{body}");
    }
    assert_eq!(errors_counted(addr, "spin", "timeout"), 1);
    assert_eq!(errors_counted(addr, "sleep", "timeout"), 1);
    assert!(d.stop().success());
    for tool in ["spin", "sleep"] {
        let records = ends(&env, tool);
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0]["error_kind"], "timeout", "{records:?}");
        assert_eq!(records[0]["outcome"], "error", "{records:?}");
        assert_eq!(records[0]["caller"]["subject"], "static-token");
    }
}

#[test]
fn a_batch_entry_that_does_not_parse_is_recorded_with_its_caller_under_no_made_up_label() {
    let env = Env::new(&["hostile", "echo"], CONFIG);
    let d = Daemon::start_env(
        &env,
        &["--no-watch", "--http", "127.0.0.1:0"],
        &[("OUTCOMES_TOKEN", TOKEN)],
    );
    let addr = d.http.unwrap();
    let auth = bearer();
    // Chat Completions arguments that are not JSON: the call cannot run.
    let message = json!({
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "made_up_tool_name_1234", "arguments": "{not json"}}]
    });
    let reply = post_batch(addr, "/v1/tool-calls", &message);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body: Value = serde_json::from_str(&reply.text()).unwrap();
    assert!(
        body.to_string().contains("made_up_tool_name_1234"),
        "{body}"
    );
    let metrics = http(addr, "GET", "/metrics", &[("Authorization", &auth)], b"").text();
    assert!(
        !metrics.contains("made_up_tool_name_1234"),
        "a client's made-up name became a metrics label"
    );
    assert_eq!(errors_counted(addr, "(unknown)", "invalid_input"), 1);
    assert!(d.stop().success());
    let records = ends(&env, "made_up_tool_name_1234");
    assert_eq!(records.len(), 1, "{:?}", env.audit());
    assert_eq!(records[0]["error_kind"], "invalid_input");
    assert_eq!(records[0]["origin"], "batch");
    assert_eq!(records[0]["caller"]["subject"], "static-token");
}

/// An approver whose question ends as given.
struct Ends(Answer);

impl Approver for Ends {
    fn approve<'a>(
        &'a self,
        _: &'a ApprovalRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let answer = self.0.clone();
        Box::pin(async move { answer })
    }
}

async fn ask(p: &Pipeline, answer: Answer) -> CallOutcome {
    p.call(CallRequest {
        tool: "write_file".into(),
        input: json!({"path": "a.txt", "content": "x"}),
        origin: "test",
        approver: Some(Arc::new(Ends(answer))),
        ..CallRequest::default()
    })
    .await
}

#[tokio::test]
async fn an_approval_question_nobody_answered_is_not_a_refusal() {
    let env = Env::new(
        &["fs"],
        "[plugins.fs]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n[permissions]\nask = [\"write_file\"]\n",
    );
    let p = env.pipeline(8).await;
    let declined = ask(&p, Answer::Declined).await;
    assert!(
        declined.content.contains("the user declined the call"),
        "{}",
        declined.content
    );
    let unanswered = ask(&p, Answer::Unanswered("nobody answered within 60 s".into())).await;
    assert!(
        unanswered
            .content
            .contains("none came (nobody answered within 60 s)")
            && unanswered.content.contains("Nobody declined it"),
        "{}",
        unanswered.content
    );
    let mismatched = ask(&p, Answer::Mismatched).await;
    assert!(
        mismatched.content.contains("given for a different input"),
        "{}",
        mismatched.content
    );
    for o in [&declined, &unanswered, &mismatched] {
        assert_eq!(o.error_kind().map(|k| k.as_str()), Some("denied"));
    }
    let decisions: Vec<Value> = env.audit().iter().map(|r| r["decision"].clone()).collect();
    assert_eq!(
        decisions,
        [
            json!({"kind": "asked", "answer": false}),
            json!({"kind": "unanswered", "why": "nobody answered within 60 s"}),
            json!({"kind": "mismatched"}),
        ]
    );
    assert!(!env.work().join("a.txt").exists(), "no approval, no write");
}

#[tokio::test]
async fn the_pipeline_refuses_new_calls_once_draining_and_lets_admitted_work_finish() {
    let env = Env::new(&["echo"], "[permissions]\nmode = \"bypass\"\n");
    let p = env.pipeline(8).await;
    let ticket = p.services().admission.admit().unwrap();
    let drained = tokio::spawn({
        let p = p.clone();
        async move { p.services().admission.drain(Duration::from_secs(30)).await }
    });
    while !p.services().admission.stopping().is_cancelled() {
        tokio::task::yield_now().await;
    }
    let echo = |admitted| CallRequest {
        tool: "echo".into(),
        input: json!({"text": "hi"}),
        origin: "test",
        admitted,
        ..CallRequest::default()
    };
    let refused = p.call(echo(None)).await;
    assert_eq!(refused.error_kind().map(|k| k.as_str()), Some("busy"));
    let admitted = p.call(echo(Some(ticket.clone()))).await;
    assert!(!admitted.is_error(), "{}", admitted.content);
    // A deadline that passed before the call began ends it as `timeout` without running it.
    let late = CallRequest {
        deadline: Some(Deadline::after(Duration::ZERO)),
        ..echo(Some(ticket.clone()))
    };
    let late = p.call(late).await;
    assert_eq!(late.error_kind().map(|k| k.as_str()), Some("timeout"));
    assert!(!drained.is_finished(), "the ticket holds the drain");
    drop(ticket);
    assert!(drained.await.unwrap());
    let kinds: Vec<Value> = env
        .audit()
        .iter()
        .map(|r| r["error_kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("busy"), Value::Null, json!("timeout")]);
}
