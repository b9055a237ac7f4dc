//! The servers the MCP parts compare (toolhost, the native rmcp server, the floor) and the
//! connections that drive them: one stdio session shared by N calls in flight, or an HTTP session
//! and connection per client.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::client::{HttpClient, StdioClient, result};
use crate::report::{percentile, sorted};
use crate::setup::{Workspace, toolhost_bin};

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Native,
    Toolhost,
    /// The native server with each echo call run in toolhost's sandbox alone (`floor.rs`).
    Floor,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Native => "native rmcp",
            Kind::Toolhost => "toolhost",
            Kind::Floor => "floor",
        }
    }
}

fn bench_bin() -> PathBuf {
    std::env::current_exe().expect("current exe")
}

/// Start a server on stdio: toolhost over `ws`, or the native one.
pub(crate) fn spawn_stdio(kind: Kind, ws: &Workspace) -> Result<StdioClient, String> {
    match kind {
        Kind::Toolhost => {
            let config = ws.config_path();
            StdioClient::spawn(
                &toolhost_bin(),
                &["--config", config.to_str().unwrap(), "serve", "--stdio"],
                ws.path(),
            )
        }
        Kind::Native => StdioClient::spawn(&bench_bin(), &["--serve-native-stdio"], ws.path()),
        Kind::Floor => StdioClient::spawn(&bench_bin(), &["--serve-floor-stdio"], ws.path()),
    }
}

/// A server on HTTP: the child and the `host:port` it listens on.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) addr: String,
    pub(crate) pid: u32,
}

impl HttpServer {
    pub(crate) async fn start(kind: Kind, ws: &Workspace) -> Result<Self, String> {
        let mut cmd = match kind {
            Kind::Toolhost => {
                let mut c = Command::new(toolhost_bin());
                c.arg("--config")
                    .arg(ws.config_path())
                    .args(["serve", "--http", "127.0.0.1:0"]);
                c
            }
            Kind::Native => {
                let mut c = Command::new(bench_bin());
                c.args(["--serve-native-http", "127.0.0.1:0"]);
                c
            }
            Kind::Floor => {
                let mut c = Command::new(bench_bin());
                c.args(["--serve-floor-http", "127.0.0.1:0"]);
                c
            }
        };
        cmd.current_dir(ws.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let pid = child.id().unwrap_or(0);
        // toolhost names its address on stderr ("... at http://ADDR/mcp"), the native server on stdout. Both
        // streams are drained for the server's lifetime, so that it never blocks on a full pipe.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let out: Box<dyn tokio::io::AsyncRead + Unpin + Send> =
            Box::new(child.stdout.take().ok_or("no stdout")?);
        let err: Box<dyn tokio::io::AsyncRead + Unpin + Send> =
            Box::new(child.stderr.take().ok_or("no stderr")?);
        for stream in [out, err] {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let _ = tx.send(line);
                }
            });
        }
        drop(tx);
        let find = async {
            while let Some(line) = rx.recv().await {
                let addr = match kind {
                    Kind::Toolhost => line
                        .split("http://")
                        .nth(1)
                        .and_then(|r| r.strip_suffix("/mcp"))
                        .map(str::to_string),
                    Kind::Native | Kind::Floor => line
                        .parse::<std::net::SocketAddr>()
                        .ok()
                        .map(|a| a.to_string()),
                };
                if let Some(a) = addr {
                    return Ok(a);
                }
            }
            Err(format!("{} exited before listening", kind.name()))
        };
        let addr = tokio::time::timeout(Duration::from_secs(60), find)
            .await
            .map_err(|_| "server start timed out".to_string())??;
        Ok(Self { child, addr, pid })
    }

    pub(crate) async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

fn echo_params() -> Value {
    json!({ "name": "echo", "arguments": { "text": "hello, world" } })
}

/// Something that answers `tools/call echo`, with one call in flight per handle.
pub(crate) enum Conn {
    Stdio(Arc<StdioClient>),
    Http(HttpClient),
}

impl Conn {
    pub(crate) async fn echo(&mut self) -> Result<(), String> {
        let answer = match self {
            Conn::Stdio(c) => c.call("tools/call", echo_params()).await?,
            Conn::Http(c) => c.call("tools/call", echo_params()).await?,
        };
        result(answer).map(|_| ())
    }
}

/// One level's figures.
pub(crate) struct Run {
    pub(crate) calls_per_s: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

/// `per` calls on each connection, all connections at once.
pub(crate) async fn drive(conns: Vec<Conn>, per: usize) -> Result<(Run, Vec<Conn>), String> {
    let started = Instant::now();
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per);
                for _ in 0..per {
                    let t = Instant::now();
                    c.echo().await?;
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                }
                Ok::<_, String>((lat, c))
            })
        })
        .collect();
    let mut lat = Vec::new();
    let mut back = Vec::new();
    for t in tasks {
        let (l, c) = t.await.map_err(|e| e.to_string())??;
        lat.extend(l);
        back.push(c);
    }
    let took = started.elapsed().as_secs_f64();
    let s = sorted(lat);
    Ok((
        Run {
            calls_per_s: s.len() as f64 / took,
            p50_us: percentile(&s, 50.0),
            p99_us: percentile(&s, 99.0),
        },
        back,
    ))
}

/// The connections one server offers to `n` clients: one shared stdio session, or `n` HTTP sessions.
pub(crate) enum Pool {
    Stdio(Arc<StdioClient>),
    Http(Vec<HttpClient>),
}

impl Pool {
    pub(crate) fn take(&mut self, n: usize) -> Vec<Conn> {
        match self {
            Pool::Stdio(c) => (0..n).map(|_| Conn::Stdio(c.clone())).collect(),
            Pool::Http(v) => v.drain(..n).map(Conn::Http).collect(),
        }
    }

    pub(crate) fn give(&mut self, conns: Vec<Conn>) {
        if let Pool::Http(v) = self {
            let mut back: Vec<HttpClient> = conns
                .into_iter()
                .filter_map(|c| if let Conn::Http(h) = c { Some(h) } else { None })
                .collect();
            back.append(v);
            *v = back;
        }
    }
}
