//! Bad input from clients, through the real daemon: malformed, oversized and deeply nested JSON-RPC,
//! wrong types, unknown methods, calls after shutdown began (stdio); the same over HTTP, plus
//! slow-loris connections, floods above the call limit, foreign hosts and origins, missing and wrong
//! tokens. Each gets the answer the protocol prescribes, and the daemon keeps serving the others.

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Conn, Daemon, HttpSession, MCP_HEADERS, http, record};
use crate::harness::Env;

const BASE: &str =
    "[permissions]\nmode = \"bypass\"\n[plugins.hostile.limits]\ntimeout-ms = 20000\n";

fn env(server: &str) -> Env {
    Env::new(&["echo", "hostile"], &format!("{BASE}[server]\n{server}"))
}

/// The daemon still answers a plain request and a tool call.
#[track_caller]
fn serving(d: &mut Daemon) {
    let pong = d.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    d.call("echo", json!({ "text": "still serving" }))
        .assert_ok();
}

/// The error of a JSON-RPC answer: (code, message).
#[track_caller]
fn error_of(answer: &Value) -> (i64, String) {
    let e = &answer["error"];
    assert!(e.is_object(), "expected an error, got {answer}");
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn malformed_lines_on_stdio_are_refused_and_serving_goes_on() {
    let env = env("");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    // Not JSON at all (or not UTF-8): dropped without an answer. rmcp does this on purpose, as the
    // other MCP SDKs do (a reply to garbage can start an error storm); JSON-RPC 2.0 would answer
    // -32700 Parse error with a null id.
    for garbage in [
        &b"{not json"[..],
        b"\xff\xfe\x00garbage",
        b"{\"jsonrpc\":\"2.0\",\"id\":7,",
        b"]]]",
    ] {
        d.send_raw(garbage);
        assert_eq!(
            d.next_unsolicited(Duration::from_millis(300)),
            None,
            "{garbage:?}"
        );
        serving(&mut d);
    }
    // JSON, but not a JSON-RPC message: -32600 Invalid Request.
    for not_a_message in [
        "[1,2]",
        "42",
        "\"ping\"",
        "{\"foo\":1}",
        "{\"jsonrpc\":\"2.0\"}",
        "null",
        "[]",
    ] {
        d.send_raw(not_a_message.as_bytes());
        let answer = d
            .next_unsolicited(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("no answer to {not_a_message}"));
        assert_eq!(error_of(&answer).0, -32600, "{not_a_message}: {answer}");
        serving(&mut d);
    }
    assert!(d.stop().success());
}

#[test]
fn wrong_types_and_unknown_methods_get_the_json_rpc_error_codes() {
    let env = env("");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let answer = d.request("tools/delete", json!({}));
    assert_eq!(error_of(&answer).0, -32601, "{answer}");
    assert!(error_of(&answer).1.contains("tools/delete"), "{answer}");
    // A known method with params of the wrong shape is -32602 Invalid params, not "method not found".
    for params in [
        json!({ "name": 5 }),
        json!({ "name": "echo", "arguments": [1, 2] }),
        json!({ "name": "echo", "arguments": "text" }),
        json!({ "arguments": {} }),
    ] {
        let answer = d.request("tools/call", params.clone());
        let (code, message) = error_of(&answer);
        assert_eq!(code, -32602, "{params}: {answer}");
        assert!(message.contains("tools/call"), "{params}: {answer}");
        serving(&mut d);
    }
    // Params that are not an object make the message itself invalid (MCP params are objects): rmcp
    // refuses it as a whole, -32600 Invalid Request with a null id, as for any undecodable message.
    for params in [json!([]), json!("tools/call")] {
        d.send(&json!({ "jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": params }));
        let answer = d
            .next_unsolicited(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("no answer to params {params}"));
        assert_eq!(error_of(&answer).0, -32600, "{params}: {answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
        serving(&mut d);
    }
    // A cursor that cannot be a position in the list (rmcp reads a cursor of the wrong type as none).
    let answer = d.request("tools/list", json!({ "cursor": "not a tool name!" }));
    let (code, message) = error_of(&answer);
    assert_eq!(code, -32602, "{answer}");
    assert!(message.contains("invalid cursor"), "{answer}");
    // An unknown tool is -32602 too, with the names that exist.
    let answer = d.request("tools/call", json!({ "name": "ecoh", "arguments": {} }));
    let (code, message) = error_of(&answer);
    assert_eq!(code, -32602);
    assert!(
        message.starts_with("Unknown tool 'ecoh'. Available tools: echo"),
        "{message}"
    );
    // Arguments of the wrong type for the tool's schema are a result a model can act on, audited.
    let o = d.call("echo", json!({ "text": { "nested": true } }));
    o.assert_error("invalid_input", "Invalid input for tool 'echo':\n- /text:");
    let r = record(&env, o.call_id());
    assert_eq!(
        (r["error_kind"].as_str(), r["decision"]["kind"].as_str()),
        (Some("invalid_input"), Some("not_reached"))
    );
    // Ids of every JSON-RPC type come back as given.
    for id in [json!("a-string-id"), json!(-3)] {
        d.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }));
        let answer = d
            .next_unsolicited(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("no answer to id {id}"));
        assert_eq!(answer["id"], id, "{answer}");
    }
    let big = 9_007_199_254_740_993_u64;
    d.send(&json!({ "jsonrpc": "2.0", "id": big, "method": "ping" }));
    assert_eq!(d.answer(big)["result"], json!({}));
    serving(&mut d);
    assert!(d.stop().success());
}

/// `[[[...]]]` nested `depth` deep.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn oversized_and_deeply_nested_requests_are_refused_and_serving_goes_on() {
    let env = env("");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    // Over the input limits of the tool (1 MiB, 64 levels): a result that names the limit, audited.
    let o = d.call("echo", json!({ "text": "x".repeat(3 << 20) }));
    o.assert_error("invalid_input", "the limit is 1 MiB");
    assert_eq!(record(&env, o.call_id())["error_kind"], "invalid_input");
    let deep: Value = serde_json::from_str(&nested(100)).unwrap();
    let o = d.call("echo", json!({ "text": deep }));
    o.assert_error("invalid_input", "levels deep; the limit is 64");
    serving(&mut d);
    // Deeper than the JSON parser goes (128): unparsable, dropped like garbage; the daemon is fine.
    let id = d.id();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{}}}}}}}"#,
        nested(200_000)
    );
    d.send_raw(line.as_bytes());
    assert_eq!(d.next_unsolicited(Duration::from_millis(500)), None);
    serving(&mut d);
    // A line over the transport's 16 MiB cap is dropped unread; the next line is read normally.
    let id = d.id();
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "y".repeat(17 << 20)
    );
    d.send_raw(huge.as_bytes());
    serving(&mut d);
    assert_eq!(
        d.next_unsolicited(Duration::from_millis(300)),
        None,
        "the huge line must not be answered"
    );
    assert!(d.stop().success());
}

#[test]
fn calls_after_shutdown_began_are_refused_as_busy() {
    let env = env("shutdown-grace-ms = 10000\n");
    // At info, the daemon logs when its drain begins (new calls refused from then on).
    let mut d = Daemon::start_env(&env, &["--no-watch"], &[("TOOLHOST_LOG", "info")]);
    let slow = d.id();
    d.send(&json!({
        "jsonrpc": "2.0", "id": slow, "method": "tools/call",
        "params": { "name": "sleep", "arguments": { "ms": 3000 } }
    }));
    env.wait_for_begin("the sleep", |l| l["tool"] == "sleep");
    d.signal("TERM");
    d.wait_for_stderr("for calls in flight");
    let o = d.call("echo", json!({ "text": "too late" }));
    o.assert_error("busy", "toolhost is shutting down and accepts no new calls");
    let answer = d.answer(slow);
    assert_eq!(
        answer["result"]["isError"], false,
        "the call in flight finishes: {answer}"
    );
    let status = d.wait(Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
    let records = env.audit();
    assert!(
        records
            .iter()
            .any(|r| r["tool"] == "sleep" && r["outcome"] == "ok"),
        "{records:?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["tool"] == "echo" && r["error_kind"] == "busy"),
        "the refused call is recorded too: {records:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// HTTP

fn mcp_post(
    addr: std::net::SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
) -> crate::daemon::Reply {
    let mut all = MCP_HEADERS.to_vec();
    all.extend_from_slice(headers);
    http(addr, "POST", "/mcp", &all, body)
}

#[test]
fn malformed_http_requests_get_precise_statuses_and_serving_goes_on() {
    let env = env("max-body-kb = 64\n");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let mut session = HttpSession::open(addr, &[]).unwrap();
    let check_serving = |s: &mut HttpSession| {
        let answer = s.call("echo", json!({ "text": "ok" })).unwrap();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    };
    // Not JSON, and JSON that is not a JSON-RPC message: 400 with a JSON-RPC error without id.
    for (body, code) in [
        ("{not json".to_string(), -32700),
        // Valid JSON however deep (JSON sets no limit), within the 64 KiB limit, and no message.
        (nested(30_000), -32600),
        ("[1,2]".to_string(), -32600),
        ("{\"jsonrpc\":\"2.0\"}".to_string(), -32600),
    ] {
        let reply = mcp_post(
            addr,
            &[("mcp-session-id", &session.session)],
            body.as_bytes(),
        );
        assert_eq!(
            reply.status,
            400,
            "{}: {}",
            &body[..body.len().min(40)],
            reply.text()
        );
        let error: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(error["error"]["code"], code, "{error}");
        assert_eq!(error["id"], Value::Null, "{error}");
        check_serving(&mut session);
    }
    // What fails before JSON-RPC: media types, size, sessions, paths.
    let reply = http(
        addr,
        "POST",
        "/mcp",
        &[("Content-Type", "text/plain"), MCP_HEADERS[1]],
        b"{}",
    );
    assert_eq!(reply.status, 415, "{}", reply.text());
    let reply = http(
        addr,
        "POST",
        "/mcp",
        &[MCP_HEADERS[0]],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
    );
    assert_eq!(reply.status, 406, "{}", reply.text());
    let big = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": { "x": "y".repeat(100 << 10) } });
    assert_eq!(
        mcp_post(
            addr,
            &[("mcp-session-id", &session.session)],
            big.to_string().as_bytes()
        )
        .status,
        413
    );
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#;
    assert_eq!(
        mcp_post(addr, &[], call).status,
        400,
        "a call needs a session"
    );
    assert_eq!(
        mcp_post(addr, &[("mcp-session-id", "no-such-session")], call).status,
        404
    );
    let reply = http(addr, "GET", "/no/such/path", &[], b"");
    assert_eq!(reply.status, 404);
    assert!(reply.text().contains("MCP is at /mcp"), "{}", reply.text());
    // In a session, the same JSON-RPC errors as on stdio.
    for (body, code) in [
        (
            json!({ "jsonrpc": "2.0", "id": 50, "method": "tools/delete" }),
            -32601,
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": { "name": 5 } }),
            -32602,
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 52, "method": "tools/call", "params": { "name": "nope", "arguments": {} } }),
            -32602,
        ),
    ] {
        let reply = session.post(body.to_string().as_bytes()).unwrap();
        let answer = reply
            .messages()
            .into_iter()
            .find(|m| m["id"] == body["id"])
            .unwrap_or_else(|| panic!("{}", reply.text()));
        assert_eq!(error_of(&answer).0, code, "{body}: {answer}");
    }
    check_serving(&mut session);
    let health = http(addr, "GET", "/health", &[], b"");
    assert_eq!(health.status, 200, "{}", health.text());
    assert!(d.stop().success());
}

#[test]
fn foreign_hosts_and_origins_and_bad_tokens_are_refused_before_anything_runs() {
    let env = env("token-env = \"TOOLHOST_E2E_TOKEN\"\n");
    let d = Daemon::start_env(
        &env,
        &["--no-watch", "--http", "127.0.0.1:0"],
        &[("TOOLHOST_E2E_TOKEN", "right-token-7f3a")],
    );
    let addr = d.http.unwrap();
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let good = ("Authorization", "Bearer right-token-7f3a");
    let long = format!("Bearer {}", "z".repeat(64 << 10));
    for (headers, status, needle) in [
        (vec![], 401, "requires a bearer token"),
        (
            vec![("Authorization", "Bearer wrong-token")],
            401,
            "not valid",
        ),
        (
            vec![("Authorization", "Basic right-token-7f3a")],
            401,
            "requires a bearer token",
        ),
        (
            vec![("Authorization", "Bearer right-token-7f3a-and-more")],
            401,
            "not valid",
        ),
        (vec![("Authorization", long.as_str())], 401, "not valid"),
        (
            vec![good, ("Origin", "https://evil.example")],
            403,
            "allowed-origins",
        ),
        (
            vec![("Origin", "https://evil.example")],
            403,
            "allowed-origins",
        ),
        (vec![good, ("Origin", "null")], 403, "allowed-origins"),
        (
            vec![good, ("Host", "evil.example:80")],
            403,
            "allowed-hosts",
        ),
    ] {
        // The probes answer without a token, but the Host and Origin guard covers them too.
        let probes = if status == 403 {
            &["/health", "/ready"][..]
        } else {
            &[][..]
        };
        for path in ["/mcp", "/metrics", "/v1/tools"].iter().chain(probes) {
            let path = *path;
            let method = if path == "/mcp" { "POST" } else { "GET" };
            let mut all = MCP_HEADERS.to_vec();
            all.extend_from_slice(&headers);
            let reply = http(
                addr,
                method,
                path,
                &all,
                if path == "/mcp" { init } else { b"" },
            );
            assert_eq!(reply.status, status, "{path} {headers:?}: {}", reply.text());
            assert!(
                reply.text().contains(needle),
                "{path} {headers:?}: {}",
                reply.text()
            );
            if status == 401 {
                let challenge = reply.header("www-authenticate").unwrap_or_default();
                assert!(
                    challenge.starts_with("Bearer ")
                        && challenge.contains("resource_metadata=\"http://"),
                    "{challenge}"
                );
            }
            assert!(
                reply.header("mcp-session-id").is_none(),
                "no session for a refused request"
            );
        }
    }
    assert!(env.audit().is_empty(), "nothing ran");
    let mut session = HttpSession::open(addr, &[good]).unwrap();
    let answer = session
        .call("echo", json!({ "text": "with the token" }))
        .unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // A session's requests need the token every time: the session id alone is not enough.
    let call = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#;
    let reply = mcp_post(addr, &[("mcp-session-id", &session.session)], call);
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert_eq!(env.audit().len(), 1, "only the authorised call ran");
    assert!(d.stop().success());
}

#[test]
fn slow_loris_connections_do_not_stop_the_daemon_serving_others() {
    let env = env("");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    // 200 clients that send their headers a byte at a time, 50 that do the same with a body.
    let mut slow: Vec<TcpStream> = Vec::new();
    for i in 0..250 {
        let mut s = TcpStream::connect(addr).unwrap();
        let head = if i < 200 {
            format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ")
        } else {
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{{"
            )
        };
        s.write_all(head.as_bytes()).unwrap();
        slow.push(s);
    }
    let mut session = HttpSession::open(addr, &[]).unwrap();
    let started = Instant::now();
    let mut worst = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(3) {
        for s in &mut slow {
            let _ = s.write_all(b"a");
        }
        let t = Instant::now();
        let answer = session
            .call("echo", json!({ "text": "under attack" }))
            .unwrap();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert_eq!(http(addr, "GET", "/health", &[], b"").status, 200);
        worst = worst.max(t.elapsed());
        // A sleep on purpose: the slow clients' trickle (one byte each per round) is the attack.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        worst < Duration::from_secs(2),
        "a call took {worst:?} while slow clients were connected"
    );
    drop(slow);
    assert!(d.stop().success());
}

#[test]
fn slow_loris_connections_are_closed_by_the_daemon() {
    let env = env("read-timeout-ms = 2000\n");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    s.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .unwrap();
    let started = Instant::now();
    let closed = loop {
        if s.write_all(b"a").is_err() {
            break true;
        }
        let mut buf = [0u8; 256];
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) | Ok(_) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) if started.elapsed() > Duration::from_secs(45) => break false,
            Err(_) => {}
        }
    };
    assert!(
        closed,
        "a client sending one header byte per 500 ms was still connected after 45 s"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "closed only after {:?}",
        started.elapsed()
    );
    assert!(d.stop().success());
}

#[test]
fn a_flood_above_the_call_limit_is_answered_busy_and_every_call_is_audited() {
    let env = env("max-concurrent-calls = 4\n");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    // Far more connections than calls may run: idle ones cost nothing, and the cap (4096) is far off.
    // This process holds the client ends: a soft open-files limit of 1024 must not fail the test.
    rlimit::increase_nofile_limit(u64::MAX).unwrap();
    let idle: Vec<Conn> = (0..1000).map(|_| Conn::open(addr).unwrap()).collect();
    let clients = 32;
    let barrier = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut s = HttpSession::open(addr, &[]).unwrap();
                barrier.wait();
                s.call("sleep", json!({ "ms": 1000 })).unwrap()
            })
        })
        .collect();
    let answers: Vec<Value> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let (mut ok, mut busy) = (0, 0);
    for a in &answers {
        let result = &a["result"];
        if result["isError"] == false {
            ok += 1;
        } else {
            assert_eq!(result["_meta"]["toolhost/errorKind"], "busy", "{a}");
            let text = result["content"][0]["text"].as_str().unwrap();
            assert!(
                text.contains("toolhost is busy (4 calls running, the configured maximum)"),
                "{text}"
            );
            busy += 1;
        }
    }
    assert!(
        ok >= 1 && busy >= 1 && ok + busy == clients,
        "ok {ok}, busy {busy}"
    );
    assert!(
        ok <= 4 * 3,
        "at most 4 at once over about a second: {ok} ran"
    );
    let records = env.audit();
    assert_eq!(
        records.len(),
        clients,
        "one audit line per call, busy ones included"
    );
    assert_eq!(
        records.iter().filter(|r| r["error_kind"] == "busy").count(),
        busy
    );
    drop(idle);
    let mut s = HttpSession::open(addr, &[]).unwrap();
    assert_eq!(
        s.call("echo", json!({ "text": "after the flood" }))
            .unwrap()["result"]["isError"],
        false
    );
    assert!(d.stop().success());
}
