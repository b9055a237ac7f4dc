//! A real `toolhost serve` for tests: a minimal MCP client over its stdio (newline-delimited
//! JSON-RPC) that checks every line the daemon writes to stdout, and a minimal HTTP/1.1 client for
//! its Streamable HTTP endpoint. Every wait is bounded.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{EVENT_WAIT, Env, poll, wait_for};

/// How long any one answer may take before a test fails instead of hanging.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(90);

/// A running daemon with an initialized stdio session (and HTTP when started with `--http`).
pub(crate) struct Daemon {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Answers and notifications read but not yet asked for.
    answers: HashMap<u64, Value>,
    /// Notifications, in arrival order.
    pub(crate) notifications: Vec<Value>,
    /// Messages that answer no request of ours (notifications, errors without an id), not yet taken.
    unsolicited: VecDeque<Value>,
    /// Lines on stdout that are not one JSON-RPC message each.
    garbage: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// The HTTP address, when serving HTTP too.
    pub(crate) http: Option<SocketAddr>,
}

/// `text` without `ESC [ ... m` colour sequences.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        out.push_str(&rest[..at]);
        rest = &rest[at + 2..];
        match rest.find('m') {
            Some(end) if rest[..end].bytes().all(|b| b.is_ascii_digit() || b == b';') => {
                rest = &rest[end + 1..]
            }
            _ => out.push_str("\u{1b}["),
        }
    }
    out.push_str(rest);
    out
}

/// How long a daemon's plugins may take to load from an empty compile cache (a Python plugin
/// compiles for 10-50 s on a loaded two-core machine).
const LOAD_WAIT: Duration = Duration::from_secs(180);

/// Keep at most this much of the daemon's stderr for failure messages.
const STDERR_KEEP: usize = 1 << 20;

impl Daemon {
    /// `toolhost serve --stdio EXTRA...` in `env`, initialized (protocol 2025-11-25).
    pub(crate) fn start(env: &Env, extra: &[&str]) -> Self {
        Self::start_env(env, extra, &[])
    }

    /// [`Self::start`] with extra environment variables for the daemon.
    pub(crate) fn start_env(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Self {
        // The daemon answers before its plugins are loaded; the tests that do not test that wait
        // for them, as a person reading its stderr would, and then begin the session (so that
        // the first load's `tools/list_changed` notifications do not reach them).
        let mut daemon = Self::spawn(env, extra, vars);
        let loaded = "toolhost: plugins loaded:";
        if poll(LOAD_WAIT, || daemon.stderr().contains(loaded).then_some(())).is_none() {
            panic!(
                "{loaded:?} not on the daemon's stderr within {LOAD_WAIT:?}:\n{}",
                daemon.stderr()
            );
        }
        daemon.initialize();
        daemon
    }

    /// [`Self::start_env`] without waiting for the plugins to load: initialized, but its plugins
    /// may still be compiling.
    pub(crate) fn start_cold(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Self {
        let mut daemon = Self::spawn(env, extra, vars);
        daemon.initialize();
        daemon
    }

    /// [`Self::start`] without a session: the plugins loaded, nothing sent yet (a 2026-07-28
    /// client sends no `initialize`).
    pub(crate) fn start_session_less(env: &Env, extra: &[&str]) -> Self {
        let daemon = Self::spawn(env, extra, &[]);
        daemon.wait_loaded();
        daemon
    }

    /// Wait for the first load of the daemon's plugins to end.
    fn wait_loaded(&self) {
        let loaded = "toolhost: plugins loaded:";
        if poll(LOAD_WAIT, || self.stderr().contains(loaded).then_some(())).is_none() {
            panic!(
                "{loaded:?} not on the daemon's stderr within {LOAD_WAIT:?}:\n{}",
                self.stderr()
            );
        }
    }

    /// The exit status, if the daemon has exited.
    pub(crate) fn try_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// The HTTP address of a daemon started with `--http`.
    pub(crate) fn http_addr(&self) -> SocketAddr {
        self.http.expect("the daemon was started without --http")
    }

    /// Whether a notification with `method` has arrived, waiting for it up to `wait`.
    pub(crate) fn notified(&mut self, method: &str, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            if self.notifications.iter().any(|n| n["method"] == method) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.next_unsolicited(left).is_none() {
                return self.notifications.iter().any(|n| n["method"] == method);
            }
        }
    }

    /// `toolhost serve --stdio EXTRA...` in `env`, not yet initialized.
    fn spawn(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Self {
        let mut args = vec!["serve", "--stdio"];
        args.extend_from_slice(extra);
        let mut child = env
            .command(&args)
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolhost serve");
        let (tx, lines) = channel();
        let garbage = Arc::new(Mutex::new(Vec::new()));
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let seen = garbage.clone();
        std::thread::spawn(move || {
            let mut line = Vec::new();
            loop {
                line.clear();
                match out.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line).into_owned();
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) if v.get("jsonrpc") == Some(&json!("2.0")) => {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                    _ => seen.lock().unwrap().push(text),
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (port_tx, port_rx) = channel();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let log = stderr.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while matches!(err.read_line(&mut line), Ok(n) if n > 0) {
                if let Some(at) = line.find("at http://") {
                    let addr = line[at + 10..].split('/').next().unwrap_or_default();
                    let _ = port_tx.send(addr.parse::<SocketAddr>().ok());
                }
                let mut kept = log.lock().unwrap();
                if kept.len() < STDERR_KEEP {
                    kept.push_str(&line);
                }
                line.clear();
            }
        });
        let stdin = child.stdin.take();
        let mut daemon = Self {
            child,
            stdin,
            lines,
            answers: HashMap::new(),
            notifications: Vec::new(),
            unsolicited: VecDeque::new(),
            garbage,
            stderr,
            next_id: 1,
            http: None,
        };
        if extra.contains(&"--http") {
            daemon.http = port_rx.recv_timeout(ANSWER_WAIT).ok().flatten();
            assert!(
                daemon.http.is_some(),
                "no HTTP address on stderr:\n{}",
                daemon.stderr()
            );
        }
        daemon
    }

    /// Begin the session: `initialize` (protocol 2025-11-25), then `initialized`.
    fn initialize(&mut self) {
        let daemon = self;
        let init = daemon.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "e2e-hostile", "version": "1" }
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "toolhost", "{init}");
        daemon.notify("notifications/initialized", None);
    }

    /// The daemon's stderr so far (its first MiB), without terminal colour codes.
    pub(crate) fn stderr(&self) -> String {
        strip_ansi(&self.stderr.lock().unwrap())
    }

    /// The daemon's stderr so far (its first MiB), as written.
    pub(crate) fn stderr_raw(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Write raw bytes and a newline to the daemon's stdin.
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Send a message without waiting for anything.
    pub(crate) fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// A fresh request id.
    pub(crate) fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn notify(&mut self, method: &str, params: Option<Value>) {
        let mut m = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(p) = params {
            m["params"] = p;
        }
        self.send(&m);
    }

    /// Send a request and wait for its answer (the whole JSON-RPC message).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.id();
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.answer(id)
    }

    /// Wait for the answer to request `id`, keeping whatever else arrives meanwhile.
    pub(crate) fn answer(&mut self, id: u64) -> Value {
        self.wait_for(Some(id), ANSWER_WAIT).unwrap_or_else(|| {
            panic!(
                "no answer to request {id} in {ANSWER_WAIT:?}; stderr:\n{}",
                self.stderr()
            )
        })
    }

    /// The next message that answers no request of ours (a notification, an error without an id),
    /// within `wait`.
    pub(crate) fn next_unsolicited(&mut self, wait: Duration) -> Option<Value> {
        self.wait_for(None, wait)
    }

    fn wait_for(&mut self, id: Option<u64>, wait: Duration) -> Option<Value> {
        match id {
            Some(id) => {
                if let Some(v) = self.answers.remove(&id) {
                    return Some(v);
                }
            }
            None => {
                if let Some(v) = self.unsolicited.pop_front() {
                    return Some(v);
                }
            }
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = match self.lines.recv_timeout(left) {
                Ok(v) => v,
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            };
            match (
                v.get("id").and_then(Value::as_u64),
                v.get("method").is_some(),
            ) {
                (Some(got), false) if Some(got) == id => return Some(v),
                (Some(got), false) => {
                    self.answers.insert(got, v);
                }
                // Notifications, requests from the server, answers without an id.
                _ => {
                    if v.get("id").is_none() && v.get("method").is_some() {
                        self.notifications.push(v.clone());
                    }
                    if id.is_none() {
                        return Some(v);
                    }
                    self.unsolicited.push_back(v);
                }
            }
        }
    }

    /// `tools/call`, answered with a result (panics on a JSON-RPC error).
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Outcome {
        let answer = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        Outcome::from_answer(tool, answer)
    }

    /// `tools/call` with a progress token; returns the outcome and the progress notifications.
    pub(crate) fn call_with_progress(
        &mut self,
        tool: &str,
        arguments: Value,
    ) -> (Outcome, Vec<Value>) {
        let before = self.notifications.len();
        let id = self.id();
        let token = format!("progress-{id}");
        self.send(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments, "_meta": { "progressToken": token } }
        }));
        let outcome = Outcome::from_answer(tool, self.answer(id));
        let progress = self.notifications[before..]
            .iter()
            .filter(|n| {
                n["method"] == "notifications/progress"
                    && n["params"]["progressToken"] == json!(token)
            })
            .cloned()
            .collect();
        (outcome, progress)
    }

    /// Lines on stdout that were not JSON-RPC messages.
    pub(crate) fn garbage(&self) -> Vec<String> {
        self.garbage.lock().unwrap().clone()
    }

    /// Send a signal to the daemon (`TERM`, `INT`).
    pub(crate) fn signal(&self, name: &str) {
        let ok = std::process::Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Wait (up to [`EVENT_WAIT`]) until the daemon's stderr holds `needle`; returns the stderr.
    #[track_caller]
    pub(crate) fn wait_for_stderr(&self, needle: &str) -> String {
        wait_for(
            &format!("{needle:?} on the daemon's stderr"),
            EVENT_WAIT,
            || {
                let log = self.stderr();
                log.contains(needle).then_some(log)
            },
        )
    }

    /// How many descriptors the daemon holds open on files whose path ends with `suffix` (from
    /// /proc: what a plugin opened through WASI is open in the daemon).
    pub(crate) fn open_files(&self, suffix: &str) -> usize {
        let Ok(entries) = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())) else {
            return 0;
        };
        entries
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.to_string_lossy().ends_with(suffix))
            .count()
    }

    /// The daemon's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Close stdin, as a client going away does.
    pub(crate) fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Close stdin and wait (bounded) for the daemon to exit; asserts stdout carried only JSON-RPC.
    pub(crate) fn stop(mut self) -> ExitStatus {
        drop(self.stdin.take());
        if self.http.is_some() {
            self.signal("TERM");
        }
        let status = self.wait(Duration::from_secs(30));
        let garbage = self.garbage();
        assert!(
            garbage.is_empty(),
            "non-JSON-RPC lines on the daemon's stdout: {garbage:?}"
        );
        status
    }

    /// Wait up to `limit` for the process to exit.
    pub(crate) fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "the daemon did not exit within {limit:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The result of one `tools/call`.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) tool: String,
    pub(crate) result: Value,
}

impl Outcome {
    fn from_answer(tool: &str, answer: Value) -> Self {
        let result = answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("tools/call {tool} was answered with an error: {answer}"));
        Self {
            tool: tool.to_string(),
            result,
        }
    }

    pub(crate) fn is_error(&self) -> bool {
        self.result["isError"] == true
    }

    /// `toolhost/errorKind`, or "none".
    pub(crate) fn kind(&self) -> &str {
        self.result["_meta"]["toolhost/errorKind"]
            .as_str()
            .unwrap_or("none")
    }

    pub(crate) fn call_id(&self) -> &str {
        self.result["_meta"]["toolhost/callId"]
            .as_str()
            .unwrap_or_default()
    }

    /// The first text block.
    pub(crate) fn text(&self) -> &str {
        self.result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
    }

    pub(crate) fn structured(&self) -> &Value {
        &self.result["structuredContent"]
    }

    #[track_caller]
    pub(crate) fn assert_ok(&self) -> &Self {
        assert!(!self.is_error(), "{} failed: {}", self.tool, self.result);
        self
    }

    #[track_caller]
    pub(crate) fn assert_error(&self, kind: &str, needle: &str) -> &Self {
        assert!(
            self.is_error(),
            "{} succeeded, expected {kind}: {}",
            self.tool,
            self.result
        );
        assert_eq!(self.kind(), kind, "{}", self.result);
        assert!(
            self.text().contains(needle),
            "{:?} lacks {needle:?}",
            self.text()
        );
        assert!(
            self.result.get("structuredContent").is_none(),
            "{}",
            self.result
        );
        self
    }
}

/// The audit record of `call_id` in `env`'s log.
#[track_caller]
pub(crate) fn record(env: &Env, call_id: &str) -> Value {
    let records = env.audit();
    let found: Vec<&Value> = records.iter().filter(|r| r["call_id"] == call_id).collect();
    assert_eq!(
        found.len(),
        1,
        "{call_id} has {} audit records",
        found.len()
    );
    found[0].clone()
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// One HTTP response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages of the body: plain JSON, or the `data:` of each SSE event.
    pub(crate) fn messages(&self) -> Vec<Value> {
        let text = self.text();
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            text.split("\n\n")
                .filter_map(|event| {
                    let data: Vec<&str> = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim)
                        .collect();
                    let data = data.join("\n");
                    (!data.is_empty()).then(|| serde_json::from_str(&data).unwrap())
                })
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))]
        }
    }
}

/// A keep-alive HTTP/1.1 connection.
pub(crate) struct Conn {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub(crate) fn open(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
        stream.set_read_timeout(Some(ANSWER_WAIT))?;
        stream.set_nodelay(true)?;
        Ok(Self {
            addr,
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
        })
    }

    /// Send one request and read its response.
    pub(crate) fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Reply> {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        self.writer.write_all(head.as_bytes())?;
        self.writer.write_all(body)?;
        self.read_reply()
    }

    fn read_reply(&mut self) -> std::io::Result<Reply> {
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(&format!("status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16)
                    .map_err(|_| bad(&format!("chunk size {line:?}")))?;
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(len) = find("content-length") {
            body.resize(len.parse().map_err(|_| bad("content-length"))?, 0);
            self.reader.read_exact(&mut body)?;
        } else {
            self.reader.read_to_end(&mut body)?;
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

/// One request on a fresh connection.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut conn = Conn::open(addr).unwrap();
    let mut all = vec![("Connection", "close")];
    all.extend_from_slice(headers);
    conn.send(method, path, &all, body).unwrap()
}

/// A stateless 2026-07-28 request on a fresh connection, declaring `capabilities` (and carrying
/// `bearer`, if any); its JSON-RPC answer.
pub(crate) fn modern_request(
    addr: SocketAddr,
    method: &str,
    params: Value,
    capabilities: Value,
    bearer: Option<&str>,
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", "2026-07-28"));
    headers.push(("Mcp-Method", method));
    headers.push(("Connection", "close"));
    // Mcp-Name: the tool for tools/call, the task for tasks/*.
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    if !name.is_empty() {
        headers.push(("Mcp-Name", &name));
    }
    let auth = bearer.map(|t| format!("Bearer {t}"));
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    let reply = Conn::open(addr)
        .unwrap()
        .send("POST", "/mcp", &headers, body.to_string().as_bytes())
        .unwrap();
    reply
        .messages()
        .into_iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no answer from {addr}: {} {}", reply.status, reply.text()))
}

/// The headers of an MCP POST.
pub(crate) const MCP_HEADERS: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// An initialized MCP session over one keep-alive HTTP connection.
pub(crate) struct HttpSession {
    pub(crate) conn: Conn,
    pub(crate) session: String,
    /// Headers sent with every request (e.g. the bearer token).
    extra: Vec<(String, String)>,
    next_id: u64,
}

impl HttpSession {
    pub(crate) fn open(addr: SocketAddr, extra: &[(&str, &str)]) -> std::io::Result<Self> {
        let mut conn = Conn::open(addr)?;
        let mut headers = MCP_HEADERS.to_vec();
        headers.extend_from_slice(extra);
        let init = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "e2e", "version": "1" } }
        });
        let reply = conn.send("POST", "/mcp", &headers, init.to_string().as_bytes())?;
        let session = reply
            .header("mcp-session-id")
            .ok_or_else(|| {
                std::io::Error::other(format!("no session: {} {}", reply.status, reply.text()))
            })?
            .to_string();
        headers.push(("mcp-session-id", &session));
        let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let reply = conn.send("POST", "/mcp", &headers, done.to_string().as_bytes())?;
        if reply.status != 202 {
            return Err(std::io::Error::other(format!(
                "initialized: {} {}",
                reply.status,
                reply.text()
            )));
        }
        let extra = extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(Self {
            conn,
            session,
            extra,
            next_id: 1,
        })
    }

    /// Post one message in this session.
    pub(crate) fn post(&mut self, body: &[u8]) -> std::io::Result<Reply> {
        let mut headers = MCP_HEADERS.to_vec();
        headers.push(("mcp-session-id", &self.session));
        headers.extend(self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        self.conn.send("POST", "/mcp", &headers, body)
    }

    /// `tools/call`; the JSON-RPC answer.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> std::io::Result<Value> {
        self.next_id += 1;
        let m = json!({ "jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": { "name": tool, "arguments": arguments } });
        let reply = self.post(m.to_string().as_bytes())?;
        reply
            .messages()
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(self.next_id)))
            .ok_or_else(|| {
                std::io::Error::other(format!("no answer: {} {}", reply.status, reply.text()))
            })
    }
}
