//! Outgoing HTTP through the real binary and the `fetch` and `github` example plugins, against HTTP
//! servers this file starts on 127.0.0.1 (granted with `allow-private`): allowlist, address checks,
//! redirects, size and time limits, grants at load time, secrets. No traffic leaves 127.0.0.1: every
//! other destination used here is refused before any lookup or connection. The guest (and so the
//! model) gets the `wasi:http` error code, which `fetch` prints by name; the daemon's log says why.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Called, Env};

const BYPASS: &str = "[permissions]\nmode = \"bypass\"\n";
const TOKEN: &str = "tok-3f9a7c1e-only-for-server-a";

/// One request a test server received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    /// When its head was read.
    pub(crate) at: Instant,
}

/// A tiny HTTP/1.1 server on 127.0.0.1 with fixed routes; it records every request.
pub(crate) struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, port, &log);
                });
            }
        });
        Self { port, seen }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, port: u16, log: &Mutex<Vec<Seen>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        headers: headers.clone(),
        at: Instant::now(),
    });
    let mut out = stream;
    let respond = |out: &mut TcpStream, status: &str, ctype: &str, extra: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
            body.len()
        );
        out.write_all(head.as_bytes())?;
        out.write_all(body)
    };
    let route = path.split('?').next().unwrap_or_default();
    match route {
        "/hello" => respond(
            &mut out,
            "200 OK",
            "text/plain",
            "",
            b"hello from the test server",
        ),
        "/headers" => {
            let text: String = headers.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
            respond(&mut out, "200 OK", "text/plain", "", text.as_bytes())
        }
        "/redirect" => {
            let to = path.split_once("to=").map(|(_, t)| t).unwrap_or("/hello");
            respond(
                &mut out,
                "302 Found",
                "text/plain",
                &format!("location: {to}\r\n"),
                b"",
            )
        }
        "/big" => respond(&mut out, "200 OK", "text/plain", "", &vec![b'x'; 100_000]),
        "/big-chunked" => {
            out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")?;
            for _ in 0..100 {
                out.write_all(format!("{:x}\r\n", 1000).as_bytes())?;
                out.write_all(&[b'y'; 1000])?;
                out.write_all(b"\r\n")?;
            }
            out.write_all(b"0\r\n\r\n")
        }
        "/slow" => {
            // A sleep on purpose: a server that stalls, for the plugin's request timeout.
            std::thread::sleep(Duration::from_secs(5));
            respond(&mut out, "200 OK", "text/plain", "", b"too late")
        }
        "/slow-body" => {
            out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000\r\nconnection: close\r\n\r\nstarted...")?;
            out.flush()?;
            // A sleep on purpose: a body that stalls midway, for the plugin's read timeout.
            std::thread::sleep(Duration::from_secs(5));
            out.write_all(&[b'z'; 990])
        }
        "/delay" => {
            // A sleep on purpose: an answer that takes `ms`, to show requests waiting together.
            let ms = path
                .split_once("ms=")
                .map_or(0, |(_, ms)| ms.parse().unwrap_or(0));
            std::thread::sleep(Duration::from_millis(ms));
            respond(
                &mut out,
                "200 OK",
                "text/plain",
                "",
                format!("waited {ms} ms").as_bytes(),
            )
        }
        "/image" => respond(&mut out, "200 OK", "image/png", "", b"\x89PNG\r\n\x1a\n"),
        "/repos/octo/hello" => {
            let body = json!({
                "full_name": "octo/hello", "description": "A test repository", "html_url": "https://github.com/octo/hello",
                "stargazers_count": 42, "forks_count": 7, "open_issues_count": 3, "language": "Rust",
                "license": { "spdx_id": "Apache-2.0" }, "default_branch": "main", "archived": false,
                "pushed_at": "2026-01-02T03:04:05Z", "port": port
            });
            respond(
                &mut out,
                "200 OK",
                "application/json",
                "",
                body.to_string().as_bytes(),
            )
        }
        _ => respond(
            &mut out,
            "404 Not Found",
            "application/json",
            "",
            br#"{"message":"Not Found"}"#,
        ),
    }?;
    // Drain what the client may still send, so closing does not reset the connection early.
    let _ = out.shutdown(std::net::Shutdown::Write);
    let _ = reader.read_to_end(&mut Vec::new());
    Ok(())
}

/// A `fetch` workspace whose grant allows `allow` (TOML array items) with extra network settings.
fn fetch_env(allow: &[String], extra: &str) -> Env {
    granted_env("fetch", allow, extra)
}

/// A workspace with `plugin` alone, granted network to `allow` with extra network settings.
fn granted_env(plugin: &str, allow: &[String], extra: &str) -> Env {
    let allow: Vec<String> = allow.iter().map(|a| format!("{a:?}")).collect();
    Env::new(
        &[plugin],
        &format!(
            "{BYPASS}[plugins.{plugin}.network]\nallow = [{}]\n{extra}",
            allow.join(", ")
        ),
    )
}

fn fetch(env: &Env, url: &str) -> Called {
    env.call("fetch", json!({ "url": url }))
}

/// `fetch` prints the code the guest got by its `wasi:http` name (wasip2's `Debug`).
const DENIED: &str = "ErrorCode::HttpRequestDenied";
const IP_PROHIBITED: &str = "ErrorCode::DestinationIpProhibited";

/// The guest got `code`; the log names the plugin and says why, containing `needle`, and so does
/// the result the model reads.
#[track_caller]
fn assert_refused(r: &Called, code: &str, needle: &str) {
    r.assert_error("tool_failed", code);
    r.assert_error("tool_failed", "toolhost refused or could not complete");
    r.assert_error("tool_failed", needle);
    assert!(
        r.stderr.contains("outgoing request refused: ")
            && r.stderr.contains("fetch")
            && r.stderr.contains(needle),
        "{needle:?} not in the log:\n{}",
        r.stderr
    );
}

#[track_caller]
fn assert_denied(r: &Called, needle: &str) {
    assert_refused(r, DENIED, needle);
    assert!(
        r.stderr.contains("denied by the network policy"),
        "{}",
        r.stderr
    );
}

/// The guest got `code`; the log says why the request failed, containing `needle`, and so does the
/// result the model reads.
#[track_caller]
fn assert_failed(r: &Called, code: &str, needle: &str) {
    r.assert_error("tool_failed", code);
    r.assert_error("tool_failed", needle);
    assert!(
        r.stderr.contains("outgoing request failed") && r.stderr.contains(needle),
        "{needle:?} not in the log:\n{}",
        r.stderr
    );
}

#[test]
fn fetches_from_an_allowed_server() {
    let a = Server::start();
    let env = fetch_env(&[a.origin()], "allow-private = true\n");
    let r = fetch(&env, &a.url("/hello"));
    r.assert_ok();
    assert_eq!(r.content(), "hello from the test server");
    assert_eq!(r.json["structured"]["status"], 200);
    assert_eq!(a.requests().len(), 1);
    // A redirect within the allowlist is followed; each hop goes through the host's checks.
    let r = fetch(&env, &a.url("/redirect?to=/hello"));
    r.assert_ok();
    assert_eq!(r.content(), "hello from the test server");
}

#[test]
fn refuses_another_host_port_or_scheme() {
    let a = Server::start();
    let b = Server::start();
    let env = fetch_env(&[a.origin()], "allow-private = true\n");
    let port = a.port;
    assert_denied(
        &fetch(&env, &b.url("/hello")),
        &format!(
            "http://127.0.0.1:{} is not in this plugin's allowlist",
            b.port
        ),
    );
    assert_denied(
        &fetch(&env, &format!("https://127.0.0.1:{port}/hello")),
        "is not in this plugin's allowlist",
    );
    assert_denied(
        &fetch(&env, &format!("http://localhost:{port}/hello")),
        "http://localhost:",
    );
    // Refused before any lookup: nothing leaves this machine.
    assert_denied(
        &fetch(&env, "http://example.com/"),
        "http://example.com:80 is not in this plugin's allowlist",
    );
    assert!(
        a.requests().is_empty() && b.requests().is_empty(),
        "a refused request reached a server"
    );
}

#[test]
fn refuses_a_redirect_to_a_denied_host() {
    let a = Server::start();
    let b = Server::start();
    let env = fetch_env(&[a.origin()], "allow-private = true\n");
    let r = fetch(&env, &a.url(&format!("/redirect?to={}", b.url("/hello"))));
    assert_denied(
        &r,
        &format!("127.0.0.1:{} is not in this plugin's allowlist", b.port),
    );
    assert_eq!(a.requests().len(), 1);
    assert!(
        b.requests().is_empty(),
        "the redirect reached the denied server"
    );
}

#[test]
fn refuses_names_and_addresses_that_are_private_without_allow_private() {
    let a = Server::start();
    // An allowed name that resolves to loopback, and an allowed loopback literal: both refused.
    let env = fetch_env(&[format!("http://localhost:{}", a.port), a.origin()], "");
    let r = fetch(&env, &format!("http://localhost:{}/hello", a.port));
    assert_refused(
        &r,
        IP_PROHIBITED,
        "a loopback address; private addresses are refused unless the grant sets `allow-private = true`",
    );
    let r = fetch(&env, &a.url("/hello"));
    assert_refused(
        &r,
        IP_PROHIBITED,
        "resolves to 127.0.0.1, a loopback address",
    );
    // Metadata endpoints stay closed even with allow-private; refused before connecting.
    let env = fetch_env(&["http://169.254.169.254".into()], "allow-private = true\n");
    assert_refused(
        &fetch(&env, "http://169.254.169.254/latest/meta-data/"),
        IP_PROHIBITED,
        "cloud metadata endpoint; such addresses are always refused",
    );
    assert!(
        a.requests().is_empty(),
        "a refused request reached the server"
    );
}

#[test]
fn refuses_oversized_responses() {
    let a = Server::start();
    let env = fetch_env(&[a.origin()], "allow-private = true\nmax-response-kb = 4\n");
    assert_failed(
        &fetch(&env, &a.url("/big")),
        "ErrorCode::HttpResponseBodySize(Some(100000))",
        "larger than the limit of 4096 bytes: it declares 100000 bytes",
    );
    // Cut while the guest reads: wasi:http 0.2 hands a body error over as text, not as a code.
    assert_failed(
        &fetch(&env, &a.url("/big-chunked")),
        "HTTP response body size exceeds limit",
        "larger than the limit of 4096 bytes",
    );
    fetch(&env, &a.url("/hello")).assert_ok();
}

#[test]
fn gives_up_on_a_slow_server() {
    let a = Server::start();
    let env = fetch_env(
        &[a.origin()],
        "allow-private = true\nrequest-timeout-ms = 500\n",
    );
    let started = Instant::now();
    assert_failed(
        &fetch(&env, &a.url("/slow")),
        "ErrorCode::ConnectionReadTimeout",
        "timed out after 500 ms",
    );
    assert_failed(
        &fetch(&env, &a.url("/slow-body")),
        "connection read timeout",
        "timed out after 500 ms",
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn refuses_binary_content_and_reports_http_errors() {
    let a = Server::start();
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let env = fetch_env(&[a.origin(), closed.clone()], "allow-private = true\n");
    fetch(&env, &a.url("/image")).assert_error("tool_failed", "image/png, which is not text");
    fetch(&env, &a.url("/nothing")).assert_error("tool_failed", "answered HTTP 404");
    assert_failed(
        &fetch(&env, &format!("{closed}/")),
        "ErrorCode::ConnectionRefused",
        &format!("cannot connect to {closed}"),
    );
}

#[test]
fn a_plugin_without_the_grant_loads_and_each_request_is_refused_by_name() {
    let a = Server::start();
    let env = Env::new(&["fetch", "echo"], BYPASS);
    let out = env.run(&["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["plugins"]["fetch"]["status"], "loaded", "{list}");
    // Each request fails with the reason, names the plugin, and never reaches the server.
    for _ in 0..2 {
        let r = fetch(&env, &a.url("/hello"));
        assert_refused(&r, DENIED, "network is not granted to plugin fetch");
        let audit = env.audit();
        let record = audit.last().unwrap();
        assert_eq!(record["tool"], "fetch", "{record}");
        assert_eq!(record["outcome"], "error", "{record}");
        assert_eq!(record["error_kind"], "tool_failed", "{record}");
    }
    assert!(a.requests().is_empty(), "{:?}", a.requests());
    env.call("echo", json!({ "text": "still fine" }))
        .assert_ok();
    // A network grant never links raw sockets.
    let env = Env::new(
        &["net_import"],
        &format!("{BYPASS}[plugins.net_import.network]\nallow = [\"http://127.0.0.1:1\"]\n"),
    );
    let out = env.run(&["list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reason = list["plugins"]["net_import"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(reason.contains("wasi:sockets"), "{}", list["plugins"]);
}

#[test]
fn secret_headers_go_to_their_destination_only_and_are_redacted() {
    let a = Server::start();
    let b = Server::start();
    let config = format!(
        "{BYPASS}[plugins.fetch.network]\nallow = [\"{}\", \"{}\"]\nallow-private = true\n\
         [plugins.fetch.secrets.api]\nfrom-file = \"token.txt\"\nheader = \"Authorization\"\n\
         format = \"Bearer {{secret}}\"\ndestinations = [\"{}\"]\n\
         [audit]\ninclude-input = true\n",
        a.origin(),
        b.origin(),
        a.origin()
    );
    let env = Env::new(&["fetch"], &config);
    std::fs::write(env.path().join("token.txt"), format!("{TOKEN}\n")).unwrap();

    let mut cmd = env.command(&[
        "call",
        "fetch",
        "--input",
        &json!({ "url": a.url("/headers") }).to_string(),
        "--json",
    ]);
    let out = cmd.env("TOOLHOST_LOG", "debug").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The server got the header; the result, the logs and the audit never show the value.
    let sent = &a.requests()[0];
    assert!(
        sent.headers
            .contains(&("authorization".into(), format!("Bearer {TOKEN}"))),
        "{sent:?}"
    );
    assert!(
        stdout.contains("authorization: Bearer [redacted]"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "the secret leaked:\n{stdout}\n{stderr}"
    );

    let r = fetch(&env, &b.url("/headers"));
    r.assert_ok();
    let sent = &b.requests()[0];
    assert!(
        sent.headers.iter().all(|(k, _)| k != "authorization"),
        "the secret went to another destination: {sent:?}"
    );
    let audit = std::fs::read_to_string(env.path().join(".toolhost/audit.jsonl")).unwrap();
    let ended = audit.lines().filter(|l| !l.contains(r#""event":"begin""#));
    assert_eq!(ended.count(), 2);
    assert!(!audit.contains(TOKEN), "{audit}");
}

#[test]
fn secrets_as_env_vars_are_redacted_from_results() {
    // The harness sets TOOLHOST_SECRET_CANARY=canary-4711 in the daemon's environment.
    let env = Env::new(
        &["hostile"],
        &format!(
            "{BYPASS}[plugins.hostile.secrets.canary]\nfrom-env = \"TOOLHOST_SECRET_CANARY\"\nenv = \"API_TOKEN\"\n"
        ),
    );
    let r = env.call("env", json!({}));
    r.assert_ok();
    assert!(
        r.content().contains("API_TOKEN") && r.content().contains("[redacted]"),
        "{}",
        r.content()
    );
    assert!(!r.content().contains("canary-4711"), "{}", r.content());
}

#[test]
fn github_repo_returns_structured_output_with_the_host_added_token() {
    let a = Server::start();
    let config = format!(
        "{BYPASS}[plugins.github]\nenv = {{ GITHUB_API_URL = \"{0}\" }}\n\
         [plugins.github.network]\nallow = [\"{0}\"]\nallow-private = true\n\
         [plugins.github.secrets.token]\nfrom-file = \"token.txt\"\nheader = \"Authorization\"\n\
         format = \"Bearer {{secret}}\"\ndestinations = [\"{0}\"]\n",
        a.origin()
    );
    let env = Env::new(&["github"], &config);
    std::fs::write(env.path().join("token.txt"), TOKEN).unwrap();
    let r = env.call("github_repo", json!({ "owner": "octo", "repo": "hello" }));
    r.assert_ok();
    let s = &r.json["structured"];
    assert_eq!(s["full_name"], "octo/hello");
    assert_eq!(s["stars"], 42);
    assert_eq!(s["license"], "Apache-2.0");
    assert!(r.content().contains("42 stars"), "{}", r.content());
    let sent = &a.requests()[0];
    assert_eq!(sent.path, "/repos/octo/hello");
    assert!(
        sent.headers
            .contains(&("authorization".into(), format!("Bearer {TOKEN}"))),
        "{sent:?}"
    );
    env.call("github_repo", json!({ "owner": "octo", "repo": "missing" }))
        .assert_error("tool_failed", "repository octo/missing not found");
}

/// WASI 0.3's `wasi:http`: `fetch_many` (an async call) sends its requests at once, and each one
/// passes the same grant as 0.2's: an allowed server answers, another port is refused by name.
#[test]
fn fetch_many_waits_for_its_requests_together_under_the_same_allowlist() {
    let server = Server::start();
    let other = Server::start();
    let env = granted_env("fetch_many", &[server.origin()], "allow-private = true\n");
    let urls: Vec<String> = (0..4).map(|_| server.url("/delay?ms=1000")).collect();
    let r = env.call("fetch_many", json!({ "urls": urls }));
    r.assert_ok();
    assert_eq!(
        r.content().matches("-> 200, 14 bytes").count(),
        4,
        "{}",
        r.content()
    );
    // Every request reached the server while the first was still waiting for its answer.
    let seen = server.requests();
    assert_eq!(seen.len(), 4);
    let spread = seen[3].at - seen[0].at;
    assert!(
        spread < Duration::from_millis(1000),
        "sent one after another: {spread:?}"
    );
    let r = env.call(
        "fetch_many",
        json!({ "urls": [server.url("/hello"), other.url("/hello")] }),
    );
    r.assert_ok();
    let lines: Vec<&str> = r
        .content()
        .lines()
        .filter(|l| l.starts_with("## "))
        .collect();
    assert_eq!(
        lines[0],
        format!("## {} -> 200, 26 bytes", server.url("/hello"))
    );
    assert!(
        lines[1].contains("failed: ErrorCode::HttpRequestDenied"),
        "{lines:?}"
    );
    assert!(
        other.requests().is_empty(),
        "the refused request reached its server"
    );
}

/// Every answer of `fetch_many` is streamed as its own line, also when they come back together.
#[tokio::test]
async fn fetch_many_streams_a_line_for_every_answer() {
    let server = Server::start();
    let env = granted_env("fetch_many", &[server.origin()], "allow-private = true\n");
    let p = env.pipeline(8).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let urls: Vec<String> = (0..6).map(|_| server.url("/delay?ms=200")).collect();
    let o = p
        .call(toolhost::exec::CallRequest {
            tool: "fetch_many".into(),
            input: json!({ "urls": urls }),
            origin: "test",
            progress: Some(Arc::new(move |pr| sink.lock().unwrap().push(pr.message))),
            ..toolhost::exec::CallRequest::default()
        })
        .await;
    assert!(!o.is_error(), "{o:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert!(
        seen.iter().all(|l| l.ends_with("-> 200, 13 bytes")),
        "{seen:?}"
    );
}
