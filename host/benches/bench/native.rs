//! The baseline: an MCP server on the same rmcp, the same transports and the same runtime as toolhost,
//! whose tools are plain Rust. `echo` does what the echo plugin does; `sleep` waits like the hostile
//! fixture's `sleep`, for the memory-per-concurrent-call figure.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

#[derive(Clone)]
pub(crate) struct Native {
    tools: Arc<Vec<Tool>>,
}

fn object(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("schemas are objects"),
    }
}

impl Native {
    pub(crate) fn new() -> Self {
        let echo = Tool::new(
            "echo",
            "Return the given text unchanged, optionally repeated.",
            object(json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The text to return." },
                    "repeat": { "type": "integer", "minimum": 1, "maximum": 1000, "default": 1 }
                },
                "required": ["text"], "additionalProperties": false
            })),
        );
        let sleep = Tool::new(
            "sleep",
            "Sleep `ms` milliseconds.",
            object(
                json!({ "type": "object", "properties": { "ms": { "type": "integer" } }, "required": ["ms"] }),
            ),
        );
        Self {
            tools: Arc::new(vec![echo, sleep]),
        }
    }
}

fn text_arg(args: &Map<String, Value>) -> Result<(String, u64), ErrorData> {
    let text = args
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params("'text' must be a string", None))?;
    let repeat = args
        .get("repeat")
        .map_or(Some(1), Value::as_u64)
        .ok_or_else(|| ErrorData::invalid_params("'repeat' must be an integer", None))?;
    Ok((text.to_string(), repeat))
}

impl ServerHandler for Native {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("native-echo", "0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => {
                let (text, repeat) = text_arg(&args)?;
                let text = text.repeat(repeat as usize);
                let structured = json!({ "text": text });
                // The same blocks toolhost answers with: the text, then the structured result as JSON text.
                let blocks = vec![
                    ContentBlock::text(text),
                    ContentBlock::text(structured.to_string()),
                ];
                let mut r = CallToolResult::success(blocks);
                r.structured_content = Some(structured);
                Ok(r.into())
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(
                    CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))])
                        .into(),
                )
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    // As toolhost's main: a multi-threaded runtime with every driver.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// `--serve-native-stdio`: serve MCP on stdin/stdout until stdin closes.
pub(crate) fn serve_stdio() -> ExitCode {
    runtime().block_on(stdio(Native::new()))
}

/// `--serve-native-http ADDR`: serve Streamable HTTP at /mcp; prints the bound address on stdout.
pub(crate) fn serve_http(addr: &str) -> ExitCode {
    runtime().block_on(http(addr, Native::new()))
}

/// Serve `handler` on stdin/stdout until stdin closes.
pub(crate) async fn stdio(handler: impl ServerHandler) -> ExitCode {
    match handler.serve(rmcp::transport::stdio_pipes()).await {
        Ok(running) => {
            let _ = running.waiting().await;
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("native: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serve `handler` on Streamable HTTP at `addr`/mcp; prints the bound address on stdout.
pub(crate) async fn http(addr: &str, handler: impl ServerHandler + Clone) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("native: {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().expect("local address");
    println!("{local}");
    let config =
        StreamableHttpServerConfig::default().with_sse_keep_alive(Some(Duration::from_secs(15)));
    let mcp = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", mcp);
    // As toolhost does: without TCP_NODELAY every response waits 40 ms on a delayed ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    match axum::serve(listener, app).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("native: {e}");
            ExitCode::FAILURE
        }
    }
}
