//! Request bodies are read under `server.read-timeout-ms` on every HTTP route, through the real
//! daemon on 127.0.0.1: clients that send a body a byte at a time are answered 408 and cut off, and
//! `/health` and the batch API keep answering while several of them are connected.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Daemon, http};
use crate::harness::Env;

/// Send `head` (announcing a body of 10,000 bytes), then one body byte every 250 ms until the daemon
/// answers. Returns the answer and how long it took.
fn trickle(addr: SocketAddr, head: String) -> (String, Duration) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(250)))
        .unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    while started.elapsed() < Duration::from_secs(30) {
        // Stop writing once the answer has begun: writing to a closed socket would reset it.
        if answer.is_empty() && s.write_all(b"x").is_err() {
            break;
        }
        let mut buf = [0u8; 4096];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn trickled_bodies_are_cut_off_on_every_route_while_health_answers() {
    let env = Env::new(
        &["echo"],
        "[permissions]\nmode = \"bypass\"\n[server]\nread-timeout-ms = 1500\n",
    );
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let routes = [
        ("POST", "/v1/tool-calls", "application/json"),
        ("POST", "/v1/tool-calls?stream=ndjson", "application/json"),
        ("GET", "/v1/tools?format=anthropic", "application/json"),
        ("POST", "/mcp", "application/json"),
        ("POST", "/mcp", "text/plain"),
        ("GET", "/health", "application/json"),
    ];
    let slow: Vec<_> = routes
        .iter()
        .map(|(method, path, content_type)| {
            let head = format!(
                "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: 10000\r\n\r\n"
            );
            std::thread::spawn(move || trickle(addr, head))
        })
        .collect();

    // While they trickle, the daemon answers others promptly.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1200) {
        let t = Instant::now();
        let health = http(addr, "GET", "/health", &[], b"");
        assert_eq!(health.status, 200, "{}", health.text());
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        // A sleep on purpose: the probes' pace over the trickling window, not a wait for an event.
        std::thread::sleep(Duration::from_millis(100));
    }

    for ((method, path, _), t) in routes.iter().zip(slow) {
        let (answer, took) = t.join().unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "{method} {path}: {answer:?}"
        );
        assert!(
            answer.contains("did not arrive within 1500 ms (server.read-timeout-ms)"),
            "{method} {path}: {answer:?}"
        );
        assert!(took < Duration::from_secs(5), "{method} {path}: {took:?}");
    }

    // A body sent at once is read as before.
    let message = json!({
        "role": "assistant",
        "content": [{ "type": "tool_use", "id": "t1", "name": "echo", "input": { "text": "on time" } }]
    });
    let reply = http(
        addr,
        "POST",
        "/v1/tool-calls",
        &[("Content-Type", "application/json")],
        message.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer: Value = serde_json::from_slice(&reply.body).unwrap();
    assert!(answer.to_string().contains("on time"), "{answer}");
    assert!(d.stop().success());
}
