//! OpenTelemetry received by a real OTLP receiver (tests/telemetry/receiver.py, on the official
//! opentelemetry-proto definitions): span names and attributes as the MCP semantic conventions say,
//! the trace of a client's `traceparent` continued, a span per pipeline stage under each call,
//! batch calls under the batch's span, and the metrics.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::daemon::{Daemon, MCP_HEADERS, http};
use crate::harness::{Env, root};

struct Receiver {
    child: Child,
    port: u16,
    out: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// The receiver, or `None` (SKIPPED) when the venv with opentelemetry-proto is missing.
    fn start() -> Option<Self> {
        let python = root().join(".venv/bin/python");
        let ready = python.is_file()
            && Command::new(&python)
                .args([
                    "-c",
                    "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                ])
                .output()
                .is_ok_and(|o| o.status.success());
        if !ready {
            let why = "the OTLP receiver needs .venv with tests/telemetry/requirements.txt (scripts/test.sh installs it)";
            assert!(
                std::env::var_os("TOOLHOST_REQUIRE_SERVICES").is_none(),
                "TOOLHOST_REQUIRE_SERVICES is set, but {why}"
            );
            eprintln!("SKIPPED telemetry: {why}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("received.jsonl");
        let mut child = Command::new(python)
            .arg(root().join("tests/telemetry/receiver.py"))
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the receiver's port");
        Some(Self {
            child,
            port,
            out,
            _dir: dir,
        })
    }

    fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

#[test]
fn spans_and_metrics_reach_an_otlp_receiver_with_the_mcp_conventions() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let config = format!(
        "[telemetry]\nenabled = true\nendpoint = \"http://127.0.0.1:{}\"\nmetrics-interval-ms = 200\n",
        receiver.port
    );
    let env = Env::new(&["echo"], &config);
    let mut d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();

    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let answer = d.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "traced"}, "_meta": {"traceparent": traceparent}}),
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    d.call("echo", json!({}))
        .assert_error("invalid_input", "text");
    let listed = d.request("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "a"}},
        {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {"text": "b"}},
    ]});
    let reply = http(
        addr,
        "POST",
        "/v1/tool-calls",
        &MCP_HEADERS[..1],
        message.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    // Wait for a periodic metrics export with the call counter, then stop: shutdown flushes the rest.
    crate::harness::wait_until(
        "a periodic metrics export with toolhost.calls",
        crate::harness::EVENT_WAIT,
        || {
            receiver
                .received()
                .iter()
                .any(|r| r["kind"] == "metric" && r["name"] == "toolhost.calls")
        },
    );
    assert!(d.stop().success());

    let got = receiver.received();
    let spans: Vec<&Value> = got.iter().filter(|r| r["kind"] == "span").collect();
    let named = |name: &str| -> Vec<&Value> {
        spans
            .iter()
            .copied()
            .filter(|s| s["name"] == name)
            .collect()
    };
    // The traced call continues the client's trace, as a server span with the MCP attributes.
    let calls = named("tools/call echo");
    assert_eq!(calls.len(), 2, "{spans:#?}");
    let traced = calls
        .iter()
        .find(|s| s["trace_id"] == TRACE_ID)
        .unwrap_or_else(|| panic!("no span in the client's trace: {calls:#?}"));
    assert_eq!(traced["parent_span_id"], PARENT_ID);
    assert_eq!(traced["span_kind"], 2, "SPAN_KIND_SERVER");
    let a = &traced["attributes"];
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], "echo");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert!(a["jsonrpc.request.id"].is_string(), "{a}");
    assert_eq!(a["mcp.protocol.version"], "2025-11-25");
    assert!(a.get("error.type").is_none(), "{a}");
    assert_eq!(traced["resource"]["service.name"], "toolhost");
    // A child per stage, inside the call's span.
    let children: Vec<&str> = spans
        .iter()
        .filter(|s| s["parent_span_id"] == traced["span_id"])
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for stage in ["validate", "gate", "instantiate", "guest", "shape", "audit"] {
        assert!(children.contains(&stage), "{stage} missing: {children:?}");
    }
    let failed = calls.iter().find(|s| s["trace_id"] != TRACE_ID).unwrap();
    assert_eq!(failed["attributes"]["error.type"], "invalid_input");
    assert_eq!(failed["status"], 2, "STATUS_CODE_ERROR");
    assert_eq!(named("tools/list").len(), 1);
    let init = named("initialize");
    assert_eq!(init.len(), 1, "{spans:#?}");
    assert_eq!(init[0]["attributes"]["mcp.method.name"], "initialize");
    // The batch's calls under the batch's span.
    let batch = named("batch");
    assert_eq!(batch.len(), 1, "{spans:#?}");
    let tools: Vec<&Value> = named("execute_tool echo");
    assert_eq!(tools.len(), 2);
    for t in &tools {
        assert_eq!(t["parent_span_id"], batch[0]["span_id"]);
        assert_eq!(t["trace_id"], batch[0]["trace_id"]);
        assert!(
            t["attributes"]["gen_ai.tool.call.id"]
                .as_str()
                .unwrap()
                .starts_with("toolu_")
        );
    }

    let metric = |name: &str| -> Vec<&Value> {
        got.iter()
            .filter(|r| r["kind"] == "metric" && r["name"] == name)
            .collect()
    };
    let duration = metric("mcp.server.operation.duration");
    assert!(!duration.is_empty(), "no mcp.server.operation.duration");
    assert_eq!(duration.last().unwrap()["unit"], "s");
    let calls_total: i64 = metric("toolhost.calls")
        .last()
        .map(|m| {
            m["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["value"].as_i64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(calls_total, 4, "two MCP calls and two batch calls");
    let errors = metric("toolhost.call.errors");
    assert!(
        errors
            .last()
            .is_some_and(|m| m["points"][0]["attributes"]["error.type"] == "invalid_input"),
        "{errors:?}"
    );
    assert!(!metric("toolhost.call.fuel").is_empty());
    assert!(!metric("toolhost.calls.running").is_empty());
}
