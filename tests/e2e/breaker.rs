//! Tools that learn from failure (issue #21): a tool that times out three times in a row is
//! suspended (answered at once, saying why and when it is tried again), half-opens after its
//! cool-down for one trial call, closes when the trial succeeds and suspends for twice as long when
//! it fails; other tools never notice. The state is in the audit log, `/health` and `/metrics`, and
//! a tool that fails often says so in its error results.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::exec::{CallOutcome, CallRequest, Pipeline};

use crate::harness::Env;

/// The hostile fixture with a short deadline, and a breaker with a one-second cool-down.
const CONFIG: &str = "[permissions]\nmode = \"bypass\"\n[breaker]\ncool-down-s = 1\n\
                      [plugins.hostile.limits]\ntimeout-ms = 300\n";

async fn call(p: &Pipeline, tool: &str, input: Value) -> (CallOutcome, Duration) {
    let started = Instant::now();
    let outcome = p
        .call(CallRequest {
            tool: tool.into(),
            input,
            origin: "test",
            ..CallRequest::default()
        })
        .await;
    (outcome, started.elapsed())
}

fn kind(outcome: &CallOutcome) -> &str {
    outcome.error_kind().map_or("ok", |k| k.as_str())
}

/// The `breaker` notes of the audit line of the call `outcome` answered.
fn notes(env: &Env, outcome: &CallOutcome) -> Vec<String> {
    let record = env
        .audit()
        .into_iter()
        .find(|r| r["call_id"] == outcome.call_id.as_str())
        .expect("an audit line");
    record["breaker"]
        .as_array()
        .map(|n| {
            n.iter()
                .map(|n| n["event"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The body of `GET http://ADDR/PATH`.
pub(crate) async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::get(format!("http://{addr}{path}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_keeps_timing_out_is_suspended_tried_again_and_closed() {
    let env = Env::new(&["hostile"], CONFIG);
    let p = env.pipeline(16).await;
    let app = toolhost::server::Server::new(p.clone(), env.config().server).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let slow = || json!({ "ms": 5000 });

    // Two timeouts: still closed, and the second error already tells the model.
    for _ in 0..2 {
        let (out, _) = call(&p, "sleep", slow()).await;
        assert_eq!(kind(&out), "timeout", "{}", out.content);
    }
    // The third opens it; its answer says the tool keeps failing.
    let (third, _) = call(&p, "sleep", slow()).await;
    assert_eq!(kind(&third), "timeout");
    assert!(
        third.content.contains("failed 3 of its last 3 calls"),
        "{}",
        third.content
    );
    assert_eq!(notes(&env, &third), ["opened"]);

    // Suspended: answered at once, with why and when, whatever the input.
    let (refused, took) = call(&p, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(kind(&refused), "suspended", "{}", refused.content);
    assert!(
        took < Duration::from_millis(200),
        "answered at once: {took:?}"
    );
    for needle in ["'sleep' is suspended", "timed out", "1 s"] {
        assert!(
            refused.content.contains(needle),
            "{needle}: {}",
            refused.content
        );
    }
    assert_eq!(notes(&env, &refused), ["refused"]);

    // Another tool of the same plugin is not affected.
    let (other, _) = call(&p, "time", json!({})).await;
    assert_eq!(kind(&other), "ok", "{}", other.content);

    // /health and /metrics show the open breaker.
    let health: Value = serde_json::from_str(&get(addr, "/health").await).unwrap();
    assert_eq!(
        health["breakers"]["sleep"]["breaker"]["state"], "open",
        "{health}"
    );
    assert_eq!(health["breakers"]["sleep"]["breaker"]["kind"], "timeout");
    assert_eq!(health["breakers"]["time"]["breaker"]["state"], "closed");
    let metrics = get(addr, "/metrics").await;
    assert!(
        metrics.contains("toolhost_tool_breaker_state{tool=\"sleep\",state=\"open\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains(
        "toolhost_tool_breaker_transitions_total{tool=\"sleep\",transition=\"opened\"} 1"
    ));
    assert!(metrics.contains("toolhost_call_errors_total{tool=\"sleep\",kind=\"suspended\"} 1"));

    // After the cool-down one trial runs; it succeeds and closes the breaker. A sleep on purpose:
    // the one-second cool-down must pass by the clock.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (trial, _) = call(&p, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(kind(&trial), "ok", "{}", trial.content);
    assert_eq!(notes(&env, &trial), ["half_opened", "closed"]);
    let (after, _) = call(&p, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(kind(&after), "ok");
    let health: Value = serde_json::from_str(&get(addr, "/health").await).unwrap();
    assert_eq!(health["breakers"]["sleep"]["breaker"]["state"], "closed");

    // Three more timeouts open it again; a failed trial suspends it for twice as long.
    for _ in 0..3 {
        call(&p, "sleep", slow()).await;
    }
    // A sleep on purpose: the cool-down again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (failed_trial, _) = call(&p, "sleep", slow()).await;
    assert_eq!(kind(&failed_trial), "timeout");
    assert_eq!(notes(&env, &failed_trial), ["half_opened", "reopened"]);
    let (refused, _) = call(&p, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(kind(&refused), "suspended");
    assert!(refused.content.contains("2 s"), "{}", refused.content);

    // Every call has exactly one audit line (begin lines aside).
    let ends = env.audit().len();
    assert_eq!(ends, 12, "one line per call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_that_are_not_the_tools_fault_never_suspend_it() {
    let env = Env::new(&["hostile"], CONFIG);
    let p = env.pipeline(16).await;
    // Invalid input, three times and more: the tool never ran, so nothing is counted.
    for _ in 0..5 {
        let (out, _) = call(&p, "sleep", json!({ "ms": "soon" })).await;
        assert_eq!(kind(&out), "invalid_input", "{}", out.content);
        assert!(!out.content.contains("failed"), "{}", out.content);
    }
    // A trap twice, a timeout, a trap: never three of one kind in a row, so it stays closed.
    for (tool, input) in [
        ("trap", json!({})),
        ("trap", json!({})),
        ("sleep", json!({ "ms": 5000 })),
        ("trap", json!({})),
    ] {
        call(&p, tool, input).await;
    }
    let (out, _) = call(&p, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(kind(&out), "ok", "{}", out.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_is_configured_per_tool_and_can_be_off() {
    let config = format!(
        "{CONFIG}[plugins.hostile.tools.sleep.breaker]\nfailures = 1\n\
         [plugins.hostile.tools.trap.breaker]\nkinds = [\"trap\"]\nfailures = 2\n\
         [plugins.hostile.tools.spin.breaker]\ndisabled = true\n"
    );
    let env = Env::new(&["hostile"], &config);
    let p = env.pipeline(16).await;
    let (first, _) = call(&p, "sleep", json!({ "ms": 5000 })).await;
    assert_eq!(kind(&first), "timeout");
    let (refused, _) = call(&p, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(kind(&refused), "suspended", "one timeout is enough here");

    for _ in 0..2 {
        assert_eq!(kind(&call(&p, "trap", json!({})).await.0), "trap");
    }
    assert_eq!(kind(&call(&p, "trap", json!({})).await.0), "suspended");

    for _ in 0..4 {
        assert_eq!(kind(&call(&p, "spin", json!({})).await.0), "timeout");
    }

    // A bad setting is a config error at start.
    let env = Env::new(&["hostile"], "[breaker]\nkinds = [\"denied\"]\n");
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("says nothing about the tool's health"),
        "{stderr}"
    );
}

/// One caller's lower limits never pause a tool for another (issue #36): alice's profile lowers
/// `timeout-ms` below the plugin's, her calls time out at her limit, and only her own breaker
/// opens; bob's calls still run, and `/health` shows each caller its own state. Failures at the
/// plugin's own limit still suspend the tool for everyone.
#[test]
fn a_callers_own_lower_limits_never_suspend_the_tool_for_other_callers() {
    use crate::daemon::{Daemon, HttpSession, http};
    use crate::issuer::{Alg, Issuer, now};

    let issuer = Issuer::start();
    let config = format!(
        "[auth]\nissuer = \"{}\"\naudience = \"toolhost-e2e\"\n\
         [permissions]\nmode = \"bypass\"\n[breaker]\ncool-down-s = 30\n\
         [plugins.hostile.limits]\ntimeout-ms = 1000\n\
         [[callers]]\nname = \"hasty\"\nmatch = {{ sub = \"alice\" }}\ntimeout-ms = 100\n\
         [[callers]]\nname = \"everyone\"\nmatch = {{}}\n",
        issuer.url()
    );
    let env = Env::new(&["hostile"], &config);
    let daemon = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = daemon.http.unwrap();
    let token = |sub: &str| {
        issuer.sign(
            "rsa-1",
            Alg::Rs256,
            &json!({"iss": issuer.url(), "aud": "toolhost-e2e", "sub": sub,
                    "iat": now(), "exp": now() + 300}),
        )
    };
    let (alice_token, bob_token) = (token("alice"), token("bob"));
    let session = |t: &str| HttpSession::open(addr, &[("Authorization", &format!("Bearer {t}"))]);
    let mut alice = session(&alice_token).unwrap();
    let mut bob = session(&bob_token).unwrap();
    let kind_of = |answer: &Value| {
        answer["result"]["_meta"]["toolhost/errorKind"]
            .as_str()
            .unwrap_or("ok")
            .to_owned()
    };
    let health = |t: &str| -> Value {
        let bearer = format!("Bearer {t}");
        let reply = http(addr, "GET", "/health", &[("Authorization", &bearer)], b"");
        serde_json::from_slice(&reply.body).unwrap()
    };

    // Alice's calls end at her own 100 ms, three times in a row.
    for _ in 0..3 {
        let out = alice.call("sleep", json!({"ms": 800})).unwrap();
        assert_eq!(kind_of(&out), "timeout", "{out}");
    }
    // Bob's calls still run, again and again.
    for _ in 0..3 {
        let out = bob.call("sleep", json!({"ms": 1})).unwrap();
        assert_eq!(kind_of(&out), "ok", "{out}");
    }
    // Alice's next call is refused, for her alone, saying so.
    let refused = alice.call("sleep", json!({"ms": 1})).unwrap();
    assert_eq!(kind_of(&refused), "suspended", "{refused}");
    assert!(
        refused.to_string().contains("Only your calls are refused"),
        "{refused}"
    );

    // Each caller sees its own state: alice her open breaker beside the tool's closed one.
    let mine = health(&alice_token);
    assert_eq!(
        mine["breakers"]["sleep"]["breaker"]["state"], "closed",
        "{mine}"
    );
    assert_eq!(
        mine["breakers"]["sleep"]["own"]["breaker"]["state"], "open",
        "{mine}"
    );
    let his = health(&bob_token);
    assert_eq!(his["breakers"]["sleep"]["breaker"]["state"], "closed");
    assert!(his["breakers"]["sleep"].get("own").is_none(), "{his}");
    // The audit line of alice's refused call says whose breaker refused it.
    let records = env.audit();
    let last_of_alice = records
        .iter()
        .rev()
        .find(|r| r["caller"]["subject"] == "alice")
        .unwrap();
    assert_eq!(
        last_of_alice["breaker"][0]["event"], "caller_refused",
        "{last_of_alice}"
    );

    // Timeouts at the plugin's own limit still suspend the tool for everyone.
    for _ in 0..3 {
        let out = bob.call("sleep", json!({"ms": 5000})).unwrap();
        assert_eq!(kind_of(&out), "timeout", "{out}");
    }
    let out = bob.call("sleep", json!({"ms": 1})).unwrap();
    assert_eq!(kind_of(&out), "suspended", "{out}");
    drop(daemon);
}
