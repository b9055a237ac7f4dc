//! Three daemons with one config, sharing a real PostgreSQL, behind a real HAProxy: 2026-07-28
//! clients need no stickiness; `initialize`-era sessions work through a balancer that pins them. A task created through one daemon is read through another; an
//! approval's `requestState` sealed by one is accepted by another (and only once, fleet-wide);
//! a daemon killed with SIGKILL mid-load leaves no task silently `working` and no call without its
//! audit line. Small on purpose (CI); `scripts/fleet-soak.sh` runs the bigger version.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

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
    let pg = Postgres::start(test)?;
    crate::harness::service("haproxy", test)?;
    let env = Env::new(&["hostile", "echo"], &config());
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
