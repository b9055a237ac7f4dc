//! The floor: the native server's handler, whose `echo` runs the echo plugin in toolhost's sandbox, a
//! fresh store and instance per call as toolhost does (the plugin's limits, its WASI context, pooled
//! instantiation, the slot's reset), and nothing of the pipeline: no validation, gate, audit, stats
//! or shaping. What any rmcp server pays to run each call in a fresh sandbox, measured on the same
//! transport as toolhost and the native server (`--serve-floor-stdio`, `--serve-floor-http ADDR`;
//! `scripts/mcp-instructions.py` counts its instructions per call). It serves the workspace in its
//! current directory, configured by its `toolhost.toml`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::CancellationToken;
use toolhost::exec::Pipeline;
use toolhost::sandbox::CallIo;
use toolhost_config::config::{Config, Overrides};

use crate::native::{self, Native};

#[derive(Clone)]
struct Floor {
    native: Native,
    /// Opened as the daemon opens it; only its registry and sandbox are used.
    host: Arc<Pipeline>,
}

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        self.native.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.native.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let catalog = self.host.services().registry.catalog();
        let tool = catalog
            .get(&request.name)
            .ok_or_else(|| ErrorData::invalid_params("unknown tool", None))?;
        let input = serde_json::to_string(&request.arguments.unwrap_or_default())
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let never = CancellationToken::new();
        let io = CallIo {
            files: Arc::default(),
            progress: None,
            cancel: &never,
            caps: Default::default(),
            tools: None,
            credentials: Vec::new(),
        };
        let report = self
            .host
            .services()
            .registry
            .sandbox()
            .call(tool.plugin.prepared(), &tool.guest_name, input, io)
            .await;
        match report.result {
            Ok(Ok(output)) => {
                let structured = output
                    .structured
                    .as_deref()
                    .and_then(|s| serde_json::from_str(s).ok());
                let mut blocks = vec![ContentBlock::text(output.content)];
                blocks.extend(output.structured.map(ContentBlock::text));
                let mut result = CallToolResult::success(blocks);
                result.structured_content = structured;
                Ok(result.into())
            }
            Ok(Err(e)) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(format!("{e:?}"))]).into())
            }
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }
}

async fn open() -> Result<Floor, String> {
    let config = Config::load(Some(Path::new("toolhost.toml")), &Overrides::default())
        .map_err(|e| e.to_string())?;
    let max = config.server.max_concurrent_calls;
    let host = toolhost::host::Host::open(config, max)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Floor {
        native: Native::new(),
        host: host.pipeline().clone(),
    })
}

/// `--serve-floor-stdio` and `--serve-floor-http ADDR` (with `Some(ADDR)`).
pub(crate) fn serve(http: Option<&str>) -> ExitCode {
    native::runtime().block_on(async {
        match (open().await, http) {
            (Ok(floor), None) => native::stdio(floor).await,
            (Ok(floor), Some(addr)) => native::http(addr, floor).await,
            (Err(e), _) => {
                eprintln!("floor: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
