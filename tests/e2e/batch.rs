//! Batches of LLM tool calls: golden answers per API format, order and overlap under concurrency
//! (measured from the audit timestamps), per-call errors, cancellation, the CLI, the HTTP API.

use std::io::Write;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost::batch::{self, BatchOptions, BatchReport, Format, FormatChoice};
use toolhost::exec::Pipeline;
use toolhost_config::config::ServerConfig;

use crate::golden;
use crate::harness::{EVENT_WAIT, Env, audit_line_at, wait_for_async};

/// The hostile fixture, allowed everything, with a read-write `work/` as its `.`.
const HOSTILE: &str = "[permissions]\nmode = \"bypass\"\n[plugins.hostile]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n";

/// An Anthropic assistant message with one `tool_use` per (id, tool, input).
pub(crate) fn anthropic(calls: &[(&str, &str, Value)]) -> Value {
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(id, name, input)| json!({ "type": "tool_use", "id": id, "name": name, "input": input }))
        .collect();
    json!({ "role": "assistant", "content": blocks })
}

async fn run_with(
    p: &Arc<Pipeline>,
    message: &Value,
    cancel: &CancellationToken,
    on_result: impl FnMut(&batch::CallResult) + Send,
) -> BatchReport {
    let parsed = batch::parse(message, FormatChoice::Auto).unwrap();
    batch::run(
        p,
        &batch::new_batch_id(),
        parsed,
        &BatchOptions::default(),
        cancel,
        on_result,
    )
    .await
}

async fn run(p: &Arc<Pipeline>, message: &Value) -> BatchReport {
    run_with(p, message, &CancellationToken::new(), |_| {}).await
}

/// The audit records of a batch, in the order of its calls.
fn records(env: &Env, report: &BatchReport) -> Vec<Value> {
    let all: Vec<Value> = env
        .audit()
        .into_iter()
        .filter(|r| r["parent_id"] == report.batch_id.as_str())
        .collect();
    assert_eq!(
        all.len(),
        report.results.len(),
        "one audit line per call: {all:#?}"
    );
    report
        .results
        .iter()
        .map(|r| {
            all.iter()
                .find(|a| a["call_id"] == r.outcome.call_id.as_str())
                .unwrap()
                .clone()
        })
        .collect()
}

fn span(record: &Value) -> (DateTime<Utc>, DateTime<Utc>) {
    let at = |k: &str| {
        record[k]
            .as_str()
            .unwrap()
            .parse::<DateTime<Utc>>()
            .unwrap()
    };
    (at("ts_start"), at("ts_end"))
}

fn overlap(a: &Value, b: &Value) -> bool {
    let ((s1, e1), (s2, e2)) = (span(a), span(b));
    s1 < e2 && s2 < e1
}

fn kinds(report: &BatchReport) -> Vec<&str> {
    report
        .results
        .iter()
        .map(|r| r.outcome.error_kind().map_or("ok", |k| k.as_str()))
        .collect()
}

#[tokio::test]
async fn answers_each_format_as_its_golden_file() {
    let env = Env::new(&["echo", "math"], "");
    let p = env.pipeline(64).await;
    for format in Format::ALL {
        let input = golden::read_json(&format!("batch/{format}.input.json"));
        let report = run(&p, &input).await;
        assert_eq!(report.format, format);
        golden::check_json(&format!("batch/{format}.answer.json"), &report.answer());
        records(&env, &report); // one audit line per call, including the calls that could not run
        golden::check_json(
            &format!("batch/tools.{format}.json"),
            &batch::definitions(p.services().registry.catalog().specs(), format),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_first_call_still_comes_first() {
    let env = Env::new(&["echo", "hostile"], HOSTILE);
    let p = env.pipeline(64).await;
    let message = anthropic(&[
        ("slow", "sleep", json!({ "ms": 600 })),
        ("fast1", "echo", json!({ "text": "a" })),
        ("fast2", "echo", json!({ "text": "b" })),
    ]);
    let completed = Arc::new(Mutex::new(Vec::new()));
    let seen = completed.clone();
    let report = run_with(&p, &message, &CancellationToken::new(), move |r| {
        seen.lock().unwrap().push(r.index)
    })
    .await;
    assert_eq!(kinds(&report), ["ok", "ok", "ok"], "{report:#?}");
    let answer = report.answer();
    let ids: Vec<&Value> = answer["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["tool_use_id"])
        .collect();
    assert_eq!(ids, [&json!("slow"), &json!("fast1"), &json!("fast2")]);
    assert_eq!(
        completed.lock().unwrap().last(),
        Some(&0),
        "the slow call should finish last: {completed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_overlap_and_writes_overlap_nothing() {
    let env = Env::new(&["hostile"], HOSTILE);
    let p = env.pipeline(64).await;
    let sleep = || json!({ "ms": 300 });
    let message = anthropic(&[
        ("r0", "sleep", sleep()),
        ("r1", "sleep", sleep()),
        ("r2", "sleep", sleep()),
        ("w3", "write", json!({ "path": "a.txt", "content": "a" })),
        ("r4", "sleep", sleep()),
        ("r5", "read", json!({ "path": "a.txt" })),
        ("w6", "write", json!({ "path": "b.txt", "content": "b" })),
        ("w7", "write", json!({ "path": "c.txt", "content": "c" })),
    ]);
    let report = run(&p, &message).await;
    assert_eq!(kinds(&report), ["ok"; 8], "{report:#?}");
    assert_eq!(
        report.results[5].outcome.content, "a",
        "the read after the write sees it"
    );
    let recs = records(&env, &report);
    assert!(recs.iter().all(|r| r["origin"] == "batch"));
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        assert!(
            overlap(&recs[a], &recs[b]),
            "calls {a} and {b} did not overlap: {:?} {:?}",
            span(&recs[a]),
            span(&recs[b])
        );
    }
    // The read is far shorter than the sleep, and a busy runtime may run it whole before the
    // sleep's task is first polled (tokio runs the task spawned last first). What sharing
    // means is that the read never waits for the sleep to end.
    assert!(
        span(&recs[5]).0 < span(&recs[4]).1,
        "the read waited for the sleep: {:?} {:?}",
        span(&recs[4]),
        span(&recs[5])
    );
    for w in [3, 6, 7] {
        for (i, other) in recs.iter().enumerate().filter(|(i, _)| *i != w) {
            assert!(!overlap(&recs[w], other), "write {w} overlaps call {i}");
            let before = i < w;
            assert_eq!(
                span(other).1 <= span(&recs[w]).0,
                before,
                "call {i} is on the wrong side of write {w}"
            );
        }
    }
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(env.work().join(f).exists(), "{f}");
    }
}

#[tokio::test]
async fn the_concurrency_limit_caps_each_group() {
    let env = Env::new(&["hostile"], HOSTILE);
    let p = env.pipeline(64).await;
    let calls: Vec<(String, Value)> = (0..4)
        .map(|i| (format!("s{i}"), json!({ "ms": 250 })))
        .collect();
    let message = anthropic(
        &calls
            .iter()
            .map(|(id, input)| (id.as_str(), "sleep", input.clone()))
            .collect::<Vec<_>>(),
    );
    let parsed = batch::parse(&message, FormatChoice::Auto).unwrap();
    let options = BatchOptions {
        concurrency: 2,
        ..BatchOptions::default()
    };
    let report = batch::run(
        &p,
        "limited",
        parsed,
        &options,
        &CancellationToken::new(),
        |_| {},
    )
    .await;
    let recs = records(&env, &report);
    assert!(overlap(&recs[0], &recs[1]) && overlap(&recs[2], &recs[3]));
    assert!(
        span(&recs[1]).1 <= span(&recs[2]).0 && span(&recs[0]).1 <= span(&recs[3]).0,
        "groups of 2 overlapped"
    );
}

#[tokio::test]
async fn invalid_json_arguments_fail_that_call_alone() {
    let env = Env::new(&["echo", "math"], "");
    let p = env.pipeline(64).await;
    let message = json!({ "role": "assistant", "tool_calls": [
        { "id": "a", "type": "function", "function": { "name": "echo", "arguments": "{\"text\":\"before\"}" } },
        { "id": "b", "type": "function", "function": { "name": "calc", "arguments": "{\"op\":\"add\",\"a\":1" } },
        { "id": "c", "type": "function", "function": { "name": "echo", "arguments": "{\"text\":\"after\"}" } },
    ]});
    let report = run(&p, &message).await;
    assert_eq!(kinds(&report), ["ok", "invalid_input", "ok"]);
    let answer = report.answer();
    assert_eq!(
        answer[0],
        json!({ "role": "tool", "tool_call_id": "a", "content": "before" })
    );
    assert_eq!(answer[1]["tool_call_id"], "b");
    let text = answer[1]["content"].as_str().unwrap();
    assert!(
        text.contains("arguments of this call to 'calc' are not valid JSON"),
        "{text}"
    );
    assert_eq!(answer[2]["content"], "after");
    let rec = &records(&env, &report)[1];
    assert_eq!(
        (&rec["tool"], &rec["error_kind"], &rec["decision"]["kind"]),
        (
            &json!("calc"),
            &json!("invalid_input"),
            &json!("not_reached")
        )
    );
}

#[tokio::test]
async fn an_unknown_tool_in_the_middle_fails_alone() {
    let env = Env::new(&["echo", "math"], "");
    let p = env.pipeline(64).await;
    let message = anthropic(&[
        ("1", "echo", json!({ "text": "x" })),
        ("2", "eccho", json!({ "text": "y" })),
        ("3", "calc", json!({ "op": "sub", "a": 5, "b": 2 })),
    ]);
    let report = run(&p, &message).await;
    assert_eq!(kinds(&report), ["ok", "unknown_tool", "ok"]);
    let content = &report.answer()["content"];
    assert_eq!(content[1]["is_error"], true);
    assert!(
        content[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool 'eccho'. Available tools: echo,"),
        "{content}"
    );
    assert_eq!(content[2]["is_error"], false);
    assert_eq!(records(&env, &report)[1]["tool"], "eccho");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_batch_stops_what_runs_and_answers_the_rest_as_cancelled() {
    let env = Env::new(&["echo", "hostile"], HOSTILE);
    let p = env.pipeline(64).await;
    let message = anthropic(&[
        ("done", "echo", json!({ "text": "first" })),
        ("spin", "spin", json!({})),
        (
            "write",
            "write",
            json!({ "path": "late.txt", "content": "x" }),
        ),
        ("echo", "echo", json!({ "text": "late" })),
    ]);
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let first_done = Arc::new(tokio::sync::Notify::new());
    let notify = first_done.clone();
    let log = env.path().join(".toolhost/audit.jsonl");
    tokio::spawn(async move {
        notify.notified().await;
        // Cancel once `spin` runs: its begin line is written as its plugin starts.
        wait_for_async("the begin line of spin", EVENT_WAIT, || {
            audit_line_at(&log, |l| l["event"] == "begin" && l["tool"] == "spin")
        })
        .await;
        stop.cancel();
    });
    let started = Instant::now();
    let report = run_with(&p, &message, &cancel, move |r| {
        if r.index == 0 {
            first_done.notify_one();
        }
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // `done` and `spin` share a group; `spin` was running when the batch was cancelled.
    assert_eq!(
        kinds(&report),
        ["ok", "cancelled", "cancelled", "cancelled"],
        "{report:#?}"
    );
    assert!(!env.work().join("late.txt").exists());
    let outcomes: Vec<Value> = records(&env, &report)
        .iter()
        .map(|r| r["outcome"].clone())
        .collect();
    assert_eq!(outcomes, ["ok", "cancelled", "cancelled", "cancelled"]);
}

// ---------------------------------------------------------------------------------------------
// the command line

fn run_stdin(env: &Env, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = env
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The binary may exit (bad usage) before it reads its input: a closed pipe is no failure here.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

#[test]
fn cli_batch_prints_the_answer_and_exits_by_outcome() {
    let env = Env::new(&["echo", "math"], "");
    let ok = anthropic(&[
        ("a", "echo", json!({ "text": "hi" })),
        ("b", "calc", json!({ "op": "add", "a": 1, "b": 2 })),
    ]);
    let out = run_stdin(&env, &["batch"], &ok.to_string());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["role"], "user");
    assert_eq!(
        answer["content"][0],
        json!({ "type": "tool_result", "tool_use_id": "a", "content": "hi", "is_error": false })
    );
    assert!(
        env.audit()
            .iter()
            .all(|r| r["origin"] == "batch" && r["parent_id"].is_string())
    );

    // The golden message through the real binary gives the golden answer (exit 1: it has errors).
    let input = std::fs::read_to_string(golden::path("batch/openai.input.json")).unwrap();
    let out = run_stdin(
        &env,
        &["batch", "--format", "openai", "--concurrency", "2"],
        &input,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        golden::read_json("batch/openai.answer.json")
    );

    let out = run_stdin(
        &env,
        &["batch"],
        r#"{"role": "assistant", "content": "no calls"}"#,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("name the format"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_stdin(
        &env,
        &["batch", "--format", "anthropic"],
        r#"{"role": "assistant", "content": "no calls"}"#,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({ "role": "user", "content": [] })
    );
    let out = run_stdin(&env, &["batch", "--format", "gemini"], "{}");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("expected auto, anthropic, openai or openai-responses")
    );
}

#[test]
fn cli_list_prints_tool_definitions_for_each_api() {
    let env = Env::new(&["echo", "math"], "");
    for format in Format::ALL {
        let out = env.run(&["list", "--format", format.as_str()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            tools,
            golden::read_json(&format!("batch/tools.{format}.json")),
            "{format}"
        );
    }
    assert_eq!(
        env.run(&["list", "--format", "anthropic", "--json"])
            .status
            .code(),
        Some(2)
    );
}

// ---------------------------------------------------------------------------------------------
// the HTTP API, on a real socket

pub(crate) struct Reply {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

pub(crate) async fn serve(pipeline: Arc<Pipeline>, server: &ServerConfig) -> SocketAddr {
    let app = toolhost::server::Server::new(pipeline, server.clone()).batch_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The batch API's routes, driven without a socket: nothing these tests check depends on one
/// (the streamed and disconnect tests in `streaming` use [`serve`]).
pub(crate) fn app(pipeline: Arc<Pipeline>, server: &ServerConfig) -> axum::Router {
    toolhost::server::Server::new(pipeline, server.clone()).batch_router()
}

/// One request through `app`, its body read to the end.
pub(crate) async fn request(
    app: &axum::Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    use tower::ServiceExt;
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("Host", "127.0.0.1:8750");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request
        .body(axum::body::Body::from(body.to_owned()))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(30), app.clone().oneshot(request))
        .await
        .unwrap()
        .unwrap();
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    Reply {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_a_batch_in_the_api_shape() {
    let env = Env::new(&["echo", "math"], "");
    let p = env.pipeline(64).await;
    let app = app(p, &env.config().server);
    let input = std::fs::read_to_string(golden::path("batch/anthropic.input.json")).unwrap();
    let reply = request(
        &app,
        "POST",
        "/v1/tool-calls",
        &[("Content-Type", "application/json")],
        &input,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json(),
        golden::read_json("batch/anthropic.answer.json")
    );
    let batch_id = reply.header("x-toolhost-batch-id").unwrap();
    let records: Vec<Value> = env
        .audit()
        .into_iter()
        .filter(|r| r["parent_id"] == batch_id)
        .collect();
    assert_eq!(records.len(), 7);

    let reply = request(&app, "GET", "/v1/tools?format=openai-responses", &[], "").await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        golden::read_json("batch/tools.openai-responses.json")
    );

    for (path, body, needle) in [
        ("/v1/tool-calls", "{not json", "not valid JSON"),
        ("/v1/tool-calls", "{}", "name the format"),
        ("/v1/tool-calls?format=bard", "{}", "unknown format"),
        ("/v1/tool-calls?concurrency=0", "[]", "concurrency must be"),
        (
            "/v1/tool-calls?stream=maybe",
            "[]",
            "expected ndjson or sse",
        ),
    ] {
        let reply = request(&app, "POST", path, &[], body).await;
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        assert!(
            reply.json()["error"].as_str().unwrap().contains(needle),
            "{path}: {}",
            reply.body
        );
    }
    let reply = request(&app, "GET", "/v1/tools", &[], "").await;
    assert_eq!(reply.status, 400);
    assert!(reply.body.contains("pass the format"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_streams_results_as_they_complete_then_the_ordered_answer() {
    let env = Env::new(&["echo", "hostile"], HOSTILE);
    let p = env.pipeline(64).await;
    let app = app(p, &env.config().server);
    let message = json!([
        { "type": "function_call", "call_id": "slow", "name": "sleep", "arguments": "{\"ms\":600}" },
        { "type": "function_call", "call_id": "fast", "name": "echo", "arguments": "{\"text\":\"quick\"}" },
    ]);
    let reply = request(
        &app,
        "POST",
        "/v1/tool-calls",
        &[("Accept", "application/x-ndjson")],
        &message.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    let lines: Vec<Value> = reply
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", reply.body);
    assert_eq!(
        (&lines[0]["type"], &lines[0]["index"], &lines[0]["id"]),
        (&json!("result"), &json!(1), &json!("fast"))
    );
    assert_eq!(
        lines[0]["item"],
        json!({ "type": "function_call_output", "call_id": "fast", "output": "quick" })
    );
    assert_eq!(
        (&lines[1]["index"], &lines[1]["is_error"]),
        (&json!(0), &json!(false))
    );
    assert_eq!(lines[2]["type"], "answer");
    assert_eq!(
        lines[2]["batch_id"],
        reply.header("x-toolhost-batch-id").unwrap()
    );
    let ids: Vec<&Value> = lines[2]["answer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["call_id"])
        .collect();
    assert_eq!(ids, [&json!("slow"), &json!("fast")]);

    let reply = request(
        &app,
        "POST",
        "/v1/tool-calls?stream=sse",
        &[],
        &message.to_string(),
    )
    .await;
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events: Vec<&str> = reply
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(events, ["result", "result", "answer"], "{}", reply.body);
}

#[tokio::test]
async fn http_applies_the_token_body_limit_and_request_timeout() {
    let env = Env::new(&["echo", "hostile"], HOSTILE);
    let p = env.pipeline(64).await;
    let mut server = env.config().server;
    server.token = Some("sesame".into());
    server.max_body_bytes = 1024;
    server.request_timeout = Duration::from_millis(500);
    let app = app(p, &server);
    let message = anthropic(&[("a", "echo", json!({ "text": "hi" }))]).to_string();

    let reply = request(&app, "POST", "/v1/tool-calls", &[], &message).await;
    assert_eq!(reply.status, 401);
    let reply = request(&app, "GET", "/v1/tools?format=anthropic", &[], "").await;
    assert_eq!(reply.status, 401);
    let auth = [("Authorization", "Bearer sesame")];
    assert_eq!(
        request(&app, "POST", "/v1/tool-calls", &auth, &message)
            .await
            .status,
        200
    );
    let reply = request(
        &app,
        "POST",
        "/v1/tool-calls",
        &[
            ("Authorization", "Bearer sesame"),
            ("Origin", "https://evil.example"),
        ],
        &message,
    )
    .await;
    assert_eq!(reply.status, 403);

    let big = anthropic(&[("a", "echo", json!({ "text": "x".repeat(2048) }))]).to_string();
    assert_eq!(
        request(&app, "POST", "/v1/tool-calls", &auth, &big)
            .await
            .status,
        413
    );

    // Past the request timeout the running call ends as `timeout`, and the answer still comes back.
    let slow = anthropic(&[
        ("s", "spin", json!({})),
        ("e", "echo", json!({ "text": "after" })),
    ])
    .to_string();
    let started = Instant::now();
    let reply = request(&app, "POST", "/v1/tool-calls", &auth, &slow).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(started.elapsed() < Duration::from_secs(5));
    let content = &reply.json()["content"];
    assert_eq!(content[0]["is_error"], true);
    assert!(
        content[0]["content"]
            .as_str()
            .unwrap()
            .contains("request timeout"),
        "{content}"
    );
}
