//! An identity provider is untrusted for size: every answer toolhost reads from it is bounded. Here
//! a provider answers every request with an endless body, and the unauthenticated
//! `GET /console/login` (which fetches its metadata) must answer at once with an error, the daemon's
//! memory staying where it was.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, http};
use crate::harness::Env;

/// A provider on loopback that answers each request with up to 256 MiB of chunked JSON-ish bytes.
fn endless_provider() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = conn.read(&mut request);
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                      transfer-encoding: chunked\r\n\r\n",
                );
                let chunk = vec![b' '; 1 << 16];
                let framed =
                    [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
                for _ in 0..(256 << 20) / chunk.len() {
                    if conn.write_all(&framed).is_err() {
                        return;
                    }
                }
                let _ = conn.write_all(b"0\r\n\r\n");
            });
        }
    });
    url
}

/// The daemon's peak resident memory, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn the_console_login_reads_a_bounded_answer_from_the_identity_provider() {
    let issuer = endless_provider();
    let config = format!(
        "[auth]\nissuer = \"{issuer}\"\naudience = \"https://tools.test/mcp\"\n\
         [console]\nclient-id = \"toolhost-console\"\n"
    );
    let env = Env::new(&["echo"], &config);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let addr = daemon.http_addr();
    let before = peak_kib(daemon.pid());
    let asked = Instant::now();
    let login = http(addr, "GET", "/console/login", &[], b"");
    let took = asked.elapsed();
    assert!(
        login.status >= 400,
        "{} {}",
        login.status,
        String::from_utf8_lossy(&login.body)
    );
    assert!(
        String::from_utf8_lossy(&login.body).contains("larger than"),
        "{}",
        String::from_utf8_lossy(&login.body)
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let grew = peak_kib(daemon.pid()).saturating_sub(before);
    assert!(
        grew < 32 << 10,
        "the daemon's peak memory grew by {grew} KiB"
    );
}
