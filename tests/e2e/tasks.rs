//! Long-running tools as tasks, over HTTP, in both protocol eras: the 2026 extension (server
//! decides, `tasks/get` inlines the result, `tasks/update` answers approvals, `tasks/cancel`) and
//! 2025-11-25 (client asks with `task`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`).
//! Owners, expiry, the audit record of each task's call, and the embedded store across a restart.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Daemon, HttpSession, modern_request};
use crate::harness::{EVENT_WAIT, Env, wait_until};
use crate::issuer::{Alg, Issuer, now};

const TASK_CONFIG: &str = r#"
[permissions]
mode = "bypass"
ask = ["remember"]

[plugins.hostile]
task = "optional"

[plugins.hostile.limits]
timeout-ms = 60000
"#;

/// A stateless 2026-07-28 request that declares the tasks extension (unless `tasks` is false).
fn modern_with(
    addr: SocketAddr,
    method: &str,
    params: Value,
    tasks: bool,
    bearer: Option<&str>,
) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}})
    } else {
        json!({})
    };
    modern_request(addr, method, params, capabilities, bearer)
}

fn modern(addr: SocketAddr, method: &str, params: Value) -> Value {
    modern_with(addr, method, params, true, None)
}

/// Poll `tasks/get` until the task's status is one of `wanted`.
fn wait_for(addr: SocketAddr, id: &str, wanted: &[&str], bearer: Option<&str>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = modern_with(addr, "tasks/get", json!({"taskId": id}), true, bearer);
        let status = got["result"]["status"].as_str().unwrap_or_default();
        if wanted.contains(&status) {
            return got["result"].clone();
        }
        assert!(Instant::now() < deadline, "task {id} stuck: {got}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start(config: &str) -> (Env, Daemon, SocketAddr) {
    let env = Env::new(&["hostile", "echo"], config);
    let daemon = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = daemon.http.unwrap();
    (env, daemon, addr)
}

#[test]
fn the_2026_extension_runs_calls_as_tasks_and_inlines_the_result() {
    let (env, _daemon, addr) = start(TASK_CONFIG);
    let created = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 300}}),
    );
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working", "{created}");
    assert!(result["ttlMs"].as_u64().unwrap() > 0, "{created}");
    let id = result["taskId"].as_str().unwrap().to_owned();

    let done = wait_for(addr, &id, &["completed", "failed"], None);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("slept "), "{done}");

    // The call ran through the pipeline: one audit record, under the task's id.
    let records: Vec<Value> = env
        .audit()
        .into_iter()
        .filter(|r| r["parent_id"] == json!(id))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["tool"], "sleep");
    assert_eq!(records[0]["outcome"], "ok", "{:?}", records[0]);

    // A tool without task support answers inline, and a client without the extension is never
    // handed a task.
    let inline = modern(
        addr,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    assert!(inline["result"].get("taskId").is_none(), "{inline}");
    let plain = modern_with(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
        false,
        None,
    );
    assert!(plain["result"].get("taskId").is_none(), "{plain}");
    assert_eq!(plain["result"]["isError"], false, "{plain}");

    // Progress the plugin reports is the task's status message while it works.
    let stepping = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 4000, "steps": 8}}),
    );
    let stepping = stepping["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let t = modern(addr, "tasks/get", json!({"taskId": stepping}))["result"].clone();
        if t["statusMessage"]
            .as_str()
            .is_some_and(|m| m.starts_with("slept part"))
        {
            assert_eq!(t["status"], "working", "{t}");
            break;
        }
        assert!(Instant::now() < deadline && t["status"] == "working", "{t}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Unknown ids are invalid params.
    let unknown = modern(addr, "tasks/get", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[test]
fn a_task_is_cancelled_and_the_audit_agrees() {
    let (env, _daemon, addr) = start(TASK_CONFIG);
    let created = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 30000}}),
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    env.wait_for_begin("the task's call", |l| l["parent_id"] == json!(id));
    let ack = modern(addr, "tasks/cancel", json!({"taskId": id}));
    assert!(ack.get("error").is_none(), "{ack}");
    let ended = wait_for(addr, &id, &["cancelled", "completed", "failed"], None);
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let record = env
        .audit()
        .into_iter()
        .find(|r| r["parent_id"] == json!(id))
        .expect("the cancelled task's call has its audit record");
    assert_eq!(record["outcome"], "cancelled", "{record}");
}

#[test]
fn a_required_task_tool_refuses_clients_that_cannot_follow_a_task() {
    let config = TASK_CONFIG.replace("task = \"optional\"", "task = \"required\"");
    let (_env, _daemon, addr) = start(&config);
    let refused = modern_with(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
        false,
        None,
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    // 2025-11-25: without `task`, -32601 as that revision says.
    let mut session = HttpSession::open(addr, &[]).unwrap();
    let inline = session.call("sleep", json!({"ms": 1})).unwrap();
    assert_eq!(inline["error"]["code"], -32601, "{inline}");
}

#[test]
fn an_approval_inside_a_task_is_answered_with_tasks_update() {
    let (_env, _daemon, addr) = start(TASK_CONFIG);
    let created = modern(
        addr,
        "tools/call",
        json!({"name": "remember", "arguments": {"key": "k", "value": "v"}}),
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let asking = wait_for(addr, &id, &["input_required", "completed", "failed"], None);
    assert_eq!(asking["status"], "input_required", "{asking}");
    let request = &asking["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create", "{asking}");
    let answer = modern(
        addr,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}}),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    let done = wait_for(addr, &id, &["completed", "failed", "cancelled"], None);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
}

#[test]
fn tasks_in_the_2025_11_25_wire_shape() {
    let (_env, _daemon, addr) = start(TASK_CONFIG);
    let mut session = HttpSession::open(addr, &[]).unwrap();
    let list = session
        .post(br#"{"jsonrpc":"2.0","id":50,"method":"tools/list","params":{}}"#)
        .unwrap()
        .messages()
        .remove(0);
    let tools = list["result"]["tools"].as_array().unwrap();
    let sleep = tools.iter().find(|t| t["name"] == "sleep").unwrap();
    assert_eq!(sleep["execution"]["taskSupport"], "optional", "{sleep}");
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert!(echo.get("execution").is_none(), "{echo}");

    let ask = |session: &mut HttpSession, id: u64, method: &str, params: Value| -> Value {
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let reply = session.post(m.to_string().as_bytes()).unwrap();
        reply
            .messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer: {}", reply.text()))
    };
    let created = ask(
        &mut session,
        60,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 200}, "task": {"ttl": 60000}}),
    );
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000, "{created}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    let got = ask(&mut session, 61, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["taskId"], json!(id), "{got}");
    // tasks/result waits for the end and answers the call's own result.
    let result = ask(&mut session, 62, "tasks/result", json!({"taskId": id}));
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id),
        "{result}"
    );
    let listed = ask(&mut session, 63, "tasks/list", json!({}));
    assert!(
        listed["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == json!(id)),
        "{listed}"
    );
    // Cancelling an ended task is refused; a running one is cancelled.
    let late = ask(&mut session, 64, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(late["error"]["code"], -32602, "{late}");
    let long = ask(
        &mut session,
        65,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 30000}, "task": {}}),
    );
    let long_id = long["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = ask(&mut session, 66, "tasks/cancel", json!({"taskId": long_id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    // A tool that does not offer tasks refuses one.
    let refused = ask(
        &mut session,
        67,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}),
    );
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

#[test]
fn results_expire_after_their_ttl() {
    let config = format!("{TASK_CONFIG}\n[tasks]\nttl-s = 1\n");
    let (_env, _daemon, addr) = start(&config);
    let created = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    wait_for(addr, &id, &["completed"], None);
    // A sleep on purpose: the result's one-second TTL must run out by the clock.
    std::thread::sleep(Duration::from_millis(1500));
    let gone = modern(addr, "tasks/get", json!({"taskId": id}));
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
}

#[test]
fn a_task_belongs_to_the_caller_that_created_it() {
    let issuer = Issuer::start();
    let config = format!(
        "{TASK_CONFIG}\n[auth]\nissuer = \"{}\"\naudience = \"toolhost-e2e\"\n",
        issuer.url()
    );
    let (_env, _daemon, addr) = start(&config);
    let token = |sub: &str| {
        issuer.sign(
            "rsa-1",
            Alg::Rs256,
            &json!({"iss": issuer.url(), "aud": "toolhost-e2e", "sub": sub,
                    "iat": now(), "exp": now() + 300}),
        )
    };
    let (alice, mallory) = (token("alice"), token("mallory"));
    let created = modern_with(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 5000}}),
        true,
        Some(&alice),
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = modern_with(addr, method, json!({"taskId": id}), true, Some(&mallory));
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
    }
    let mine = wait_for(addr, &id, &["working"], Some(&alice));
    assert_eq!(mine["taskId"], json!(id));
    let ack = modern_with(
        addr,
        "tasks/cancel",
        json!({"taskId": id}),
        true,
        Some(&alice),
    );
    assert!(ack.get("error").is_none(), "{ack}");
}

#[test]
fn the_embedded_store_keeps_results_across_a_kill_and_fails_what_was_running() {
    let (env, daemon, addr) = start(TASK_CONFIG);
    let quick = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    );
    let quick = quick["result"]["taskId"].as_str().unwrap().to_owned();
    wait_for(addr, &quick, &["completed"], None);
    let slow = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 30000}}),
    );
    let slow = slow["result"]["taskId"].as_str().unwrap().to_owned();
    env.wait_for_begin("the slow task's call", |l| l["parent_id"] == json!(slow));
    daemon.signal("KILL");
    drop(daemon);

    let daemon = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = daemon.http.unwrap();
    let kept = wait_for(addr, &quick, &["completed"], None);
    assert!(
        kept["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("slept")
    );
    let failed = wait_for(addr, &slow, &["failed", "working", "completed"], None);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["statusMessage"]
            .as_str()
            .unwrap()
            .contains("stopped before it finished"),
        "{failed}"
    );
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
}

#[test]
fn async_batches_answer_at_once_and_keep_the_ordered_answer() {
    let (env, _daemon, addr) = start(TASK_CONFIG);
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "sleep", "input": {"ms": 300}},
        {"type": "tool_use", "id": "b", "name": "echo", "input": {"text": "second"}},
    ]});
    let posted = crate::daemon::http(
        addr,
        "POST",
        "/v1/tool-calls?async=true",
        &[("Content-Type", "application/json")],
        message.to_string().as_bytes(),
    );
    assert_eq!(posted.status, 202, "{}", posted.text());
    let accepted: Value = serde_json::from_slice(&posted.body).unwrap();
    let id = accepted["batch_id"].as_str().unwrap().to_owned();
    assert_eq!(accepted["status"], "working", "{accepted}");
    let location = posted.header("location").unwrap().to_owned();
    assert_eq!(location, format!("/v1/tool-calls/{id}"));

    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let got = crate::daemon::http(addr, "GET", &location, &[], b"");
        assert_eq!(got.status, 200, "{}", got.text());
        let v: Value = serde_json::from_slice(&got.body).unwrap();
        if v["status"] == "completed" {
            break v;
        }
        assert!(Instant::now() < deadline, "{v}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let blocks = done["answer"]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["tool_use_id"], "a", "{done}");
    assert_eq!(blocks[1]["tool_use_id"], "b", "{done}");
    assert_eq!(blocks[1]["content"], "second", "{done}");
    // Its calls are in the audit log under the batch id.
    let calls = env
        .audit()
        .into_iter()
        .filter(|r| r["parent_id"] == json!(id))
        .count();
    assert_eq!(calls, 2);
    let missing = crate::daemon::http(addr, "GET", "/v1/tool-calls/nope", &[], b"");
    assert_eq!(missing.status, 404, "{}", missing.text());
    let bad = crate::daemon::http(
        addr,
        "POST",
        "/v1/tool-calls?async=maybe",
        &[("Content-Type", "application/json")],
        message.to_string().as_bytes(),
    );
    assert_eq!(bad.status, 400, "{}", bad.text());
}

#[test]
fn ready_tells_a_balancer_when_to_send_traffic() {
    // A grace and a call long enough that the daemon is surely still draining when /ready is read.
    let (env, daemon, addr) = start(&format!(
        "{TASK_CONFIG}\n[server]\nshutdown-grace-ms = 60000\n"
    ));
    assert_eq!(
        crate::daemon::http(addr, "GET", "/ready", &[], b"").status,
        200
    );
    assert_eq!(
        crate::daemon::http(addr, "GET", "/health", &[], b"").status,
        200
    );
    // During shutdown (a call in flight holds the daemon in its grace period), /ready is 503.
    let _running = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 30000}}),
    );
    env.wait_for_begin("the sleep", |l| l["tool"] == "sleep");
    daemon.signal("TERM");
    wait_until("/ready to answer 503 while draining", EVENT_WAIT, || {
        crate::daemon::http(addr, "GET", "/ready", &[], b"").status == 503
    });
}

#[test]
fn a_second_daemon_on_the_same_embedded_file_fails_nothing_that_still_runs() {
    let (env, _first, addr) = start(TASK_CONFIG);
    let running = modern(
        addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 3000}}),
    );
    let id = running["result"]["taskId"].as_str().unwrap().to_owned();
    // A second daemon with the same config (as two desktop clients would start): the file is
    // locked by the first, so the second takes nothing in it for abandoned.
    let second = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let other = second.http.unwrap();
    let seen = modern(other, "tasks/get", json!({"taskId": id}));
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    let done = wait_for(other, &id, &["completed", "failed"], None);
    assert_eq!(done["status"], "completed", "{done}");
}
