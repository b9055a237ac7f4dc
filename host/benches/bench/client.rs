//! A minimal, fast MCP client for measuring servers: newline-delimited JSON-RPC over a child's stdio
//! (many requests in flight on one session), and Streamable HTTP as raw HTTP/1.1 over keep-alive TCP
//! connections (one session per connection). It does as little as a client can: write a prepared request,
//! find the answer by id.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, oneshot};

/// The protocol version the client asks for: the last one with `initialize` (sessions).
pub(crate) const PROTOCOL: &str = "2025-11-25";

fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": { "protocolVersion": PROTOCOL, "capabilities": {},
                    "clientInfo": { "name": "toolhost-bench", "version": "0" } }
    })
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A request body for `method` with `params`; the id is filled in per call.
pub(crate) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// The answer's `result`, or why there is none (a JSON-RPC error, or an `isError` tool result).
pub(crate) fn result(answer: Value) -> Result<Value, String> {
    if let Some(e) = answer.get("error") {
        return Err(format!("JSON-RPC error: {e}"));
    }
    let r = answer
        .get("result")
        .cloned()
        .ok_or_else(|| format!("no result in {answer}"))?;
    if r.get("isError") == Some(&Value::Bool(true)) {
        return Err(format!("tool error: {r}"));
    }
    Ok(r)
}

type Pending = Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// One MCP session over a child process's stdin and stdout; share it (`Arc`) to have many requests in flight.
pub(crate) struct StdioClient {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    pending: Pending,
    next: AtomicU64,
    pub(crate) pid: u32,
}

impl StdioClient {
    /// Start `program args` (stderr to a file in `log_dir` if given, else discarded) with stdio piped.
    pub(crate) fn spawn(program: &Path, args: &[&str], cwd: &Path) -> Result<Self, String> {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        let pid = child.id().unwrap_or(0);
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let pending: Pending = Arc::default();
        let routes = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::with_capacity(1 << 16, stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = v.get("id").and_then(Value::as_u64) else {
                    continue;
                };
                if v.get("method").is_some() {
                    continue; // a request from the server (none expected)
                }
                let tx = routes.lock().unwrap().remove(&id);
                if let Some(tx) = tx {
                    let _ = tx.send(v);
                }
            }
        });
        Ok(Self {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            pending,
            next: AtomicU64::new(1),
            pid,
        })
    }

    async fn send_line(&self, text: &[u8]) -> Result<(), String> {
        let mut w = self.stdin.lock().await;
        w.write_all(text).await.map_err(|e| e.to_string())?;
        w.flush().await.map_err(|e| e.to_string())
    }

    /// Send `method` with `params` and wait for its answer.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut line =
            serde_json::to_vec(&request(id, method, params)).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.send_line(&line).await?;
        rx.await
            .map_err(|_| "the server closed its stdout".to_string())
    }

    /// `initialize`, then `notifications/initialized`.
    pub(crate) async fn handshake(&self) -> Result<(), String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut line = serde_json::to_vec(&initialize(id)).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.send_line(&line).await?;
        result(
            rx.await
                .map_err(|_| "the server exited during initialize".to_string())?,
        )?;
        self.send_line(format!("{INITIALIZED}\n").as_bytes()).await
    }

    /// Close stdin and wait (briefly) for the server to exit; kill it if it does not.
    pub(crate) async fn close(self) {
        drop(self.stdin);
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// One MCP session over one keep-alive HTTP/1.1 connection.
pub(crate) struct HttpClient {
    stream: BufReader<TcpStream>,
    addr: String,
    session: Option<String>,
    next: u64,
    buf: Vec<u8>,
}

impl HttpClient {
    /// Connect to `addr` (host:port) and `initialize` a session.
    pub(crate) async fn connect(addr: &str) -> Result<Self, String> {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut c = Self {
            stream: BufReader::with_capacity(1 << 16, tcp),
            addr: addr.into(),
            session: None,
            next: 1,
            buf: Vec::new(),
        };
        let (headers, answer) = c.post(&initialize(0)).await?;
        result(answer.ok_or("no answer to initialize")?)?;
        c.session = headers.get("mcp-session-id").cloned();
        let (_, _) = c.post_raw(INITIALIZED.as_bytes()).await?;
        Ok(c)
    }

    /// Send `method` with `params` and wait for its answer.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next += 1;
        let (_, answer) = self.post(&request(self.next, method, params)).await?;
        answer.ok_or_else(|| "no JSON-RPC answer in the response".into())
    }

    async fn post(
        &mut self,
        body: &Value,
    ) -> Result<(HashMap<String, String>, Option<Value>), String> {
        let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        self.post_raw(&bytes).await
    }

    async fn post_raw(
        &mut self,
        body: &[u8],
    ) -> Result<(HashMap<String, String>, Option<Value>), String> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL}\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(s) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        self.buf.clear();
        self.buf.extend_from_slice(head.as_bytes());
        self.buf.extend_from_slice(body);
        self.stream
            .get_mut()
            .write_all(&self.buf)
            .await
            .map_err(|e| e.to_string())?;
        self.read_response().await
    }

    async fn read_response(&mut self) -> Result<(HashMap<String, String>, Option<Value>), String> {
        let mut status = String::new();
        self.stream
            .read_line(&mut status)
            .await
            .map_err(|e| e.to_string())?;
        let code: u16 = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("bad status line {status:?}"))?;
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if self
                .stream
                .read_line(&mut line)
                .await
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err("connection closed".into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let body = if headers
            .get("transfer-encoding")
            .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
        {
            let mut body = Vec::new();
            loop {
                let mut size = String::new();
                self.stream
                    .read_line(&mut size)
                    .await
                    .map_err(|e| e.to_string())?;
                let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| format!("bad chunk size {size:?}"))?;
                let mut chunk = vec![0; n + 2];
                self.stream
                    .read_exact(&mut chunk)
                    .await
                    .map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            body
        } else {
            let n: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; n];
            self.stream
                .read_exact(&mut body)
                .await
                .map_err(|e| e.to_string())?;
            body
        };
        if !(200..300).contains(&code) {
            return Err(format!("HTTP {code}: {}", String::from_utf8_lossy(&body)));
        }
        let answer = if headers
            .get("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
        {
            // Server-sent events: the answer is the `data:` line holding a JSON-RPC response.
            String::from_utf8_lossy(&body)
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| {
                    v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some())
                })
        } else if body.is_empty() {
            None
        } else {
            serde_json::from_slice(&body).ok()
        };
        Ok((headers, answer))
    }
}

/// CPU time (user + system) of a process so far, from /proc, in seconds.
pub(crate) fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the ")".
    (ticks(11) + ticks(12)) / 100.0
}

/// Resident memory of a process, in KiB (VmRSS).
pub(crate) fn rss_kib(pid: u32) -> f64 {
    status_kib(pid, "VmRSS:")
}

/// A KiB figure of `/proc/PID/status`: `VmRSS:`, `RssAnon:` (private memory) or `RssFile:`
/// (mapped files: the binary's code, shared with other processes and reclaimable).
pub(crate) fn status_kib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(f64::NAN)
}

/// `n` calls one after another: (server CPU per call in us, calls/s), and the last answer's text.
pub(crate) async fn calls(
    c: &StdioClient,
    n: usize,
    tool: &str,
    args: &Value,
) -> Result<(f64, f64, String), String> {
    let pid = c.pid.to_string();
    let (cpu, t) = (cpu_seconds(&pid), std::time::Instant::now());
    let mut text = String::new();
    for _ in 0..n {
        let r = result(
            c.call("tools/call", json!({ "name": tool, "arguments": args }))
                .await?,
        )?;
        text = r["content"][0]["text"].as_str().unwrap_or_default().into();
    }
    let wall = t.elapsed().as_secs_f64();
    Ok((
        (cpu_seconds(&pid) - cpu) * 1e6 / n as f64,
        n as f64 / wall,
        text,
    ))
}
