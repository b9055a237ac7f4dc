//! The MCP server: `tools/list` and `tools/call` through the pipeline, progress, cancellation,
//! approvals, and `notifications/tools/list_changed` on hot reload (legacy sessions and 2026
//! `subscriptions/listen`). One [`McpServer`] value per session; they share one [`Shared`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
    GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter,
    Tool as McpTool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::approval::RequestStates;
use super::listing::{self, PAGE_SIZE};
use super::outcome::Era;
use super::routing::unroutable;
use super::sessions::SessionCalls;
use super::spans::{caller_of, end_request_span, request_span, traced};
use super::task_view;
use super::tasks::{self, AskVia};
use crate::server::shared::Shared;
use crate::telemetry;
use toolhost_gate::task::owner_of;

/// What clients read about this server at connection time.
const INSTRUCTIONS: &str = "toolhost runs each tool in its own WebAssembly sandbox with only the files and \
environment its policy grants. Failed calls come back as error results that say what to change. Calls that \
need approval ask the user through elicitation when the client supports it; otherwise they are denied.";

/// The MCP server over one pipeline; cheap to clone (one clone per HTTP session).
#[derive(Clone)]
pub struct McpServer {
    pub(super) shared: Arc<Shared>,
    /// Seals and opens the `requestState` of 2026-era approvals (one per daemon).
    pub(super) states: Arc<RequestStates>,
    /// How long one `tools/call` may take before it is stopped; `None` for no limit beyond the plugin's.
    pub(super) call_deadline: Option<Duration>,
    /// Parent of the cancel token of every call this server runs: the daemon's, or one of its
    /// children that a transport cancels when its client goes away (stdin closed).
    pub(super) calls: CancellationToken,
    /// The calls running in this session, for a transport that lets them finish after its
    /// client stopped sending (stdin closed); `None` where nobody waits for them.
    pub(super) running: Option<TaskTracker>,
    /// The running calls of each HTTP session, which `DELETE /mcp` cancels; `None` off HTTP.
    pub(super) sessions: Option<Arc<SessionCalls>>,
}

impl McpServer {
    pub(crate) fn with_shared(
        shared: Arc<Shared>,
        states: Arc<RequestStates>,
        call_deadline: Option<Duration>,
    ) -> Self {
        let calls = shared.services.admission.shutdown_token();
        Self {
            shared,
            states,
            call_deadline,
            calls,
            running: None,
            sessions: None,
        }
    }

    /// This server, each call of an HTTP session entered in `sessions` while it runs, so that
    /// deleting the session stops it.
    pub(crate) fn with_sessions(mut self, sessions: Arc<SessionCalls>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// This server, its calls cancelled and its subscriptions ended when `calls` is (which must
    /// be a child of the daemon's), each call counted in `running` while it runs.
    pub(crate) fn with_calls(mut self, calls: CancellationToken, running: TaskTracker) -> Self {
        self.calls = calls;
        self.running = Some(running);
        self
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed();
        // The 2026 tasks extension, once the state store is open (2025-11-25's `tasks` capability
        // is added on the wire: rmcp has no field for it).
        let capabilities = if self.shared.tasks().is_some() {
            capabilities.enable_tasks().build()
        } else {
            capabilities.build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let era = Era::of(context.protocol_version());
        let caller = caller_of(&context);
        let started = std::time::Instant::now();
        let trace = telemetry::is_on()
            .then(|| request_span("tools/list", None, &context, caller.as_deref()));
        let services = &self.shared.services;
        let lists = |name: &str| services.lists(caller.as_deref(), name);
        let catalog = services.listing().await;
        let page = listing::page(&catalog, cursor, PAGE_SIZE, era, lists);
        if let Some(cx) = &trace {
            let error = page.as_ref().err().map(|_| "invalid_params");
            end_request_span(cx, "tools/list", None, error, started);
        }
        page
    }

    // A tools server: rmcp would answer these with empty lists, as if prompts and resources were
    // supported without being declared; say plainly that they are not.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // rmcp's own body, inside a span.
        traced("initialize", &context, async {
            context.peer.set_peer_info(request.clone());
            self.negotiate_initialize(&request)
        })
        .await
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        traced("ping", &context, async { Ok(()) }).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        traced("prompts/list", &context, async {
            Err(ErrorData::method_not_found::<ListPromptsRequestMethod>())
        })
        .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        traced("resources/list", &context, async {
            Err(ErrorData::method_not_found::<ListResourcesRequestMethod>())
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        traced("resources/templates/list", &context, async {
            Err(ErrorData::method_not_found::<
                ListResourceTemplatesRequestMethod,
            >())
        })
        .await
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.shared
            .services
            .registry
            .catalog()
            .get(name)
            .map(|t| listing::to_mcp(&t.spec, Era::AnyValue))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: the call's future is 4.7 KB, and rmcp moves the request's future into its task
        // by value; a pointer moves for less (about 1,000 instructions a served call, issue 42).
        Box::pin(self.call(request, context)).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        traced("tasks/get", &context, async {
            let tasks = tasks::tasks_of(&self.shared)?;
            let owner = owner_of(caller_of(&context).as_deref());
            let record = tasks
                .get(&request.task_id, &owner)
                .await
                .map_err(tasks::task_error)?;
            let poll = tasks.options().poll_interval;
            Ok(GetTaskResult::new(task_view::detailed(&record, poll)))
        })
        .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        traced("tasks/update", &context, async {
            let tasks = tasks::tasks_of(&self.shared)?;
            let owner = owner_of(caller_of(&context).as_deref());
            let answers = serde_json::to_value(&request.input_responses).unwrap_or_default();
            tasks
                .respond(&request.task_id, &owner, answers)
                .await
                .map_err(tasks::task_error)
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        traced("tasks/cancel", &context, async {
            let tasks = tasks::tasks_of(&self.shared)?;
            let owner = owner_of(caller_of(&context).as_deref());
            tasks
                .cancel(&request.task_id, &owner)
                .await
                .map(drop)
                .map_err(tasks::task_error)
        })
        .await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let method = request.method.clone();
        traced(&method, &context, async {
            if !modern && super::legacy::LEGACY_METHODS.contains(&method.as_str()) {
                let caller = caller_of(&context);
                let ask = match context.client_capabilities().and_then(|c| c.elicitation) {
                    Some(_) => AskVia::Peer(context.peer.clone()),
                    None => AskVia::Nobody,
                };
                let params = request.params.clone().unwrap_or(Value::Null);
                let answer =
                    super::legacy::answer(&self.shared, &method, params, caller, ask).await?;
                return Ok(CustomResult(answer));
            }
            Err(unroutable(&request.method, request.params.as_ref(), modern))
        })
        .await
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // An `initialize`-era session: tell it whenever the tool set changes, until it goes away.
        let peer = context.peer;
        let mut changes = self.shared.services.registry.subscribe();
        changes.mark_unchanged();
        let stopping = self.shared.services.admission.stopping().clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stopping.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                if peer.is_transport_closed() {
                    return;
                }
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("session gone, list_changed not delivered: {e}");
                    return;
                }
            }
        });
        std::future::ready(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // A 2026-07-28 `subscriptions/listen`: runs until the client cancels it or the daemon stops.
        let mut changes = self.shared.services.registry.subscribe();
        changes.mark_unchanged();
        let wants_tools = context.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.shared.services.admission.stopping().cancelled() => return Ok(()),
                // The session is over (its client closed stdin and its calls have finished).
                () = self.calls.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wants_tools
                        && let Err(e) = context.sink().notify_tool_list_changed().await {
                            tracing::debug!("subscription gone, list_changed not delivered: {e}");
                            return Ok(());
                        }
                }
            }
        }
    }
}
