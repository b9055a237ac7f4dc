//! A real Prometheus (Debian's package) scrapes the daemon's `/metrics`: the exposition parses, the
//! target is up, and the counters say what the calls did.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Conn, Daemon, MCP_HEADERS, http};
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

impl Prometheus {
    /// Prometheus on a free loopback port with `config` as prometheus.yml, and `files` (name,
    /// contents) beside it.
    fn start(bin: &std::path::Path, config: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let config = config.replace("{dir}", &dir.path().display().to_string());
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
        Self {
            child,
            addr,
            _dir: dir,
        }
    }

    /// The targets Prometheus is scraping, as `/api/v1/targets` lists them (none while it starts).
    fn targets(&self) -> Vec<Value> {
        let Ok(mut conn) = Conn::open(self.addr) else {
            return Vec::new();
        };
        let targets = conn
            .send("GET", "/api/v1/targets", &[("Connection", "close")], b"")
            .ok()
            .and_then(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .unwrap_or(Value::Null);
        targets["data"]["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
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

    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: toolhost\n    \
         static_configs:\n      - targets: ['{target}']\n"
    );
    let p = Prometheus::start(&bin, &config, &[]);
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
    let active = &p.targets()[0];
    assert_eq!(active["health"], "up", "{active}");
    assert_eq!(active["lastError"], "", "{active}");
    assert!(d.stop().success());
}

/// Each replica of a fleet scraped by its own address, as `deploy/prometheus/scrape-fleet.yaml`
/// scrapes pods by IP: a range in `server.allowed-hosts` admits the IP literal Prometheus sends as
/// `Host`, so each replica's counters arrive as its own series. A replica without the range refuses
/// the same scrape (403), as a pod IP is refused by default.
#[test]
fn prometheus_scrapes_each_replica_by_its_address_when_a_range_allows_it() {
    let Some(bin) = crate::harness::service("prometheus", "prometheus_scrapes_each_replica") else {
        return;
    };
    let token = [("TOOLHOST_E2E_TOKEN", "scrape-token-5d1e")];
    let ranged =
        "[server]\nallowed-hosts = [\"127.0.0.0/8\"]\ntoken-env = \"TOOLHOST_E2E_TOKEN\"\n";
    // Loopback addresses other than 127.0.0.1, which the guard does not allow by itself: like pod
    // IPs, they pass only through the range.
    let mut replicas = Vec::new();
    for (addr, config) in [
        ("127.0.0.2:0", ranged),
        ("127.0.0.3:0", ranged),
        (
            "127.0.0.4:0",
            "[server]\ntoken-env = \"TOOLHOST_E2E_TOKEN\"\n",
        ),
    ] {
        let env = Env::new(&["echo"], config);
        let d = Daemon::start_env(&env, &["--no-watch", "--http", addr], &token);
        replicas.push((env, d));
    }
    for (i, (_, d)) in replicas.iter_mut().enumerate() {
        for n in 0..=i {
            d.call("echo", json!({ "text": format!("{n}") }))
                .assert_ok();
        }
    }
    let targets: Vec<String> = replicas
        .iter()
        .map(|(_, d)| format!("'{}'", d.http.unwrap()))
        .collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: toolhost-pods\n    \
         authorization:\n      type: Bearer\n      credentials_file: {{dir}}/TOOLHOST_TOKEN\n    \
         static_configs:\n      - targets: [{}]\n",
        targets.join(", ")
    );
    let p = Prometheus::start(&bin, &config, &[("TOOLHOST_TOKEN", token[0].1)]);
    let started = Instant::now();
    let calls = loop {
        let answer = query(&p, "sum by (instance) (toolhost_calls_total)");
        let mut by_instance: Vec<(String, String)> = answer["data"]["result"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let instance = r["metric"]["instance"].as_str().unwrap_or_default();
                let value = r["value"][1].as_str().unwrap_or_default();
                (instance.to_string(), value.to_string())
            })
            .collect();
        by_instance.sort();
        let refused = p.targets().iter().any(|t| {
            t["health"] == "down" && t["lastError"].as_str().is_some_and(|e| e.contains("403"))
        });
        if by_instance.len() == 2 && refused {
            break by_instance;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus never saw both ranged replicas and the refusal: {answer} {:?}",
            p.targets()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let expected: Vec<(String, String)> = replicas[..2]
        .iter()
        .zip(["1", "2"])
        .map(|((_, d), n)| (d.http.unwrap().to_string(), n.to_string()))
        .collect();
    assert_eq!(calls, expected, "each replica's own counter");
    let refused = p
        .targets()
        .into_iter()
        .find(|t| t["health"] == "down")
        .unwrap();
    assert_eq!(
        refused["labels"]["instance"],
        replicas[2].1.http.unwrap().to_string(),
        "{refused}"
    );
    // The range admits the address on every route, `/mcp` included (rmcp's own Host list cannot
    // hold a range: the guard in front of it decides alone).
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let bearer = format!("Bearer {}", token[0].1);
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Authorization", &bearer));
    for (i, status) in [(0, 200), (2, 403)] {
        let reply = http(replicas[i].1.http.unwrap(), "POST", "/mcp", &headers, init);
        assert_eq!(reply.status, status, "replica {i}: {}", reply.text());
    }
    for (_, d) in replicas {
        assert!(d.stop().success());
    }
}
