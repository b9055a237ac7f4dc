//! Who is there to answer: a question goes to the console only while someone can answer it there
//! (an event stream open, an operator's recent request, or `approvals = "console"`); otherwise the
//! call is answered at once, naming the console and the `allow` rule. While a question waits, the
//! log names it and a client that asked for progress hears that it waits. The event stream itself
//! ends with its viewer's right to see it (signed out, token expired), and a shared daemon with
//! only the static token mints sign-in links with `toolhost console-link`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::console::{ASKING, Browser, batch};
use crate::daemon::{Daemon, http};
use crate::harness::{EVENT_WAIT, Env, poll, wait_until};
use crate::issuer::{Alg, Issuer, now};

/// `GET /console/api/events` held open with `headers`; what it read, and whether it ended.
pub(crate) struct Stream {
    read: Arc<Mutex<(Vec<u8>, bool)>>,
}

impl Stream {
    pub(crate) fn open(addr: SocketAddr, headers: &[(&str, &str)]) -> Self {
        let mut conn = TcpStream::connect(addr).unwrap();
        let mut request = format!(
            "GET /console/api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
             Connection: close\r\n"
        );
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        conn.write_all(request.as_bytes()).unwrap();
        let read = Arc::new(Mutex::new((Vec::new(), false)));
        let kept = read.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => kept.lock().unwrap().0.extend_from_slice(&buf[..n]),
                }
            }
            kept.lock().unwrap().1 = true;
        });
        let stream = Self { read };
        wait_until("the stream's 200", EVENT_WAIT, || {
            stream.text().starts_with("HTTP/1.1 200")
        });
        stream
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.read.lock().unwrap().0).into_owned()
    }

    pub(crate) fn ended(&self) -> bool {
        self.read.lock().unwrap().1
    }
}

#[test]
fn an_ask_with_nobody_at_the_console_is_answered_at_once_naming_it_and_the_allow_rule() {
    let env = Env::new(&["echo"], ASKING);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let addr = daemon.http_addr();
    let asked = Instant::now();
    let answer = batch(addr, "echo", json!({"text": "anyone?"}));
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
    let text = answer.to_string();
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains(&format!("http://{addr}/console/")), "{text}");
    // ... and the rule: which one asked, and how to run the call without asking.
    assert!(text.contains("without asking"), "{text}");
    let records = env.audit();
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(
        records[0]["decision"].to_string().contains("no approver"),
        "{records:?}"
    );
}

#[test]
fn approvals_console_waits_for_an_operator_even_when_nobody_is_there() {
    let env = Env::new(
        &["echo"],
        "[permissions]\nask = [\"echo\"]\n[server]\napproval-timeout-ms = 1500\n\
         [console]\napprovals = \"console\"\n",
    );
    let daemon = Daemon::start_env(
        &env,
        &["--no-watch", "--http", "127.0.0.1:0"],
        &[("TOOLHOST_LOG", "info")],
    );
    let addr = daemon.http_addr();
    let asked = Instant::now();
    let answer = batch(addr, "echo", json!({"text": "wait for me"}));
    assert!(asked.elapsed() >= Duration::from_millis(1400), "{answer}");
    assert!(
        answer.to_string().contains("no operator answered"),
        "{answer}"
    );
    // The wait was announced: the tool, the caller and where to answer.
    let log = daemon.wait_for_stderr("waiting for approval");
    let line = log
        .lines()
        .find(|l| l.contains("waiting for approval"))
        .unwrap();
    assert!(line.contains("tool=echo"), "{line}");
    assert!(line.contains("caller="), "{line}");
    assert!(line.contains(&format!("http://{addr}/console/")), "{line}");
}

#[test]
fn a_client_that_asked_for_progress_hears_that_its_call_waits_for_an_approval() {
    let env = Env::new(&["echo"], ASKING);
    // MCP on stdio, the console over HTTP: a person is signed in there.
    let mut d = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let browser = Browser::sign_in(&d);
    let id = d.id();
    d.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "approve me" },
                    "_meta": { "progressToken": "p1" } }
    }));
    assert!(
        d.notified("notifications/progress", EVENT_WAIT),
        "no progress while waiting"
    );
    let question = browser.waiting();
    let (status, _) = browser.post(
        &format!(
            "/console/api/approvals/{}",
            question["id"].as_str().unwrap()
        ),
        &[("X-CSRF-Token", &browser.csrf)],
        &json!({"answer": "approve", "input_sha256": question["input_sha256"]}),
    );
    assert_eq!(status, 200);
    let answer = d.answer(id);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let progress: Vec<&Value> = d
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    let first = &progress[0]["params"];
    assert_eq!(first["progressToken"], "p1");
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("waiting for approval"),
        "{first}"
    );
    assert!(first["progress"].as_f64().unwrap() < 1.0, "{first}");
}

#[test]
fn the_event_stream_ends_when_its_session_signs_out() {
    let env = Env::new(
        &["echo"],
        "[permissions]\nask = [\"echo\"]\n[server]\napproval-timeout-ms = 2000\n",
    );
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let browser = Browser::sign_in(&daemon);
    let stream = Stream::open(browser.addr, &[("Cookie", &browser.cookie)]);
    let (status, _) = browser.post(
        "/console/api/signout",
        &[("X-CSRF-Token", &browser.csrf)],
        &json!({}),
    );
    assert_eq!(status, 200);
    let signed_out = Instant::now();
    // A question asked now must not reach the stream.
    let addr = browser.addr;
    let client = thread::spawn(move || batch(addr, "echo", json!({"text": "secret input"})));
    wait_until("the stream to end", Duration::from_secs(5), || {
        stream.ended()
    });
    assert!(signed_out.elapsed() < Duration::from_secs(3));
    assert!(!stream.text().contains("secret input"), "{}", stream.text());
    client.join().unwrap();
}

#[test]
fn the_event_stream_ends_when_its_bearer_token_expires() {
    let issuer = Issuer::start();
    let audience = "https://tools.example.test/mcp";
    let config = format!(
        "[auth]\nissuer = \"{}\"\naudience = \"{audience}\"\nleeway-s = 0\n\
         [[callers]]\nname = \"ops\"\nmatch = {{ sub = \"alice\" }}\nrole = \"operator\"\n",
        issuer.url()
    );
    let env = Env::new(&["echo"], &config);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let claims = json!({"iss": issuer.url(), "aud": audience, "sub": "alice",
                        "iat": now(), "exp": now() + 3});
    let token = format!("Bearer {}", issuer.sign("rsa-1", Alg::Rs256, &claims));
    let stream = Stream::open(daemon.http_addr(), &[("Authorization", &token)]);
    assert!(!stream.ended());
    let ended = poll(Duration::from_secs(10), || stream.ended().then_some(()));
    assert!(ended.is_some(), "the stream outlived its token");
}

#[test]
fn console_link_mints_a_one_time_sign_in_link_with_the_static_token() {
    let env = Env::new(&["echo"], "[server]\ntoken-env = \"TOOLHOST_TEST_TOKEN\"\n");
    let token = "static-token-for-the-console-0123456789";
    let daemon = Daemon::start_env(
        &env,
        &["--no-watch", "--http", "127.0.0.1:0"],
        &[("TOOLHOST_TEST_TOKEN", token)],
    );
    let addr = daemon.http_addr();
    let url = format!("http://{addr}");
    let out = env
        .command(&["console-link", "--url", &url])
        .env("TOOLHOST_TEST_TOKEN", token)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let path = link.strip_prefix(&url).expect("a link on the daemon");
    assert!(path.starts_with("/console/signin?token="), "{link}");
    let reply = http(addr, "GET", path, &[], b"");
    assert_eq!(reply.status, 303, "{}", reply.text());
    let cookie = reply
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let session = http(
        addr,
        "GET",
        "/console/api/session",
        &[("Cookie", &cookie)],
        b"",
    );
    assert_eq!(session.status, 200);
    assert!(
        session.text().contains("static-token"),
        "{}",
        session.text()
    );
    assert_eq!(http(addr, "GET", path, &[], b"").status, 403, "used twice");
    // A wrong token mints nothing, and says why.
    let out = env
        .command(&["console-link", "--url", &url])
        .env("TOOLHOST_TEST_TOKEN", "wrong")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
