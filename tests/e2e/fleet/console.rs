//! One console for the fleet: a session signed in on one daemon is honoured by every daemon behind
//! the balancer, signing out on one ends it on all (an event stream held open elsewhere ends too),
//! and a one-time sign-in link is spent once wherever it lands. An operator watching any daemon's
//! console is there for a question asked on any other. One console lists every daemon's calls,
//! each naming its daemon, and its cancel reaches the daemon that runs the call; its health page
//! shows every daemon, and a daemon stopped apart from one killed. Its audit browser pages and
//! exports every daemon's records, also a killed daemon's.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{asking_echo, fleet, fleet_with};
use crate::attendance::Stream;
use crate::console::{Browser, batch, sign_in_link};
use crate::daemon::http;
use crate::harness::{EVENT_WAIT, wait_for, wait_until};

/// How many daemons `items` name, each once.
fn daemons_named(items: &[Value]) -> usize {
    let named: std::collections::BTreeSet<&str> =
        items.iter().filter_map(|r| r["daemon"].as_str()).collect();
    named.len()
}

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
    let Some(f) = fleet_with("fleet-attendance", &asking_echo("")) else {
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

#[test]
fn one_console_shows_every_daemons_calls_and_cancels_on_the_owner() {
    let Some(mut f) = fleet("fleet-live") else {
        return;
    };
    let on_c = Browser::sign_in(f.daemons[2].as_ref().unwrap());
    let stream = Stream::open(f.addrs[2], &[("Cookie", &on_c.cookie)]);
    // A long call on each daemon.
    let clients: Vec<_> = f
        .addrs
        .iter()
        .enumerate()
        .map(|(i, addr)| {
            let addr = *addr;
            std::thread::spawn(move || batch(addr, "sleep", json!({"ms": 50000 + i})))
        })
        .collect();
    // C's console lists all three, each naming its daemon.
    let running = wait_for("three running calls in C's console", EVENT_WAIT, || {
        let running = on_c.get("/console/api/calls")["running"]
            .as_array()?
            .clone();
        (running.len() == 3).then_some(running)
    });
    assert_eq!(daemons_named(&running), 3, "{running:?}");
    assert!(
        stream.text().contains("event: calls"),
        "C's page was told to look again: {}",
        stream.text()
    );

    // Cancelling A's call from C's console stops it on A, and A's record names the operator.
    let (mine, c_own) = (audit_begin(&f.audits[0]), audit_begin(&f.audits[2]));
    let daemon_of = |id: &str| {
        let call = running.iter().find(|r| r["call_id"] == id).unwrap();
        call["daemon"].clone()
    };
    assert_ne!(daemon_of(&mine), daemon_of(&c_own));
    let path = format!("/console/api/calls/{mine}/cancel");
    let token = [("X-CSRF-Token", on_c.csrf.as_str())];
    let (status, body) = on_c.post(&path, &token, &json!({}));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["daemon"], daemon_of(&mine), "sent to its owner");
    let answer = clients.into_iter().next().unwrap().join().unwrap();
    let text = answer["content"][0]["content"].as_str().unwrap_or_default();
    assert!(text.contains("stopped by toolhost's operator"), "{answer}");
    let record = wait_for("A's record of the cancelled call", EVENT_WAIT, || {
        super::audit_lines(&f.audits[0])
            .into_iter()
            .find(|r| r["call_id"] == mine.as_str() && r["event"] != "begin")
    });
    assert_eq!(record["error_kind"], "cancelled", "{record}");
    assert_eq!(record["detail"], "cancelled by the operator local operator");
    // ... and C's console shows it ended, on A.
    let recent = wait_for("A's ended call in C's console", EVENT_WAIT, || {
        let recent = on_c.get("/console/api/calls")["recent"].as_array()?.clone();
        recent.into_iter().find(|r| r["call_id"] == mine.as_str())
    });
    assert_eq!(recent["daemon"], daemon_of(&mine), "{recent}");
    assert_eq!(
        on_c.post(&path, &token, &json!({})).0,
        404,
        "no longer running anywhere"
    );

    // Health: each daemon, and the fleet (`ok` once every daemon has compiled its plugins: a
    // first start on a busy machine takes a while, and calls wait for it meanwhile).
    let health = wait_for("every daemon ready", Duration::from_secs(120), || {
        let health = on_c.get("/console/api/health");
        (health["fleet"]["status"] == "ok").then_some(health)
    });
    let fleet = &health["fleet"];
    assert_eq!(fleet["ready"], 3, "{fleet}");
    let state_of = |fleet: &Value, daemon: &Value| {
        let all = fleet["daemons"].as_array().cloned().unwrap_or_default();
        let found = all.into_iter().find(|d| d["daemon"] == *daemon);
        found.map(|d| d["state"].clone()).unwrap_or(Value::Null)
    };
    assert_eq!(state_of(fleet, &health["daemon"]), "ready", "{health}");
    // B stops (its call cancelled first, so it drains at once); A is killed.
    let b_call = audit_begin(&f.audits[1]);
    let (a_id, b_id) = (daemon_of(&mine), daemon_of(&b_call));
    let cancel_b = format!("/console/api/calls/{b_call}/cancel");
    assert_eq!(on_c.post(&cancel_b, &token, &json!({})).0, 202);
    let stopping = f.daemons[1].take().unwrap();
    stopping.signal("TERM");
    f.daemons[0].take().unwrap().signal("KILL");
    let fleet = wait_for("B stopped and A silent", Duration::from_secs(20), || {
        let fleet = on_c.get("/console/api/health")["fleet"].clone();
        let states = (state_of(&fleet, &a_id), state_of(&fleet, &b_id));
        (states == ("silent".into(), "stopped".into())).then_some(fleet)
    });
    assert_eq!(fleet["status"], "degraded", "{fleet}");
    assert_eq!(fleet["alive"], 1, "{fleet}");
    drop(stopping);
}

/// The call id of the first call `audit` began.
fn audit_begin(audit: &std::path::Path) -> String {
    wait_for("a begun call in the audit log", EVENT_WAIT, || {
        super::audit_lines(&audit.to_path_buf())
            .into_iter()
            .find(|r| r["event"] == "begin")
            .and_then(|r| r["call_id"].as_str().map(str::to_owned))
    })
}

#[test]
fn the_audit_browser_pages_and_exports_the_whole_fleets_records() {
    let Some(mut f) = fleet("fleet-audit") else {
        return;
    };
    for (i, addr) in f.addrs.iter().enumerate() {
        let answer = batch(*addr, "sleep", json!({"ms": 1 + i}));
        assert_eq!(answer["content"][0]["is_error"], false, "{answer}");
    }
    let on_c = Browser::sign_in(f.daemons[2].as_ref().unwrap());
    let records = |query: &str| {
        let page = on_c.get(&format!("/console/api/audit?{query}"));
        page["records"].as_array().cloned().unwrap_or_default()
    };
    // Each daemon's record reaches the index within a round of being written.
    let found = wait_for("a record of each daemon", EVENT_WAIT, || {
        let found = records("tool=sleep");
        (found.len() == 3).then_some(found)
    });
    assert_eq!(daemons_named(&found), 3, "{found:?}");
    assert_eq!(
        records("tool=sleep&q=%22ms%22%3A2").len(),
        0,
        "inputs are not logged"
    );
    assert_eq!(records("tool=echo").len(), 0);

    // Paging one record at a time walks the three, by cursor.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = on_c.get(&format!("/console/api/audit?tool=sleep&limit=1{cursor}"));
        let page_records = page["records"].as_array().unwrap();
        seen.extend(page_records.iter().map(|r| r["call_id"].clone()));
        match page["next"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
        assert!(seen.len() <= 3, "{seen:?}");
    }
    assert_eq!(seen.len(), 3, "{seen:?}");

    // The export holds the same records; `scope=local` reads C's own file.
    let export = http(
        f.addrs[2],
        "GET",
        "/console/api/audit/export?tool=sleep",
        &[("Cookie", &on_c.cookie)],
        b"",
    );
    assert_eq!(export.status, 200);
    let lines = String::from_utf8_lossy(&export.body).lines().count();
    assert_eq!(lines, 3, "{}", String::from_utf8_lossy(&export.body));
    assert_eq!(records("tool=sleep&scope=local").len(), 1);

    // A killed daemon's records stay findable.
    f.daemons[0].take().unwrap().signal("KILL");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(records("tool=sleep").len(), 3);
}
