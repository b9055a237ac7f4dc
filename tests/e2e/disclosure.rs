//! What monitoring and errors show, and to whom (issue #36): `/metrics` is bounded by the catalogue
//! whatever names clients send, and shows a caller only the tools its profile lets it see; a tool
//! hidden by a profile is unknown to task requests too, in both protocol eras; a call that cannot
//! be set up tells the model nothing of the host, and the operator everything.

use std::net::SocketAddr;

use serde_json::{Value, json};
use toolhost::exec::CallRequest;

use crate::breaker::get;
use crate::daemon::{Daemon, HttpSession, http, modern_request};
use crate::harness::{EVENT_WAIT, Env, poll};
use crate::issuer::{Alg, Issuer, now};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_tool_names_never_grow_the_metrics() {
    let env = Env::new(&["echo"], "");
    let p = env.pipeline(16).await;
    let app = toolhost::server::Server::new(p.clone(), env.config().server).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let ok = p
        .call(CallRequest {
            tool: "echo".into(),
            input: json!({"text": "hi"}),
            origin: "test",
            ..CallRequest::default()
        })
        .await;
    assert!(ok.error_kind().is_none(), "{}", ok.content);
    for i in 0..2000 {
        let out = p
            .call(CallRequest {
                tool: format!("made-up-{i}"),
                input: json!({}),
                origin: "test",
                ..CallRequest::default()
            })
            .await;
        assert_eq!(out.error_kind().map(|k| k.as_str()), Some("unknown_tool"));
    }
    let metrics = get(addr, "/metrics").await;
    assert!(
        metrics.len() < 32 * 1024,
        "/metrics grew to {} bytes",
        metrics.len()
    );
    assert!(!metrics.contains("made-up"), "a made-up name is a label");
    // Still counted, under one label.
    assert!(
        metrics
            .contains("toolhost_call_errors_total{tool=\"(unknown)\",kind=\"unknown_tool\"} 2000"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolhost_calls_total{tool=\"echo\",outcome=\"ok\"} 1"),
        "{metrics}"
    );
}

/// A daemon behind a real issuer, with two profiles: `readers` see `echo` only, `ci` sees every
/// tool; the hostile fixture's tools run only as tasks.
struct Tenants {
    issuer: Issuer,
    env: Env,
    daemon: Daemon,
    addr: SocketAddr,
}

impl Tenants {
    fn start() -> Self {
        let issuer = Issuer::start();
        let config = format!(
            "[auth]\nissuer = \"{}\"\naudience = \"toolhost-e2e\"\n\
             [permissions]\nmode = \"bypass\"\n\
             [plugins.hostile]\ntask = \"required\"\n\
             [plugins.hostile.limits]\ntimeout-ms = 60000\n\
             [[callers]]\nname = \"readers\"\nmatch = {{ sub = \"alice\" }}\ntools = [\"echo\"]\n\
             [[callers]]\nname = \"ci\"\nmatch = {{ sub = \"ci-bot\" }}\n",
            issuer.url()
        );
        let env = Env::new(&["echo", "hostile"], &config);
        let daemon = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
        let addr = daemon.http.unwrap();
        Self {
            issuer,
            env,
            daemon,
            addr,
        }
    }

    fn token(&self, sub: &str) -> String {
        self.issuer.sign(
            "rsa-1",
            Alg::Rs256,
            &json!({"iss": self.issuer.url(), "aud": "toolhost-e2e", "sub": sub,
                    "iat": now(), "exp": now() + 300}),
        )
    }

    fn session(&self, token: &str) -> HttpSession {
        HttpSession::open(self.addr, &[("Authorization", &format!("Bearer {token}"))]).unwrap()
    }

    fn metrics(&self, token: &str) -> String {
        let bearer = format!("Bearer {token}");
        let reply = http(
            self.addr,
            "GET",
            "/metrics",
            &[("Authorization", &bearer)],
            b"",
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.text()
    }
}

#[test]
fn metrics_show_each_caller_only_the_tools_its_profile_lets_it_see() {
    let t = Tenants::start();
    let (reader_token, ci_token) = (t.token("alice"), t.token("ci-bot"));
    let mut reader = t.session(&reader_token);
    let mut ci = t.session(&ci_token);
    let ok = reader.call("echo", json!({"text": "hi"})).unwrap();
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    // The reader probes a hidden tool and a made-up name; ci uses a tool the reader cannot see.
    reader.call("time", json!({})).unwrap();
    reader.call("no-such-tool", json!({})).unwrap();
    // `time` runs only as a task here: ask for one, 2025-11-25 style.
    let task = json!({"jsonrpc": "2.0", "id": 90, "method": "tools/call",
                      "params": {"name": "time", "arguments": {}, "task": {"ttl": 60000}}});
    let created = ci.post(task.to_string().as_bytes()).unwrap().messages();
    assert!(
        created[0]["result"]["task"]["taskId"].is_string(),
        "{created:?}"
    );

    let seen = t.metrics(&reader_token);
    assert!(seen.contains("tool=\"echo\""), "{seen}");
    for hidden in ["time", "sleep", "(unknown)", "no-such-tool"] {
        assert!(
            !seen.contains(&format!("tool=\"{hidden}\"")),
            "the reader sees {hidden}: {seen}"
        );
    }
    // ci sees every tool's series, its own calls and the reader's alike; no profile is the
    // operator's, so neither sees the unknown names' counter.
    let wide = t.metrics(&ci_token);
    assert!(wide.contains("tool=\"echo\""), "{wide}");
    let has_time = |m: &String| m.contains("tool=\"time\"");
    let wide = poll(EVENT_WAIT, || Some(t.metrics(&ci_token)).filter(has_time))
        .unwrap_or_else(|| t.metrics(&ci_token));
    assert!(wide.contains("tool=\"time\""), "{wide}");
    assert!(!wide.contains("no-such-tool"), "{wide}");
    drop(t.daemon);
}

/// The JSON text of `answer` with `name` put where `as_name` stood, for comparing answers about
/// two names.
fn renamed(answer: &Value, as_name: &str, name: &str) -> String {
    answer.to_string().replace(as_name, name)
}

#[test]
fn a_tool_hidden_by_a_profile_is_unknown_to_task_requests_in_both_eras() {
    let t = Tenants::start();
    let token = t.token("alice");
    // `sleep` exists and runs only as a task; alice's profile hides it. Every way of asking must
    // answer exactly as for a name nothing has.
    let modern = |name: &str, tasks: bool| {
        let capabilities = if tasks {
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({})
        };
        modern_request(
            t.addr,
            "tools/call",
            json!({"name": name, "arguments": {"ms": 1}}),
            capabilities,
            Some(&token),
        )
    };
    for tasks in [false, true] {
        let hidden = modern("sleep", tasks);
        let unknown = modern("nosuchtool", tasks);
        assert_eq!(
            hidden.to_string(),
            renamed(&unknown, "nosuchtool", "sleep"),
            "2026-07-28, tasks declared: {tasks}"
        );
        assert!(!hidden.to_string().contains("task"), "{hidden}");
    }
    let mut session = t.session(&token);
    let legacy = |session: &mut HttpSession, id: u64, name: &str, task: bool| {
        let mut params = json!({"name": name, "arguments": {"ms": 1}});
        if task {
            params["task"] = json!({"ttl": 60000});
        }
        let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let reply = session.post(m.to_string().as_bytes()).unwrap();
        let mut answer = reply
            .messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer: {}", reply.text()));
        answer["id"] = json!(0);
        answer
    };
    for task in [false, true] {
        let hidden = legacy(&mut session, 10, "sleep", task);
        let unknown = legacy(&mut session, 11, "nosuchtool", task);
        assert_eq!(
            hidden.to_string(),
            renamed(&unknown, "nosuchtool", "sleep"),
            "2025-11-25, task: {task}"
        );
        assert!(!hidden.to_string().contains("only as a task"), "{hidden}");
    }
    // No task was created for alice.
    let list = json!({"jsonrpc": "2.0", "id": 12, "method": "tasks/list", "params": {}});
    let listed = session
        .post(list.to_string().as_bytes())
        .unwrap()
        .messages();
    assert_eq!(listed[0]["result"]["tasks"], json!([]), "{listed:?}");
    assert!(
        t.env
            .audit()
            .iter()
            .all(|r| r["tool"] != "sleep" || r["error_kind"] == "unknown_tool")
    );
}

#[test]
fn a_grant_that_cannot_be_opened_tells_the_model_nothing_of_the_host() {
    let env = Env::new(
        &["fs"],
        "[permissions]\nmode = \"bypass\"\n[plugins.fs]\ndirs = [{ host = \"work\", mode = \"ro\" }]\n",
    );
    std::fs::write(env.work().join("hello.txt"), "hello\n").unwrap();
    let mut d = Daemon::start(&env, &["--no-watch"]);
    d.call("read_file", json!({"path": "hello.txt"}))
        .assert_ok();
    // The granted folder goes away while the daemon runs.
    std::fs::remove_dir_all(env.work()).unwrap();
    let out = d.call("read_file", json!({"path": "hello.txt"}));
    assert!(out.is_error(), "{:?}", out.result);
    let text = out.result.to_string();
    let host = env.path().to_string_lossy().into_owned();
    for leak in [
        host.as_str(),
        "/tmp",
        "work",
        "os error",
        "No such file",
        "granted directory",
    ] {
        assert!(!text.contains(leak), "the result shows {leak:?}: {text}");
    }
    assert!(text.contains("operator's log"), "{text}");
    // The operator's log and the audit record have the detail.
    let record = crate::daemon::record(&env, out.call_id());
    let detail = record["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("./work") && detail.contains("os error"),
        "{record}"
    );
    // The log line is read from the daemon's stderr by another thread: wait for it to arrive.
    let logged = |s: &str| s.contains("could not be set up") && s.contains("./work");
    let stderr =
        poll(EVENT_WAIT, || Some(d.stderr()).filter(|s| logged(s))).unwrap_or_else(|| d.stderr());
    assert!(logged(&stderr), "{stderr}");
    assert!(d.stop().success());
}
