//! A real Prometheus (Debian's package) scrapes the daemon's `/metrics`: the exposition parses, the
//! target is up, and the counters say what the calls did.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Conn, Daemon, http};
use crate::harness::Env;

struct Prometheus {
    child: Child,
    addr: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free a moment ago (Prometheus cannot report a port it picked itself).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A query's answer; `Null` while Prometheus is still starting.
fn query(p: &Prometheus, q: &str) -> Value {
    let path = format!("/api/v1/query?query={}", q.replace(' ', "%20"));
    let Ok(mut conn) = Conn::open(p.addr) else {
        return Value::Null;
    };
    conn.send("GET", &path, &[("Connection", "close")], b"")
        .ok()
        .and_then(|r| serde_json::from_slice(&r.body).ok())
        .unwrap_or(Value::Null)
}

#[test]
fn prometheus_scrapes_the_metrics_and_reads_the_calls() {
    let Some(bin) = crate::harness::service("prometheus", "prometheus_scrapes_the_metrics") else {
        return;
    };
    let env = Env::new(&["echo"], "");
    let mut d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let target = d.http.unwrap();
    d.call("echo", json!({"text": "one"})).assert_ok();
    d.call("echo", json!({"text": "two"})).assert_ok();
    d.call("echo", json!({}))
        .assert_error("invalid_input", "text");

    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: toolhost\n    \
         static_configs:\n      - targets: ['{target}']\n"
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new(bin)
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let p = Prometheus {
        child,
        addr,
        _dir: dir,
    };
    // Wait for a scrape that saw the three calls.
    let started = Instant::now();
    let total = loop {
        let answer = query(&p, "sum(toolhost_calls_total)");
        if let Some(v) = answer["data"]["result"][0]["value"][1].as_str()
            && v == "3"
        {
            break answer;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus never saw 3 calls: {answer}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(total["status"], "success");
    let up = query(&p, "up{job=\"toolhost\"}");
    assert_eq!(up["data"]["result"][0]["value"][1], "1", "{up}");
    let errors = query(&p, "sum(toolhost_call_errors_total)");
    assert_eq!(errors["data"]["result"][0]["value"][1], "1", "{errors}");
    // The target's last scrape had no error: every line of the exposition parsed.
    let targets = http(p.addr, "GET", "/api/v1/targets", &[], b"");
    let targets: Value = serde_json::from_slice(&targets.body).unwrap();
    let active = &targets["data"]["activeTargets"][0];
    assert_eq!(active["health"], "up", "{active}");
    assert_eq!(active["lastError"], "", "{active}");
    assert!(d.stop().success());
}
