//! Streamed batches (issue #21): the model's raw streaming response, replayed event by event with
//! delays from the recordings in `tests/streams/`, through `POST /v1/tool-calls` on a real socket
//! and through `toolhost batch --stream`. Calls start before the stream ends (the audit log's
//! timestamps and the answer's own events prove it), the read/write rule holds, and a cut or
//! malformed stream is answered call by call.
//!
//! The recordings call `echo` (read-only) and `fs_write`; here `fs_write` is the hostile fixture's
//! `write` (destructive), writing into the test's work folder.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::batch::serve;
use crate::harness::{EVENT_WAIT, Env, audit_line_at, poll_async, root, wait_for_async};

/// echo and the hostile fixture, allowed everything, with a read-write `work/` as its `.`.
const CONFIG: &str = "[permissions]\nmode = \"bypass\"\n[plugins.hostile]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n";

/// What the recorded `fs_write` call writes.
const WRITTEN: &str = "line one\nline two: \"quoted\" ✓\n";

/// A recording, with its `fs_write` calls renamed to the fixture's `write`.
fn recording(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/streams").join(name))
        .unwrap()
        .replace("\"fs_write\"", "\"write\"")
}

/// A recording cut into its events (SSE: up to each blank line; NDJSON: each line), as a
/// streaming API sends them.
fn events(text: &str) -> Vec<String> {
    let sse = !text.trim_start().starts_with('{');
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        current.push_str(line);
        if !sse || line.trim().is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The gap between two events: a stream of ~40 events lasts about 1.2 s, as a model's would.
const GAP: Duration = Duration::from_millis(30);

/// What a replay saw: each answer line with when it arrived, and when the last event was sent.
struct Replay {
    lines: Vec<(Instant, Value)>,
    last_sent: Instant,
    last_sent_wall: SystemTime,
    batch_id: String,
}

impl Replay {
    fn of_type(&self, kind: &str) -> Vec<&(Instant, Value)> {
        self.lines
            .iter()
            .filter(|(_, v)| v["type"] == kind)
            .collect()
    }

    fn answer(&self) -> &Value {
        let (_, answer) = self.lines.last().expect("an answer");
        assert_eq!(answer["type"], "answer", "the answer is last: {answer}");
        answer
    }

    /// `error_kind` of each call's result, in the order of the calls.
    fn kinds(&self) -> Vec<String> {
        let mut results: Vec<&Value> = self.of_type("result").into_iter().map(|(_, v)| v).collect();
        results.sort_by_key(|v| v["index"].as_u64());
        results
            .iter()
            .map(|v| v["error_kind"].as_str().unwrap_or("ok").to_owned())
            .collect()
    }
}

/// POSTs `events` to the daemon at `addr` as a request body that arrives one event every `GAP`,
/// reading the NDJSON answer as it comes.
async fn replay_http(
    addr: std::net::SocketAddr,
    content_type: &str,
    events: Vec<String>,
) -> Replay {
    replay_http_stalling(addr, content_type, events, None).await
}

/// [`replay_http`], the client going silent (its connection open) after `stall` events.
async fn replay_http_stalling(
    addr: std::net::SocketAddr,
    content_type: &str,
    events: Vec<String>,
    stall: Option<usize>,
) -> Replay {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        for (i, event) in events.into_iter().enumerate() {
            if stall == Some(i) {
                let _ = sent_tx.send((Instant::now(), SystemTime::now()));
                // A sleep on purpose: the stall itself is what the read timeout is tested against.
                tokio::time::sleep(Duration::from_secs(5)).await;
                return;
            }
            // A sleep on purpose: the gap between events is the model's pace being replayed.
            tokio::time::sleep(GAP).await;
            if tx.send(Ok(event.into_bytes())).await.is_err() {
                return;
            }
        }
        let _ = sent_tx.send((Instant::now(), SystemTime::now()));
    });
    let body = reqwest::Body::wrap_stream(tokio_stream(rx));
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/v1/tool-calls?stream=ndjson"))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let batch_id = response.headers()["x-toolhost-batch-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut lines = Vec::new();
    let mut pending = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        pending.extend_from_slice(&chunk.unwrap());
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            lines.push((Instant::now(), serde_json::from_slice(&line).unwrap()));
        }
    }
    let (last_sent, last_sent_wall) = sent_rx.await.unwrap();
    Replay {
        lines,
        last_sent,
        last_sent_wall,
        batch_id,
    }
}

/// An mpsc receiver as a stream.
fn tokio_stream<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// The audit records of the batch, by call index (the answer's `call_id`s).
fn records(env: &Env, replay: &Replay) -> Vec<Value> {
    let all: Vec<Value> = env
        .audit()
        .into_iter()
        .filter(|r| r["parent_id"] == replay.batch_id.as_str())
        .collect();
    let mut results: Vec<&Value> = replay
        .of_type("result")
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    results.sort_by_key(|v| v["index"].as_u64());
    assert_eq!(
        all.len(),
        results.len(),
        "one audit line per call: {all:#?}"
    );
    results
        .iter()
        .map(|r| {
            all.iter()
                .find(|a| a["call_id"] == r["call_id"])
                .unwrap_or_else(|| panic!("no audit line for {r}"))
                .clone()
        })
        .collect()
}

fn at(record: &Value, key: &str) -> DateTime<Utc> {
    record[key].as_str().unwrap().parse().unwrap()
}

/// Calls 0 (echo), 1 (write), 2 (echo): the first ran and answered while the stream was still
/// arriving, and the write ran alone, after the first and before the last.
fn assert_ran_while_streaming(env: &Env, replay: &Replay) {
    assert_eq!(replay.kinds(), ["ok", "ok", "ok"], "{:#?}", replay.lines);
    let first = replay
        .of_type("result")
        .into_iter()
        .find(|(_, v)| v["index"] == 0)
        .unwrap();
    assert!(
        first.0 < replay.last_sent,
        "call 0 was answered {:?} after the stream's last event",
        first.0 - replay.last_sent
    );
    let recs = records(env, replay);
    let last_sent: DateTime<Utc> = replay.last_sent_wall.into();
    assert!(
        at(&recs[0], "ts_start") < last_sent && at(&recs[1], "ts_start") < last_sent,
        "calls 0 and 1 began before the stream ended: {recs:#?}"
    );
    assert!(
        at(&recs[0], "ts_end") <= at(&recs[1], "ts_start"),
        "the write waited for call 0"
    );
    assert!(
        at(&recs[1], "ts_end") <= at(&recs[2], "ts_start"),
        "call 2 waited for the write"
    );
    assert!(recs.iter().all(|r| r["origin"] == "batch"));
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        WRITTEN
    );
    // Pending events showed each call before it started.
    for index in 0..3 {
        let pending = replay
            .lines
            .iter()
            .position(|(_, v)| v["type"] == "pending" && v["index"] == index);
        let started = replay
            .lines
            .iter()
            .position(|(_, v)| v["type"] == "started" && v["index"] == index);
        assert!(pending.unwrap() < started.unwrap(), "call {index}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_runs_each_formats_calls_while_the_stream_arrives() {
    for (file, content_type, format) in [
        ("anthropic.sse", "text/event-stream", "anthropic"),
        ("anthropic.ndjson", "application/x-ndjson", "anthropic"),
        ("openai-chat.sse", "text/event-stream", "openai"),
        (
            "openai-responses.sse",
            "text/event-stream; charset=utf-8",
            "openai-responses",
        ),
    ] {
        let env = Env::new(&["echo", "hostile"], CONFIG);
        let p = env.pipeline(16).await;
        let addr = serve(p, &env.config().server).await;
        let replay = replay_http(addr, content_type, events(&recording(file))).await;
        assert_ran_while_streaming(&env, &replay);
        let answer = replay.answer();
        assert_eq!(answer["format"], format, "{file}");
        assert_eq!(answer["stream"]["ending"]["kind"], "stopped", "{file}");
        let ids: Vec<&str> = (0..3)
            .map(|i| {
                let started = replay.of_type("started");
                let (_, s) = started.into_iter().find(|(_, v)| v["index"] == i).unwrap();
                s["id"].as_str().unwrap()
            })
            .collect();
        assert_eq!(
            answer_ids(answer),
            ids,
            "{file}: the answer is in call order"
        );
    }
}

/// The call ids an answer's items carry, in order, whatever its API.
fn answer_ids(answer: &Value) -> Vec<&str> {
    let body = &answer["answer"];
    let items = match answer["format"].as_str().unwrap() {
        "anthropic" => body["content"].as_array().unwrap(),
        _ => body.as_array().unwrap(),
    };
    items
        .iter()
        .map(|item| {
            ["tool_use_id", "tool_call_id", "call_id"]
                .iter()
                .find_map(|k| item[*k].as_str())
                .unwrap_or("")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_a_cut_or_broken_stream_call_by_call() {
    for (file, ending, kinds) in [
        ("anthropic-cut.sse", "cut", &["ok", "invalid_input"][..]),
        ("openai-chat-cut.sse", "cut", &["ok", "invalid_input"][..]),
        (
            "openai-responses-cut.sse",
            "cut",
            &["ok", "invalid_input"][..],
        ),
        (
            "anthropic-overloaded.sse",
            "failed",
            &["ok", "invalid_input"][..],
        ),
        (
            "anthropic-malformed.sse",
            "stopped",
            &[
                "ok",
                "invalid_input",
                "invalid_input",
                "invalid_input",
                "invalid_input",
                "invalid_input",
                "ok",
            ][..],
        ),
        (
            "openai-chat-malformed.sse",
            "stopped",
            &[
                "ok",
                "invalid_input",
                "invalid_input",
                "invalid_input",
                "ok",
            ][..],
        ),
    ] {
        let env = Env::new(&["echo", "hostile"], CONFIG);
        let p = env.pipeline(16).await;
        let addr = serve(p, &env.config().server).await;
        let replay = replay_http(addr, "text/event-stream", events(&recording(file))).await;
        assert_eq!(replay.kinds(), kinds, "{file}: {:#?}", replay.lines);
        let answer = replay.answer();
        assert_eq!(answer["stream"]["ending"]["kind"], ending, "{file}");
        assert_eq!(answer_ids(answer).len(), kinds.len(), "{file}");
        // Every call has its audit line; none of the broken ones ran.
        let recs = records(&env, &replay);
        for (rec, kind) in recs.iter().zip(kinds) {
            assert_eq!(rec["error_kind"].as_str().unwrap_or("ok"), *kind, "{file}");
        }
        if file.ends_with("-cut.sse") || file == "anthropic-overloaded.sse" {
            let (_, cut) = replay
                .of_type("result")
                .into_iter()
                .find(|(_, v)| v["index"] == 1)
                .unwrap();
            let text = cut["item"].to_string();
            assert!(
                text.contains("cut off before they were complete"),
                "{file}: {text}"
            );
            assert!(
                !env.work().join("out.txt").exists(),
                "{file}: the cut write never ran"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_refuses_a_body_that_is_no_stream_before_running_anything() {
    let env = Env::new(&["echo"], "");
    let p = env.pipeline(4).await;
    let addr = serve(p, &env.config().server).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    for (body, needle) in [
        ("data: {\"hello\": 1}\n\n", "cannot tell which API"),
        ("", "holds no event"),
        (
            "data: {\"type\":\"message_start\",\"message\":{}}\n\n",
            "not an OpenAI Chat Completions stream",
        ),
    ] {
        let format = if needle.contains("OpenAI") {
            "?format=openai"
        } else {
            ""
        };
        let reply = client
            .post(format!("http://{addr}/v1/tool-calls{format}"))
            .header("content-type", "text/event-stream")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 400, "{body:?}");
        let text = reply.text().await.unwrap();
        assert!(text.contains(needle), "{body:?}: {text}");
    }
    assert!(env.audit().is_empty(), "nothing ran");
}

/// `toolhost batch --stream`, fed one event every `GAP` from another thread: each stdout line with
/// when it arrived, when the last event was written, and the exit code.
fn replay_cli(env: &Env, events: Vec<String>) -> (Vec<(Instant, Value)>, Instant, Option<i32>) {
    let mut child = env
        .command(&["batch", "--stream"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for event in events {
            // A sleep on purpose: the gap between events is the model's pace being replayed.
            std::thread::sleep(GAP);
            stdin.write_all(event.as_bytes()).unwrap();
            stdin.flush().unwrap();
        }
        Instant::now()
    });
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        lines.push((
            Instant::now(),
            serde_json::from_str(&line.unwrap()).unwrap(),
        ));
    }
    let last_sent = writer.join().unwrap();
    (lines, last_sent, child.wait().unwrap().code())
}

#[test]
fn cli_stream_runs_calls_as_they_arrive_and_exits_by_outcome() {
    let env = Env::new(&["echo", "hostile"], CONFIG);
    // Compiled and cached first, so that the replay measures the stream, not the first compile.
    assert!(env.run(&["list"]).status.success());
    let (lines, last_sent, code) = replay_cli(&env, events(&recording("openai-responses.sse")));
    assert_eq!(code, Some(0), "{lines:#?}");
    let first = lines
        .iter()
        .find(|(_, v)| v["type"] == "result" && v["index"] == 0)
        .unwrap();
    assert!(
        first.0 < last_sent,
        "call 0 was answered before the stream ended"
    );
    let (_, answer) = lines.last().unwrap();
    assert_eq!(answer["type"], "answer");
    assert_eq!(answer_ids(answer).len(), 3);
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        WRITTEN
    );
    let audit: Vec<Value> = env
        .audit()
        .into_iter()
        .filter(|r| r["parent_id"] == answer["batch_id"])
        .collect();
    assert_eq!(audit.len(), 3, "one audit line per call");

    // A cut stream: the complete call runs, the cut one is an error; exit 1.
    let env = Env::new(&["echo", "hostile"], CONFIG);
    let (lines, _, code) = replay_cli(&env, events(&recording("openai-chat-cut.sse")));
    assert_eq!(code, Some(1), "{lines:#?}");
    let (_, answer) = lines.last().unwrap();
    assert_eq!(answer["stream"]["ending"]["kind"], "cut");
    assert_eq!(env.audit().len(), 2);

    // Not a stream at all: exit 2, nothing run.
    let env = Env::new(&["echo"], "");
    let (lines, _, code) = replay_cli(&env, vec!["{\"role\": \"assistant\"}\n".into()]);
    assert_eq!(code, Some(2), "{lines:#?}");
    assert!(env.audit().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_cuts_a_stalled_stream_at_the_read_timeout_and_answers_what_it_began() {
    let env = Env::new(
        &["echo", "hostile"],
        &format!("{CONFIG}[server]\nread-timeout-ms = 600\n"),
    );
    let p = env.pipeline(16).await;
    let addr = serve(p, &env.config().server).await;
    let events = events(&recording("anthropic.sse"));
    // Silent in the middle of the write's arguments.
    let write = events
        .iter()
        .position(|e| e.contains("\"name\":\"write\""))
        .unwrap();
    let started = Instant::now();
    let replay = replay_http_stalling(addr, "text/event-stream", events, Some(write + 2)).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "cut at the read timeout"
    );
    assert_eq!(
        replay.kinds(),
        ["ok", "invalid_input"],
        "{:#?}",
        replay.lines
    );
    let answer = replay.answer();
    assert_eq!(answer["stream"]["ending"]["kind"], "cut");
    let broken = answer["stream"]["broken"].as_str().unwrap();
    assert!(broken.contains("stalled"), "{broken}");
    assert!(
        !env.work().join("out.txt").exists(),
        "the cut write never ran"
    );
    assert_eq!(records(&env, &replay).len(), 2);
}

/// An Anthropic stream, NDJSON, with one `tool_use` block per (tool, input), in order.
fn anthropic_stream(calls: &[(&str, Value)]) -> Vec<String> {
    let line = |v: Value| format!("{v}\n");
    let mut out = vec![line(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m"}}))];
    for (i, (tool, input)) in calls.iter().enumerate() {
        out.push(line(json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": tool, "input": {}}})));
        out.push(line(json!({"type": "content_block_delta", "index": i,
            "delta": {"type": "input_json_delta", "partial_json": input.to_string()}})));
        out.push(line(json!({"type": "content_block_stop", "index": i})));
    }
    out.push(line(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
    ));
    out.push(line(json!({"type": "message_stop"})));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_reads_overlap_and_a_write_runs_alone_between_them() {
    let env = Env::new(&["echo", "hostile"], CONFIG);
    let p = env.pipeline(16).await;
    let addr = serve(p, &env.config().server).await;
    let sleep = || json!({ "ms": 400 });
    let stream = anthropic_stream(&[
        ("sleep", sleep()),
        ("sleep", sleep()),
        ("write", json!({ "path": "a.txt", "content": "a" })),
        ("sleep", sleep()),
        ("read", json!({ "path": "a.txt" })),
    ]);
    let replay = replay_http(addr, "application/x-ndjson", stream).await;
    assert_eq!(replay.kinds(), ["ok"; 5], "{:#?}", replay.lines);
    let recs = records(&env, &replay);
    let span = |r: &Value| (at(r, "ts_start"), at(r, "ts_end"));
    let overlap = |a: &Value, b: &Value| {
        let ((s1, e1), (s2, e2)) = (span(a), span(b));
        s1 < e2 && s2 < e1
    };
    assert!(overlap(&recs[0], &recs[1]), "the two reads ran together");
    for (i, other) in recs.iter().enumerate().filter(|(i, _)| *i != 2) {
        assert!(!overlap(&recs[2], other), "the write overlaps call {i}");
        assert_eq!(
            span(other).1 <= span(&recs[2]).0,
            i < 2,
            "call {i} vs the write"
        );
    }
    assert!(overlap(&recs[3], &recs[4]) || span(&recs[3]).1 <= span(&recs[4]).0);
    let (_, read) = replay
        .of_type("result")
        .into_iter()
        .find(|(_, v)| v["index"] == 4)
        .unwrap();
    assert_eq!(
        read["item"]["content"], "a",
        "the read after the write sees it"
    );
}

/// POSTs `lines` as the start of an NDJSON stream whose end has not come: the answer (its head
/// read), the batch id, and the sender that keeps the body open until it is dropped.
async fn post_unfinished(
    addr: std::net::SocketAddr,
    lines: &[String],
) -> (
    reqwest::Response,
    String,
    tokio::sync::mpsc::Sender<Result<Vec<u8>, std::io::Error>>,
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (tx, rx) = tokio::sync::mpsc::channel(lines.len().max(1));
    for line in lines {
        tx.send(Ok(line.clone().into_bytes())).await.unwrap();
    }
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/v1/tool-calls"))
        .header("content-type", "application/x-ndjson")
        .body(reqwest::Body::wrap_stream(tokio_stream(rx)))
        .send()
        .await
        .unwrap();
    let batch_id = response.headers()["x-toolhost-batch-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (response, batch_id, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_mid_stream_leaves_one_audit_line_per_call() {
    let env = Env::new(&["echo", "hostile"], CONFIG);
    let p = env.pipeline(16).await;
    let addr = serve(p, &env.config().server).await;
    let stream = anthropic_stream(&[
        ("sleep", json!({ "ms": 300 })),
        ("write", json!({ "path": "a.txt", "content": "a" })),
    ]);
    // The first call whole and the write's start, then the client vanishes.
    let (response, batch_id, tx) = post_unfinished(addr, &stream[..5]).await;
    let (log, batch) = (env.path().join(".toolhost/audit.jsonl"), batch_id.clone());
    wait_for_async(
        "the begin line of the stream's first call",
        EVENT_WAIT,
        || {
            audit_line_at(&log, |l| {
                l["event"] == "begin" && l["parent_id"] == batch.as_str()
            })
        },
    )
    .await;
    drop(response);
    drop(tx);
    // Every call the stream began ends, each with one begin and one end line at most.
    let ended = || {
        let lines: Vec<Value> = env
            .audit_lines()
            .into_iter()
            .filter(|r| r["parent_id"] == batch_id.as_str())
            .collect();
        let ends: Vec<Value> = lines
            .iter()
            .filter(|r| r["event"] == "end")
            .cloned()
            .collect();
        let begins = lines.iter().filter(|r| r["event"] == "begin").count();
        (ends.len() == 2 && begins <= ends.len()).then_some(ends)
    };
    let ends = poll_async(EVENT_WAIT, ended).await.unwrap_or_else(|| {
        panic!(
            "calls left unrecorded after {EVENT_WAIT:?}: {:#?}",
            env.audit_lines()
        )
    });
    let mut ids: Vec<&str> = ends
        .iter()
        .map(|r| r["call_id"].as_str().unwrap())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 2, "one end line per call: {ends:#?}");
    assert!(
        !env.work().join("a.txt").exists(),
        "the cut write never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_stops_reading_the_stream_and_records_every_call_it_began() {
    let env = Env::new(
        &["echo", "hostile"],
        &format!("{CONFIG}[server]\nshutdown-grace-ms = 5000\n"),
    );
    let mut d = crate::daemon::Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let stream = anthropic_stream(&[
        ("sleep", json!({ "ms": 1500 })),
        ("echo", json!({ "text": "never complete" })),
    ]);
    // The sleep whole, then the echo's start: the model is still writing when the daemon stops.
    let (response, batch_id, tx) = post_unfinished(addr, &stream[..5]).await;
    let log = env.path().join(".toolhost/audit.jsonl");
    wait_for_async("the begin line of the sleep", EVENT_WAIT, || {
        audit_line_at(&log, |l| l["event"] == "begin")
    })
    .await;
    d.signal("TERM");
    let body = response.text().await.unwrap_or_default();
    drop(tx);
    d.wait(Duration::from_secs(20));
    let ends: Vec<Value> = env
        .audit_lines()
        .into_iter()
        .filter(|l| l["parent_id"] == batch_id.as_str() && l["event"] == "end")
        .collect();
    let kinds: Vec<&str> = ends
        .iter()
        .map(|r| r["error_kind"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(ends.len(), 2, "{ends:#?}\n{body}");
    assert!(
        kinds.contains(&"ok"),
        "the running call finished within the grace: {kinds:?}"
    );
    assert!(
        kinds.contains(&"invalid_input"),
        "the call still arriving was cut: {kinds:?}"
    );
    let out = env.run(&["audit", "--json"]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["total"]["unfinished"], 0, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_content_block_index_answers_the_second_call_as_broken_and_runs_it_never() {
    let env = Env::new(&["echo", "hostile"], CONFIG);
    let p = env.pipeline(16).await;
    let addr = serve(p, &env.config().server).await;
    let mut stream = anthropic_stream(&[
        ("write", json!({ "path": "first.txt", "content": "1" })),
        ("write", json!({ "path": "second.txt", "content": "2" })),
        ("echo", json!({ "text": "after" })),
    ]);
    // The second call's block reuses index 0, whose call has ended.
    for line in &mut stream[4..7] {
        *line = line.replace("\"index\":1", "\"index\":0");
    }
    let replay = replay_http(addr, "application/x-ndjson", stream).await;
    let kinds = replay.kinds();
    assert_eq!(kinds[0], "ok", "{:#?}", replay.lines);
    assert_ne!(kinds[1], "ok", "{:#?}", replay.lines);
    assert_eq!(kinds[2], "ok", "{:#?}", replay.lines);
    let (_, second) = replay
        .of_type("result")
        .into_iter()
        .find(|(_, v)| v["index"] == 1)
        .unwrap();
    assert!(
        second.to_string().contains("the stream reused index 0"),
        "{second}"
    );
    assert!(env.work().join("first.txt").exists());
    assert!(
        !env.work().join("second.txt").exists(),
        "the call under the reused index never ran"
    );
    // One audit line per call, the refused one included.
    let recs = records(&env, &replay);
    assert_eq!(recs.len(), 3, "{recs:#?}");
}

/// A WASI 0.3 call's partial output reaches a streamed answer as `progress` events, each naming the
/// call, before its `result`, which holds the whole (CLI and HTTP, the same events).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_batch_carries_each_calls_partial_output_as_progress_events() {
    let env = Env::new(&["async_tools"], "[permissions]\nmode = \"bypass\"\n");
    let stream = anthropic_stream(&[
        ("stream", json!({ "parts": 3 })),
        ("echo", json!({ "text": "e" })),
    ]);
    let check = |lines: Vec<Value>| {
        let progress: Vec<(&Value, &Value, &Value)> = lines
            .iter()
            .filter(|v| v["type"] == "progress")
            .map(|v| (&v["index"], &v["id"], &v["message"]))
            .collect();
        let expected: Vec<(Value, Value, Value)> = ["part 0;", "part 1;", "part 2;"]
            .iter()
            .map(|m| (json!(0), json!("toolu_0"), json!(m)))
            .collect();
        let expected: Vec<(&Value, &Value, &Value)> =
            expected.iter().map(|(a, b, c)| (a, b, c)).collect();
        assert_eq!(progress, expected, "{lines:#?}");
        let at = |t: &str| {
            lines
                .iter()
                .position(|v| v["type"] == t && v["index"] == 0)
                .unwrap()
        };
        assert!(at("progress") < at("result"), "{lines:#?}");
        let answer = lines.last().unwrap();
        assert_eq!(answer["type"], "answer");
        assert!(
            answer.to_string().contains("part 0;part 1;part 2;"),
            "{answer}"
        );
    };
    assert!(env.run(&["list"]).status.success());
    let (lines, _, code) = replay_cli(&env, stream.clone());
    assert_eq!(code, Some(0), "{lines:#?}");
    check(lines.into_iter().map(|(_, v)| v).collect());
    let p = env.pipeline(16).await;
    let addr = serve(p, &env.config().server).await;
    let replay = replay_http(addr, "application/x-ndjson", stream).await;
    check(replay.lines.into_iter().map(|(_, v)| v).collect());
}
