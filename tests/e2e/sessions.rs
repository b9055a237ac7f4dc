//! Ending an HTTP MCP session with `DELETE /mcp` while its calls run: they stop at once, each
//! recorded once as cancelled, with no answer sent after the session is gone; other sessions'
//! calls run on, and another caller's `DELETE` neither ends a session nor stops its calls.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Daemon, HttpSession, http};
use crate::harness::{Env, poll};
use crate::issuer::{Alg, Issuer, now};

const CONFIG: &str =
    "[permissions]\nmode = \"bypass\"\n[plugins.hostile.limits]\ntimeout-ms = 20000\n";

/// How soon after its session is deleted a call must have ended and been recorded; rmcp alone
/// would let it run for seconds.
const STOPPED_WITHIN: Duration = Duration::from_secs(1);

/// The end record of the call that `begin` began, once written.
fn end_of(env: &Env, begin: &Value) -> Option<Value> {
    env.audit()
        .into_iter()
        .find(|r| r["call_id"] == begin["call_id"])
}

fn end_records(env: &Env, begin: &Value) -> usize {
    let records = env.audit();
    records
        .iter()
        .filter(|r| r["call_id"] == begin["call_id"])
        .count()
}

#[test]
fn deleting_a_session_stops_its_running_call_at_once_and_no_other_sessions_call() {
    let env = Env::new(&["hostile"], CONFIG);
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let mut a = HttpSession::open(addr, &[]).unwrap();
    let mut b = HttpSession::open(addr, &[]).unwrap();
    let deleted_session = a.session.clone();
    let a_call = std::thread::spawn(move || a.call("sleep", json!({ "ms": 15_000 })));
    let a_begin = env.wait_for_begin("session A's call", |_| true);
    let b_call = std::thread::spawn(move || b.call("sleep", json!({ "ms": 2_500 })));
    let b_begin = env.wait_for_begin("session B's call", |l| l["call_id"] != a_begin["call_id"]);

    let headers = [
        ("mcp-session-id", deleted_session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let deleted = Instant::now();
    let reply = http(addr, "DELETE", "/mcp", &headers, b"");
    assert_eq!(reply.status, 204, "{}", reply.text());
    let ended = poll(Duration::from_secs(10), || end_of(&env, &a_begin));
    let took = deleted.elapsed();
    let record = ended.expect("the deleted session's call never ended");
    eprintln!("the deleted session's call was recorded {took:?} after DELETE");
    assert!(
        took < STOPPED_WITHIN,
        "the call ran on for {took:?} after its session was deleted"
    );
    assert_eq!(record["outcome"], "cancelled", "{record}");
    // Its client's stream ended without an answer: the session it was asked in is gone.
    let late = a_call.join().unwrap();
    assert!(late.is_err(), "an answer after DELETE: {late:?}");

    // The other session's call ran to its end and was answered.
    let answer = b_call.join().unwrap().unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(end_of(&env, &b_begin).unwrap()["outcome"], "ok");
    assert_eq!(end_records(&env, &a_begin), 1, "{:?}", env.audit());
    assert_eq!(end_records(&env, &b_begin), 1, "{:?}", env.audit());
    assert_eq!(env.audit().len(), 2, "{:?}", env.audit());
}

#[test]
fn another_callers_delete_neither_ends_a_session_nor_stops_its_call() {
    let issuer = Issuer::start();
    let config = format!(
        "{CONFIG}[auth]\nissuer = \"{}\"\naudience = \"toolhost-e2e\"\n",
        issuer.url()
    );
    let env = Env::new(&["hostile"], &config);
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let bearer = |sub: &str| {
        let claims = json!({"iss": issuer.url(), "aud": "toolhost-e2e", "sub": sub,
                            "iat": now(), "exp": now() + 300});
        format!("Bearer {}", issuer.sign("rsa-1", Alg::Rs256, &claims))
    };
    let (alice, mallory) = (bearer("alice"), bearer("mallory"));
    let mut session = HttpSession::open(addr, &[("Authorization", &alice)]).unwrap();
    let id = session.session.clone();
    let call = std::thread::spawn(move || session.call("sleep", json!({ "ms": 1_500 })));
    let begin = env.wait_for_begin("alice's call", |_| true);

    let delete = |bearer: &str| {
        let headers = [
            ("Authorization", bearer),
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        http(addr, "DELETE", "/mcp", &headers, b"").status
    };
    assert_eq!(delete(&mallory), 404, "mallory deleted alice's session");
    let answer = call.join().unwrap().unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(end_of(&env, &begin).unwrap()["outcome"], "ok");
    assert_eq!(
        delete(&alice),
        204,
        "alice's session ended before she deleted it"
    );
}
