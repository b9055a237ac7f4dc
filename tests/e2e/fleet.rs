//! Three daemons with one config, sharing a real PostgreSQL, behind a real HAProxy: 2026-07-28
//! clients need no stickiness; `initialize`-era sessions work through a balancer that pins them. A task created through one daemon is read through another; an
//! approval's `requestState` sealed by one is accepted by another (and only once, fleet-wide);
//! a daemon killed with SIGKILL mid-load leaves no task silently `working` and no call without its
//! audit line; a quota is one budget for the whole fleet. Small on purpose (CI);
//! `scripts/fleet-soak.sh` runs the bigger version.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod console;

use crate::console::{Browser, batch};
use crate::daemon::{Daemon, HttpSession, http, modern_request};
use crate::harness::{EVENT_WAIT, Env, audit_line_at, wait_until};
use crate::services::{Haproxy, Postgres};

const KEY: &str = "fleet-test-state-key-0123456789abcdef0123456789";

fn config() -> String {
    r#"
[permissions]
mode = "bypass"
ask = ["remember", "echo"]

[server]
state-key-env = "TOOLHOST_STATE_KEY"

[state]
url-env = "TOOLHOST_STATE_URL"

[tasks]
lease-ms = 2000

[plugins.hostile]
task = "optional"

[plugins.hostile.limits]
timeout-ms = 60000
"#
    .to_owned()
}

struct Fleet {
    env: Env,
    daemons: Vec<Option<Daemon>>,
    addrs: Vec<SocketAddr>,
    audits: Vec<PathBuf>,
    _pg: Postgres,
    lb: Haproxy,
}

fn fleet(test: &str) -> Option<Fleet> {
    fleet_with(test, &config())
}

fn fleet_with(test: &str, config: &str) -> Option<Fleet> {
    let pg = Postgres::start(test)?;
    crate::harness::service("haproxy", test)?;
    let env = Env::new(&["hostile", "echo"], config);
    let vars = [
        ("TOOLHOST_STATE_URL", pg.url.as_str()),
        ("TOOLHOST_STATE_KEY", KEY),
    ];
    let mut daemons = Vec::new();
    let mut addrs = Vec::new();
    let mut audits = Vec::new();
    for i in 0..3 {
        let audit = env.path().join(format!("audit-{i}.jsonl"));
        let audit_arg = audit.display().to_string();
        let d = Daemon::start_env(
            &env,
            &["--audit", &audit_arg, "--no-watch", "--http", "127.0.0.1:0"],
            &vars,
        );
        addrs.push(d.http.unwrap());
        daemons.push(Some(d));
        audits.push(audit);
    }
    for addr in &addrs {
        wait_until(&format!("daemon {addr} to be ready"), EVENT_WAIT, || {
            http(*addr, "GET", "/ready", &[], b"").status == 200
        });
    }
    let lb = Haproxy::start(test, &addrs, false)?;
    // HAProxy's first health checks mark the daemons up.
    lb.wait_until_all_up();
    Some(Fleet {
        env,
        daemons,
        addrs,
        audits,
        _pg: pg,
        lb,
    })
}

/// A fleet's config where `echo` asks, an approval waits a minute, and `more` follows.
fn asking_echo(more: &str) -> String {
    format!(
        "[permissions]\nmode = \"bypass\"\nask = [\"echo\"]\n\n\
         [server]\nstate-key-env = \"TOOLHOST_STATE_KEY\"\napproval-timeout-ms = 60000\n\n\
         [state]\nurl-env = \"TOOLHOST_STATE_URL\"\n\n[tasks]\nlease-ms = 2000\n\n{more}"
    )
}

/// `browser`'s POST of `body` to `path` with its CSRF token, and the browser back.
fn answer_as(browser: Browser, path: &str, body: &Value) -> (Browser, (u16, Value)) {
    let answered = browser.post(path, &[("X-CSRF-Token", browser.csrf.as_str())], body);
    (browser, answered)
}

/// A stateless 2026-07-28 request (declaring the tasks extension and form elicitation).
fn modern(addr: SocketAddr, method: &str, params: Value) -> Value {
    let capabilities =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}});
    modern_request(addr, method, params, capabilities, None)
}

fn status(addr: SocketAddr, id: &str) -> Value {
    modern(addr, "tasks/get", json!({"taskId": id}))["result"].clone()
}

fn audit_lines(path: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_fleet_shares_tasks_and_approvals_and_survives_a_killed_daemon() {
    let Some(mut f) = fleet("fleet") else { return };

    // A task created through the balancer is read through every daemon.
    let created = modern(
        f.lb.addr,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 200}}),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}\n{}", f.lb.log()))
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while status(f.addrs[0], &id)["status"] != "completed" {
        assert!(Instant::now() < deadline, "{}", status(f.addrs[0], &id));
        std::thread::sleep(Duration::from_millis(100));
    }
    for addr in &f.addrs {
        let seen = status(*addr, &id);
        assert_eq!(seen["status"], "completed", "{addr}: {seen}");
        assert_eq!(seen["result"]["isError"], false, "{addr}: {seen}");
    }

    // An approval asked by daemon 0 (inline: echo is no task, so the question comes back with a
    // sealed requestState) is accepted by daemon 1, and its replay is refused by daemon 2.
    let echo = |addr: SocketAddr, state: Option<&str>| {
        let mut params = json!({"name": "echo", "arguments": {"text": "approved"}});
        if let Some(s) = state {
            params["requestState"] = json!(s);
            params["inputResponses"] =
                json!({"approval": {"action": "accept", "content": {"approve": true}}});
        }
        modern(addr, "tools/call", params)
    };
    let asked = echo(f.addrs[0], None);
    let state = asked["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{asked}"))
        .to_owned();
    let answered = echo(f.addrs[1], Some(&state));
    assert_eq!(answered["result"]["isError"], false, "{answered}");
    let replayed = echo(f.addrs[2], Some(&state));
    assert!(
        replayed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already used")),
        "{replayed}"
    );

    // `remember` runs as a task here (hostile offers tasks), and the task asks: answer it with
    // tasks/update through another daemon than the one running it.
    let asked = modern(
        f.lb.addr,
        "tools/call",
        json!({"name": "remember", "arguments": {"value": "v"}}),
    );
    let remember = asked["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while status(f.addrs[2], &remember)["status"] != "input_required" {
        assert!(
            Instant::now() < deadline,
            "{}",
            status(f.addrs[2], &remember)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for addr in &f.addrs {
        let ack = modern(
            *addr,
            "tasks/update",
            json!({"taskId": remember, "inputResponses":
                {"approval": {"action": "accept", "content": {"approve": true}}}}),
        );
        if ack.get("error").is_none() {
            break;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let s = status(f.addrs[1], &remember);
        if s["status"] == "completed" {
            break s;
        }
        assert!(Instant::now() < deadline, "{s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["result"]["isError"], false, "{done}");

    // Legacy (initialize-era) sessions live in one daemon: through a balancer that pins the
    // Mcp-Session-Id, every request of a session reaches the daemon that created it.
    let sticky = Haproxy::start("fleet", &f.addrs, true).unwrap();
    sticky.wait_until_all_up();
    let mut session = HttpSession::open(sticky.addr, &[]).unwrap();
    for i in 0..6 {
        let answer = session.call("echo_input", json!({"n": i})).unwrap();
        assert_eq!(
            answer["result"]["isError"],
            false,
            "call {i}: {answer}\n{}",
            sticky.log()
        );
    }
    drop(sticky);

    // SIGKILL one daemon while tasks run on all three: each task still ends, with a reason.
    // CI runs 9; scripts/fleet-soak.sh many more (TOOLHOST_FLEET_TASKS).
    let count: usize = std::env::var("TOOLHOST_FLEET_TASKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(9);
    let mut ids = Vec::new();
    for _ in 0..count {
        let c = modern(
            f.lb.addr,
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 2500}}),
        );
        ids.push(
            c["result"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("{c}"))
                .to_owned(),
        );
    }
    // Kill once every task has begun on some daemon (or was answered at once, as busy).
    let begun = |id: &String| {
        f.audits.iter().any(|a| {
            audit_line_at(a, |l| l["event"] == "begin" && l["parent_id"] == json!(id)).is_some()
        }) || status(f.addrs[1], id)["status"] != "working"
    };
    wait_until("every task to begin", EVENT_WAIT, || ids.iter().all(begun));
    let victim = f.daemons[0].take().unwrap();
    victim.signal("KILL");
    drop(victim);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ended = Vec::new();
    for id in &ids {
        let s = loop {
            let s = status(f.addrs[1], id);
            if s["status"] == "completed" || s["status"] == "failed" {
                break s;
            }
            assert!(Instant::now() < deadline, "task {id} never ended: {s}");
            std::thread::sleep(Duration::from_millis(200));
        };
        if s["status"] == "failed" {
            assert!(
                s["statusMessage"]
                    .as_str()
                    .unwrap()
                    .contains("stopped before it finished"),
                "{s}"
            );
        }
        ended.push(s);
    }
    let failed = ended.iter().filter(|s| s["status"] == "failed").count();
    let busy = ended
        .iter()
        .filter(|s| s["result"]["_meta"]["toolhost/errorKind"] == "busy")
        .count();
    eprintln!(
        "fleet: {count} tasks; {failed} failed with the killed daemon, {busy} answered busy, \
         the rest completed"
    );
    assert!(
        (1..count).contains(&failed),
        "round robin put some tasks on the killed daemon: {ended:?}"
    );

    // Every accepted call left its audit line on the daemon that ran it: a begin line at least
    // (the killed daemon's calls), one end record for each finished one.
    let lines: Vec<Value> = f.audits.iter().flat_map(audit_lines).collect();
    for (id, s) in ids.iter().zip(&ended) {
        let mine: Vec<&Value> = lines
            .iter()
            .filter(|l| l["parent_id"] == json!(id))
            .collect();
        assert!(!mine.is_empty(), "task {id} has no audit line");
        let ends = mine.iter().filter(|l| l["event"] != "begin").count();
        if s["status"] == "completed" {
            assert_eq!(ends, 1, "task {id}: {mine:?}");
        }
    }
    let _ = &f.env;
}

/// What a call through the fleet came to: "ok" or its error kind.
fn outcome(answer: &Value) -> String {
    let result = &answer["result"];
    if result["isError"] == false {
        return "ok".into();
    }
    result["_meta"]["toolhost/errorKind"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

/// `n` calls of `name` through `addr` at once; what each came to.
fn at_once(addr: SocketAddr, n: usize, name: &str, arguments: Value) -> Vec<String> {
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let arguments = arguments.clone();
            let name = name.to_owned();
            std::thread::spawn(move || {
                outcome(&modern(
                    addr,
                    "tools/call",
                    json!({"name": name, "arguments": arguments}),
                ))
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn count(outcomes: &[String], kind: &str) -> usize {
    outcomes.iter().filter(|o| *o == kind).count()
}

#[test]
fn three_daemons_enforce_one_quota() {
    let config = r#"
[permissions]
mode = "bypass"

[server]
state-key-env = "TOOLHOST_STATE_KEY"

[state]
url-env = "TOOLHOST_STATE_URL"

[tasks]
lease-ms = 2000

[plugins.echo.tools.echo]
quota = { calls = 12, per-s = 3600 }

[plugins.hostile.tools.sleep]
quota = { in-flight = 2 }

[plugins.hostile.tools.spin]
quota = { fuel = 200000000, per-s = 3600 }

[plugins.hostile.limits]
timeout-ms = 60000
fuel = 100000000
"#;
    let Some(mut f) = fleet_with("fleet-quota", config) else {
        return;
    };

    // 12 calls an hour, fleet-wide: 36 at once through the balancer (12 reach each daemon, each
    // of which alone would admit all 12) start exactly 12.
    let echoes = at_once(f.lb.addr, 36, "echo", json!({"text": "x"}));
    assert_eq!(count(&echoes, "ok"), 12, "{echoes:?}\n{}", f.lb.log());
    assert_eq!(count(&echoes, "rate_limited"), 24, "{echoes:?}");
    // And the next, whichever daemon it reaches, says when to retry (about 5 minutes).
    for addr in &f.addrs {
        let more = modern(
            *addr,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        );
        assert_eq!(outcome(&more), "rate_limited", "{more}");
        let text = more["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("retry in 30") || text.contains("retry in 29"),
            "{text}"
        );
    }
    // Recorded on the daemon that refused each.
    let records: Vec<Value> = f.audits.iter().flat_map(audit_lines).collect();
    let limited = records
        .iter()
        .filter(|r| r["tool"] == "echo" && r["error_kind"] == "rate_limited")
        .count();
    assert_eq!(limited, 27, "{records:#?}");

    // Two calls' fuel an hour, fleet-wide: eight spins at once, each burning all it may, reserve
    // at admission, so two run on a whole limit and the rest on the crumbs the budget refilled
    // (or not at all), instead of eight on a whole limit.
    let spins = at_once(f.lb.addr, 8, "spin", json!({}));
    assert!(
        spins
            .iter()
            .all(|o| o == "out_of_fuel" || o == "rate_limited"),
        "{spins:?}"
    );
    let used: Vec<u64> = f
        .audits
        .iter()
        .flat_map(audit_lines)
        .filter(|r| r["tool"] == "spin" && r["event"] != "begin")
        .filter_map(|r| r["fuel_used"].as_u64())
        .collect();
    let total: u64 = used.iter().sum();
    assert!(total <= 200_000_000 + 200_000_000 / 360, "{used:?}");
    assert_eq!(
        used.iter().filter(|u| **u > 90_000_000).count(),
        2,
        "{used:?} {spins:?}"
    );

    // Two sleeps at once, fleet-wide: of six sent together, two run.
    let sleeps = at_once(f.lb.addr, 6, "sleep", json!({"ms": 1500}));
    assert_eq!(count(&sleeps, "ok"), 2, "{sleeps:?}");
    assert_eq!(count(&sleeps, "rate_limited"), 4, "{sleeps:?}");
    // Ended calls free their places.
    wait_until("two sleeps to run again", EVENT_WAIT, || {
        count(&at_once(f.lb.addr, 2, "sleep", json!({"ms": 50})), "ok") == 2
    });

    // A daemon keeps an ended call's place spare for a second (fleet.rs's HOLD): wait until every
    // daemon gave them back, so that each of the two long sleeps below finds one.
    std::thread::sleep(Duration::from_millis(1500));

    // A daemon killed while it runs a call frees its place once the fleet notices its silence.
    let (a0, a1, a2) = (f.addrs[0], f.addrs[1], f.addrs[2]);
    let long = json!({"name": "sleep", "arguments": {"ms": 8000}});
    let begun = |i: usize| {
        audit_lines(&f.audits[i])
            .iter()
            .filter(|l| l["event"] == "begin" && l["tool"] == "sleep")
            .count()
    };
    let before = [begun(0), begun(1)];
    let held = [a0, a1].map(|addr| {
        let long = long.clone();
        std::thread::spawn(move || modern(addr, "tools/call", long))
    });
    wait_until("both long sleeps to begin", EVENT_WAIT, || {
        begun(0) > before[0] && begun(1) > before[1]
    });
    let third = modern(
        a2,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 10}}),
    );
    assert_eq!(outcome(&third), "rate_limited", "{third}");
    let victim = f.daemons[0].take().unwrap();
    victim.signal("KILL");
    drop(victim);
    let freed = Instant::now();
    wait_until(
        "the killed daemon's place to be freed",
        Duration::from_secs(20),
        || {
            outcome(&modern(
                a2,
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": 10}}),
            )) == "ok"
        },
    );
    eprintln!(
        "fleet quota: a killed daemon's place freed after {:?}",
        freed.elapsed()
    );
    let [h0, h1] = held;
    let _ = h0.join();
    assert_eq!(outcome(&h1.join().unwrap()), "ok");
}

#[test]
fn a_question_asked_on_one_daemon_is_answered_once_in_anothers_console() {
    let config = asking_echo("[console]\napprovals = \"console\"\n");
    let Some(mut f) = fleet_with("fleet-questions", &config) else {
        return;
    };
    let (a, b) = (f.addrs[0], f.addrs[1]);
    let on_b = Browser::sign_in(f.daemons[1].as_ref().unwrap());
    let on_c = Browser::sign_in(f.daemons[2].as_ref().unwrap());
    let token_c = [("X-CSRF-Token", on_c.csrf.as_str())];

    // A client's call on daemon A asks; daemon C's console lists the question, naming A.
    let client = std::thread::spawn(move || batch(a, "echo", json!({"text": "from A"})));
    let question = on_c.waiting();
    assert_eq!(question["tool"], "echo", "{question}");
    assert_eq!(question["input"]["text"], "from A");
    assert!(
        question["daemon"].is_string(),
        "names its daemon: {question}"
    );
    let path = format!(
        "/console/api/approvals/{}",
        question["id"].as_str().unwrap()
    );
    let approve = json!({"answer": "approve", "input_sha256": question["input_sha256"]});

    // Bound to the input shown: another digest is refused and answers nothing.
    let other = json!({"answer": "approve", "input_sha256": "0".repeat(64)});
    assert_eq!(on_c.post(&path, &token_c, &other).0, 409);
    assert_eq!(
        on_b.waiting()["id"],
        question["id"],
        "still waiting, also on B"
    );

    // Two operators answer at once, on C (approve) and on B (deny): exactly one answer wins
    // fleet-wide, the other is 409; the winner wakes the call on A at once.
    let answered = Instant::now();
    let deny = json!({"answer": "deny", "input_sha256": question["input_sha256"]});
    let (c_path, b_path) = (path.clone(), path.clone());
    let from_c = std::thread::spawn(move || answer_as(on_c, &c_path, &approve));
    let from_b = std::thread::spawn(move || answer_as(on_b, &b_path, &deny));
    let (on_c, (c_status, c_body)) = from_c.join().unwrap();
    let (on_b, (b_status, b_body)) = from_b.join().unwrap();
    let token_c = [("X-CSRF-Token", on_c.csrf.as_str())];
    let mut statuses = [c_status, b_status];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "one answer wins: {c_body} / {b_body}");
    let approved = c_status == 200;
    let reply = client.join().unwrap();
    assert!(
        answered.elapsed() < Duration::from_secs(5),
        "woken by the notice, not a poll: {:?}",
        answered.elapsed()
    );
    if approved {
        assert_eq!(reply["content"][0]["content"], "from A", "{reply}");
    } else {
        assert_eq!(reply["content"][0]["is_error"], true, "{reply}");
    }
    let record = audit_lines(&f.audits[0])
        .into_iter()
        .find(|r| r["tool"] == "echo" && r["event"] != "begin")
        .expect("A recorded the call");
    assert_eq!(record["decision"]["answer"], approved, "{record}");
    assert_eq!(record["decision"]["operator"], "local operator", "{record}");
    wait_until("the question to leave every console", EVENT_WAIT, || {
        on_b.listed().is_empty() && on_c.listed().is_empty()
    });

    // A daemon killed while its call waits has its question withdrawn everywhere within the
    // heartbeat's lease.
    let _abandoned = std::thread::spawn(move || batch(b, "echo", json!({"text": "from B"})));
    let question = on_c.waiting();
    assert_eq!(question["input"]["text"], "from B");
    f.daemons[1].take().unwrap().signal("KILL");
    let killed = Instant::now();
    wait_until(
        "the dead daemon's question to be withdrawn",
        Duration::from_secs(20),
        || on_c.listed().is_empty(),
    );
    eprintln!(
        "fleet questions: a killed daemon's question withdrawn after {:?}",
        killed.elapsed()
    );
    let path = format!(
        "/console/api/approvals/{}",
        question["id"].as_str().unwrap()
    );
    let approve = json!({"answer": "approve", "input_sha256": question["input_sha256"]});
    assert_eq!(
        on_c.post(&path, &token_c, &approve).0,
        409,
        "withdrawn, not open"
    );
}
