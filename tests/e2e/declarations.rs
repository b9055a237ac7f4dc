//! Plugins' declarations and callers' names as untrusted input: explosive or oversized schemas are
//! refused at load while other plugins keep serving, a costly validation leaves the daemon
//! answering, control characters never reach a terminal or forge a log line, and output schemas
//! are listed as each protocol era allows.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Daemon, HttpSession, http};
use crate::harness::{EVENT_WAIT, Env, wait_until};
use crate::hostile::components::{Component, PAYLOAD, log_then_ok, ok_content, ok_structured};

/// Definitions a0..a{levels}, each an `anyOf` of `fan` references to the next, the last a string.
fn ladder(levels: usize, fan: usize) -> serde_json::Map<String, Value> {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = json!({"$ref": format!("#/$defs/a{}", i + 1)});
        defs.insert(format!("a{i}"), json!({"anyOf": vec![next; fan]}));
    }
    defs.insert(format!("a{levels}"), json!({"type": "string"}));
    defs
}

/// An object schema whose property `q` must not match the ladder.
fn under_not(levels: usize, fan: usize, q: Value) -> String {
    json!({
        "type": "object",
        "properties": {"q": q},
        "$defs": ladder(levels, fan),
    })
    .to_string()
}

fn write(env: &Env, name: &str, component: Component) {
    std::fs::write(
        env.path().join("plugins").join(format!("{name}.wasm")),
        component.build(),
    )
    .unwrap();
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn explosive_and_oversized_declarations_are_refused_at_load() {
    let env = Env::new(&["echo"], "");
    // 3^20 evaluations of one value, in under 2 KB.
    let explosive = under_not(20, 3, json!({"not": {"$ref": "#/$defs/a0"}}));
    assert!(explosive.len() < 2048);
    write(
        &env,
        "explode",
        Component::new("explode").input_schema(explosive),
    );
    let cycle = r##"{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##;
    write(&env, "cycle", Component::new("cycle").output_schema(cycle));
    write(
        &env,
        "long_title",
        Component::new("long_title").title("T".repeat(300)),
    );
    let started = Instant::now();
    let out = env.run(&["list"]);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains(
            "plugin explode rejected: tool 'explode': input-schema: validating one value could take"
        ),
        "{text}"
    );
    assert!(text.contains("the subschema at /$defs/a"), "{text}");
    assert!(
        text.contains("plugin cycle rejected: tool 'cycle': output-schema: the references /$defs/a -> /$defs/a/anyOf/0 -> /$defs/b -> /$defs/a"),
        "{text}"
    );
    assert!(
        text.contains(
            "plugin long_title rejected: tool 'long_title': the title is 300 bytes; the limit is 256"
        ),
        "{text}"
    );
    assert!(text.starts_with("echo "), "{text}");
    let called = env.call("echo", json!({"text": "still fine"}));
    called.assert_ok();
    assert_eq!(called.content(), "still fine");
}

#[test]
fn a_costly_validation_leaves_health_and_other_calls_answering() {
    let env = Env::new(&["echo"], "[permissions]\nmode = \"bypass\"\n");
    // Legitimate (8,191 evaluations per element, under the limit), but costly for a big input.
    let costly = json!({
        "type": "object",
        "properties": {"q": {"type": "array", "items": {"not": {"$ref": "#/$defs/a0"}}}},
        "$defs": ladder(11, 2),
    });
    write(
        &env,
        "costly",
        Component::new("costly").input_schema(costly.to_string()),
    );
    let mut d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let input = json!({"q": vec![1; 30_000]});
    // One costly call per core: were validation on the runtime's threads, it would hold them all.
    let calls: Vec<_> = (0..cores)
        .map(|_| {
            let input = input.clone();
            std::thread::spawn(move || {
                let mut s = HttpSession::open(addr, &[]).unwrap();
                let started = Instant::now();
                let answer = s.call("costly", input).unwrap();
                (answer, started.elapsed())
            })
        })
        .collect();
    // Probe once the costly calls have reached the daemon (or, on a fast machine, already ended).
    wait_until("the costly calls to be in flight", EVENT_WAIT, || {
        let health: Value =
            serde_json::from_slice(&http(addr, "GET", "/health", &[], b"").body).unwrap();
        health["calls_in_flight"].as_u64() >= Some(cores as u64)
            || calls.iter().all(|c| c.is_finished())
    });
    let mut answered = 0;
    while !calls.iter().all(|c| c.is_finished()) && answered < 20 {
        let asked = Instant::now();
        let reply = http(addr, "GET", "/health", &[], b"");
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(
            asked.elapsed() < Duration::from_millis(500),
            "/health took {:?}",
            asked.elapsed()
        );
        answered += 1;
        // A sleep on purpose: the probes' pace while the costly calls run, not a wait for them.
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = d.call("echo", json!({"text": "meanwhile"}));
    o.assert_ok();
    for call in calls {
        let (answer, took) = call.join().unwrap();
        let result = &answer["result"];
        assert!(
            result["isError"] == false || result["_meta"]["toolhost/errorKind"] == "timeout",
            "{answer}"
        );
        assert!(
            took > Duration::from_millis(150),
            "the validation was not costly: {took:?}"
        );
    }
    assert!(answered >= 1, "no /health answer while the calls ran");
    assert!(d.stop().success());
}

/// `ESC ] 0 ; pwned BEL` sets a terminal's title; CR returns to overwrite the line.
const HOSTILE: &str = "nice tool\u{1b}]0;pwned\u{7}\r\u{1b}[2Kforged";
const SHOWN: &str = "nice tool\\u{1b}]0;pwned\\u{7}\\r\\u{1b}[2Kforged";

#[track_caller]
fn assert_no_controls(where_: &str, text: &str) {
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\r']),
        "{where_} shows control characters raw: {text:?}"
    );
}

#[test]
fn list_audit_call_and_inspect_escape_control_characters() {
    let env = Env::new(&["echo"], "");
    write(
        &env,
        "evil",
        Component::new("evil")
            .description(HOSTILE)
            .payload(HOSTILE.as_bytes())
            .body(ok_content(PAYLOAD, HOSTILE.len() as u32)),
    );
    let out = env.run(&["list"]);
    let text = stdout(&out);
    assert_no_controls("list", &text);
    assert!(text.contains(SHOWN), "{text}");
    // --json is for programs, and JSON-escaped already.
    let json: Value = serde_json::from_str(&stdout(&env.run(&["list", "--json"]))).unwrap();
    let tools = json["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["description"] == HOSTILE), "{json}");

    let out = env.run(&["call", "evil"]);
    assert_eq!(out.status.code(), Some(0));
    assert_no_controls("call", &stdout(&out));
    assert!(stdout(&out).contains(SHOWN));

    let name = "x\u{1b}]0;pwned\u{7}\r";
    let out = env.run(&["call", name]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_no_controls("call (unknown tool)", &err);
    assert!(
        err.contains("Unknown tool 'x\\u{1b}]0;pwned\\u{7}\\r'"),
        "{err}"
    );
    let out = env.run(&["audit"]);
    assert_eq!(out.status.code(), Some(0));
    assert_no_controls("audit", &stdout(&out));
    assert!(
        stdout(&out).contains("x\\u{1b}]0;pwned\\u{7}\\r "),
        "{}",
        stdout(&out)
    );

    let file = env.path().join("plugins").join("evil\u{1b}[2J.wasm");
    std::fs::copy(env.path().join("plugins/evil.wasm"), &file).unwrap();
    let out = env.run(&["inspect", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_no_controls("inspect", &stdout(&out));
    assert!(
        stdout(&out).contains("evil\\u{1b}[2J.wasm"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn guest_logs_stay_on_one_daemon_log_line() {
    let env = Env::new(&["echo"], "");
    let message = "first\nERROR toolhost: forged line\r\u{1b}[2K";
    write(
        &env,
        "chatty",
        Component::new("chatty")
            .payload(message.as_bytes())
            .body(log_then_ok(PAYLOAD, message.len() as u32)),
    );
    let mut d = Daemon::start_env(&env, &["--no-watch"], &[("TOOLHOST_LOG", "info")]);
    d.call("chatty", json!({})).assert_ok();
    d.call("echo", json!({"text": "after"})).assert_ok();
    let log = d.wait_for_stderr("forged");
    assert!(d.stop().success());
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("forged")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("chatty"), "{log}");
    assert!(
        lines[0].contains("first\\nERROR toolhost: forged line\\r\\u{1b}[2K"),
        "{log}"
    );
    assert_no_controls("the daemon's log", &log);
}

/// A stateless 2026-07-28 request on a fresh connection; its JSON-RPC answer.
fn modern(addr: std::net::SocketAddr, method: &str, params: Value) -> Value {
    crate::daemon::modern_request(addr, method, params, json!({}), None)
}

#[test]
fn output_schemas_and_results_follow_the_client_era() {
    let env = Env::new(&["echo"], "");
    let structured = b"[1,2,3]";
    write(
        &env,
        "counts",
        Component::new("counts")
            .output_schema(r#"{"type":"array","items":{"type":"integer"}}"#)
            .payload(structured)
            .body(ok_structured(PAYLOAD, structured.len() as u32)),
    );
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let tool = |list: &Value, name: &str| -> Value {
        list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{list}"))
    };

    // 2025-11-25: objects only.
    let mut old = HttpSession::open(addr, &[]).unwrap();
    let list = old
        .post(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        .unwrap()
        .messages()
        .remove(0);
    assert!(
        tool(&list, "counts").get("outputSchema").is_none(),
        "{list}"
    );
    assert_eq!(tool(&list, "echo")["outputSchema"]["type"], "object");
    let answer = old.call("counts", json!({})).unwrap();
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert!(result.get("structuredContent").is_none(), "{answer}");
    assert_eq!(result["content"][0]["text"], "[1,2,3]", "{answer}");
    let echoed = old.call("echo", json!({"text": "hi"})).unwrap();
    assert_eq!(
        echoed["result"]["structuredContent"]["text"], "hi",
        "{echoed}"
    );

    // 2026-07-28: any JSON value.
    let list = modern(addr, "tools/list", json!({}));
    assert_eq!(
        tool(&list, "counts")["outputSchema"],
        json!({"type": "array", "items": {"type": "integer"}}),
        "{list}"
    );
    let answer = modern(
        addr,
        "tools/call",
        json!({"name": "counts", "arguments": {}}),
    );
    assert_eq!(
        answer["result"]["structuredContent"],
        json!([1, 2, 3]),
        "{answer}"
    );
    assert!(d.stop().success());
}
