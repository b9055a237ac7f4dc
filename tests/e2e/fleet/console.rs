//! One console for the fleet: a session signed in on one daemon is honoured by every daemon behind
//! the balancer, signing out on one ends it on all (an event stream held open elsewhere ends too),
//! and a one-time sign-in link is spent once wherever it lands. An operator watching any daemon's
//! console is there for a question asked on any other.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{fleet, fleet_with};
use crate::attendance::Stream;
use crate::console::{Browser, batch, sign_in_link};
use crate::daemon::http;
use crate::harness::{EVENT_WAIT, wait_until};

/// `GET /console/api/session` on `addr` with `cookie`: the status and the body.
fn session(addr: std::net::SocketAddr, cookie: &str) -> (u16, Value) {
    let reply = http(
        addr,
        "GET",
        "/console/api/session",
        &[("Cookie", cookie)],
        b"",
    );
    let body = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
    (reply.status, body)
}

#[test]
fn a_console_session_and_its_sign_in_link_hold_across_the_fleet() {
    let Some(f) = fleet("fleet-sessions") else {
        return;
    };
    let (a, b, c) = (f.addrs[0], f.addrs[1], f.addrs[2]);

    // The link A printed, opened through the balancer: it signs in once, on whichever daemon.
    let link = sign_in_link(f.daemons[0].as_ref().unwrap());
    let reply = http(f.lb.addr, "GET", &link, &[], b"");
    assert_eq!(
        reply.status,
        303,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let set = reply.header("set-cookie").expect("a session cookie");
    let cookie = set.split(';').next().unwrap().to_owned();
    for addr in [a, b, c, f.lb.addr] {
        assert_eq!(
            http(addr, "GET", &link, &[], b"").status,
            403,
            "spent once fleet-wide ({addr})"
        );
    }

    // The session is valid on every daemon, with one CSRF token.
    let (status, on_a) = session(a, &cookie);
    assert_eq!(status, 200, "{on_a}");
    assert_eq!(on_a["operator"], "local operator");
    for addr in [b, c] {
        assert_eq!(session(addr, &cookie), (200, on_a.clone()), "{addr}");
    }
    let csrf = on_a["csrf"].as_str().unwrap().to_owned();

    // An event stream held open on A; the operator signs out through C.
    let stream = Stream::open(a, &[("Cookie", &cookie)]);
    let forged = http(
        c,
        "POST",
        "/console/api/signout",
        &[("Cookie", &cookie)],
        b"",
    );
    assert_eq!(forged.status, 403, "signing out needs the CSRF token too");
    let out = http(
        c,
        "POST",
        "/console/api/signout",
        &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
        b"",
    );
    assert_eq!(out.status, 200, "{}", String::from_utf8_lossy(&out.body));
    for addr in [a, b, c] {
        assert_eq!(session(addr, &cookie).0, 401, "signed out on {addr} too");
    }
    wait_until(
        "the stream on another daemon to end",
        Duration::from_secs(5),
        || stream.ended(),
    );
}

#[test]
fn an_operator_at_any_daemons_console_is_there_for_a_question_asked_on_another() {
    let config = r#"
[permissions]
mode = "bypass"
ask = ["echo"]

[server]
state-key-env = "TOOLHOST_STATE_KEY"
approval-timeout-ms = 60000

[state]
url-env = "TOOLHOST_STATE_URL"

[tasks]
lease-ms = 2000
"#;
    let Some(f) = fleet_with("fleet-attendance", config) else {
        return;
    };
    let (a, c) = (f.addrs[0], f.addrs[2]);
    // Nobody at any console: a call on A is answered at once, as on a daemon alone.
    let asked = Instant::now();
    let answer = batch(a, "echo", json!({"text": "anyone?"}));
    assert!(asked.elapsed() < Duration::from_secs(5), "{answer}");
    assert!(answer.to_string().contains("Permission denied"), "{answer}");

    // An operator watching C's console (its event stream open) is there for A's question.
    let on_c = Browser::sign_in(f.daemons[2].as_ref().unwrap());
    let stream = Stream::open(c, &[("Cookie", &on_c.cookie)]);
    // A hears of C's console within its next round or two.
    std::thread::sleep(Duration::from_secs(3));
    let client = std::thread::spawn(move || batch(a, "echo", json!({"text": "from A"})));
    let question = on_c.waiting();
    assert_eq!(question["input"]["text"], "from A", "{question}");
    wait_until("C's stream to show A's question", EVENT_WAIT, || {
        stream.text().contains("from A")
    });
    let path = format!(
        "/console/api/approvals/{}",
        question["id"].as_str().unwrap()
    );
    let approve = json!({"answer": "approve", "input_sha256": question["input_sha256"]});
    let (status, body) = on_c.post(&path, &[("X-CSRF-Token", &on_c.csrf)], &approve);
    assert_eq!(status, 200, "{body}");
    let reply = client.join().unwrap();
    assert_eq!(reply["content"][0]["content"], "from A", "{reply}");
}
