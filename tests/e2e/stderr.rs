//! The daemon's stderr as people use it: piped into `grep -m1` or `head`, whose reader goes away,
//! or into a reader that stops reading. Neither may stop the daemon: calls keep being answered,
//! `/metrics` counts the dropped lines, and SIGTERM ends it within a second.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::daemon::{http, modern_request};
use crate::harness::{EVENT_WAIT, Env, wait_until};

/// `toolhost serve --http` with stderr a pipe, read until the line that names the address. A
/// daemon that never names it is killed after a minute: the test fails rather than hangs.
fn serve(env: &Env, log: &str) -> (Child, BufReader<ChildStderr>, SocketAddr) {
    let mut child = env
        .command(&["serve", "--no-watch", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_LOG", log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let (found, named) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(at) = line.find("at http://") {
                let addr: SocketAddr = line[at + 10..].split('/').next().unwrap().parse().unwrap();
                let _ = found.send((err, addr));
                return;
            }
        }
    });
    match named.recv_timeout(Duration::from_secs(60)) {
        Ok((err, addr)) => (child, err, addr),
        Err(_) => {
            let _ = child.kill();
            panic!("the daemon never named its address on stderr");
        }
    }
}

fn echo(addr: SocketAddr, text: &str) {
    let answer = modern_request(
        addr,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
        json!({}),
        None,
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(answer.to_string().contains(text), "{answer}");
}

fn ready(addr: SocketAddr) {
    wait_until("/ready to answer 200", EVENT_WAIT * 3, || {
        http(addr, "GET", "/ready", &[], b"").status == 200
    });
}

fn dropped(addr: SocketAddr) -> u64 {
    let text = http(addr, "GET", "/metrics", &[], b"").text();
    text.lines()
        .find_map(|l| l.strip_prefix("toolhost_log_lines_dropped_total "))
        .unwrap_or_else(|| panic!("no dropped-lines counter in /metrics:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// SIGTERM, then the exit within a second.
fn terminate(child: &mut Child) {
    let termed = Instant::now();
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        if termed.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("still running 5 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = termed.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after SIGTERM"
    );
}

#[test]
fn a_log_reader_that_went_away_stops_nothing() {
    let env = Env::new(&["echo"], "[permissions]\nmode = \"bypass\"\n");
    // What `toolhost serve 2>&1 | grep -m1 signin` leaves: the reader gone after its line.
    let (mut child, err, addr) = serve(&env, "debug");
    drop(err);
    ready(addr);
    for i in 0..20 {
        echo(addr, &format!("after the reader left {i}"));
    }
    assert!(dropped(addr) > 0, "nothing counted as dropped");
    terminate(&mut child);
    assert_eq!(env.audit().len(), 20, "{:?}", env.audit());
}

#[test]
fn a_log_reader_that_stops_reading_stops_nothing_and_hears_of_the_drops_later() {
    let env = Env::new(&["echo"], "[permissions]\nmode = \"bypass\"\n");
    // A reader that holds the pipe open and reads nothing: at trace, a few hundred calls write far
    // more than the pipe's 64 KiB.
    let (mut child, mut err, addr) = serve(&env, "trace");
    ready(addr);
    let text = "x".repeat(2000);
    for _ in 0..300 {
        echo(addr, &text);
    }
    let lost = dropped(addr);
    assert!(lost > 0, "nothing counted as dropped");
    // The reader comes back: once the pipe has room, the log says what it lost.
    let read = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = read.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while err.read_line(&mut line).unwrap_or(0) > 0 {
            kept.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    let heard = crate::harness::poll(EVENT_WAIT, || {
        // Something to log, for a log whose pipe has room again.
        echo(addr, "again");
        read.lock()
            .unwrap()
            .contains("log line(s) dropped")
            .then_some(())
    })
    .is_some();
    assert!(heard, "no line said how many were dropped");
    terminate(&mut child);
}
