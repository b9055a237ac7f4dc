//! The MCP server: `tools/list` and `tools/call` through the pipeline, progress, cancellation,
//! approvals, and `notifications/tools/list_changed` on hot reload (legacy sessions and 2026
//! `subscriptions/listen`). One [`McpServer`] value per session; they share one [`Shared`].

use std::future::{Future, pending};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CreateTaskResult, CustomRequest, CustomResult, ErrorCode, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsRequestMethod,
    ListPromptsResult, ListResourceTemplatesRequestMethod, ListResourceTemplatesResult,
    ListResourcesRequestMethod, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool as McpTool,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::{AskClient, ElicitingApprover};
use super::listing::{self, PAGE_SIZE};
use super::outcome::{self, Era};
use super::progress::ProgressRelay;
use super::shared::Shared;
use super::tasks::{self, AskVia, TaskCall};
use crate::exec::{Approver, CallRequest, ErrorKind};
use crate::telemetry;
use toolhost_policy::caller::Caller;
use toolhost_policy::task::{TaskChoice, TaskSupport, owner_of};

/// What clients read about this server at connection time.
const INSTRUCTIONS: &str = "toolhost runs each tool in its own WebAssembly sandbox with only the files and \
environment its policy grants. Failed calls come back as error results that say what to change. Calls that \
need approval ask the user through elicitation when the client supports it; otherwise they are denied.";

/// The methods rmcp reads into typed requests. One of them arriving as a custom request had params
/// of the wrong shape (`"name": 5`, `"arguments": []`): JSON-RPC answers that with -32602 Invalid
/// params, where rmcp's default says -32601 Method not found.
const TYPED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Methods the 2026-07-28 revision removed: for its clients they are unknown, whatever the params.
const REMOVED_IN_2026: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The error for a request no handler took: bad params of a known method, or an unknown method
/// (which includes, for a 2026-07-28 request, the methods that revision removed).
fn unroutable(method: &str, params: Option<&Value>, modern: bool) -> ErrorData {
    if !TYPED_METHODS.contains(&method) || (modern && REMOVED_IN_2026.contains(&method)) {
        return ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
            None,
        );
    }
    let params = params.cloned().unwrap_or(Value::Null);
    let why = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params).err(),
        _ => None,
    };
    let message = match why {
        Some(e) => format!("invalid params for {method}: {e}"),
        None => format!("invalid params for {method}"),
    };
    ErrorData::invalid_params(message, None)
}

/// The MCP server over one pipeline; cheap to clone (one clone per HTTP session).
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// How long one `tools/call` may take before it is stopped; `None` for no limit beyond the plugin's.
    call_deadline: Option<Duration>,
    /// Parent of the cancel token of every call this server runs: the daemon's, or one of its
    /// children that a transport cancels when its client goes away (stdin closed).
    calls: CancellationToken,
}

impl McpServer {
    pub(crate) fn with_shared(shared: Arc<Shared>, call_deadline: Option<Duration>) -> Self {
        let calls = shared.calls.clone();
        Self {
            shared,
            call_deadline,
            calls,
        }
    }

    /// This server, its calls cancelled when `calls` is (which must be a child of the daemon's).
    pub(crate) fn with_calls(mut self, calls: CancellationToken) -> Self {
        self.calls = calls;
        self
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = &self.shared;
        let tool = request.name.to_string();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let caller = caller_of(&context);
        if shared.stopping.is_cancelled() {
            let refused = CallRequest {
                tool: tool.clone(),
                input: arguments,
                origin: "mcp",
                caller,
                ..CallRequest::default()
            };
            let outcome = shared.pipeline.refuse(
                &refused,
                ErrorKind::Busy,
                "toolhost is shutting down and accepts no new calls; retry once it is back.".into(),
            );
            let era = Era::of(context.protocol_version());
            return outcome::to_result(&tool, outcome, era).map(Into::into);
        }
        let _in_flight = shared.in_flight.enter();

        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let elicits = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !modern {
            let support = shared
                .pipeline
                .catalog()
                .get(&tool)
                .map_or(TaskSupport::Never, |t| t.plugin.policy.task);
            if support.asked(false) == TaskChoice::Refuse {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "tool {tool} runs only as a task: call it with `task` (2025-11-25 tasks)"
                    ),
                    None,
                ));
            }
        }
        if modern && request.request_state.is_none() {
            let declared = context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
            let support = shared
                .pipeline
                .catalog()
                .get(&tool)
                .map_or(TaskSupport::Never, |t| t.plugin.policy.task);
            // An optional task runs inline while the state store is unreachable; a required one
            // is refused with that reason.
            let followable =
                declared && (shared.tasks().is_some() || support == TaskSupport::Required);
            match support.offered(followable) {
                TaskChoice::Inline => {}
                TaskChoice::Refuse => {
                    return Err(ErrorData::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ));
                }
                TaskChoice::Task => {
                    let call = TaskCall {
                        tool,
                        arguments,
                        caller,
                        era: Era::of(context.protocol_version()),
                        ask: if elicits {
                            AskVia::Task
                        } else {
                            AskVia::Nobody
                        },
                        ttl: None,
                    };
                    let record = tasks::start(shared, call).await?;
                    let poll = tasks::tasks_of(shared)?.options().poll_interval;
                    return Ok(CallToolResponse::Task(CreateTaskResult::new(tasks::task(
                        &record, poll,
                    ))));
                }
            }
        }
        let mut question = None;
        let answered = match (&request.request_state, modern) {
            (Some(state), true) => {
                shared
                    .states
                    .answered(&tool, &arguments, state, request.input_responses.as_ref())
                    .await?
            }
            _ => None,
        };
        let approver: Option<Arc<dyn Approver>> = match (answered, modern, elicits) {
            (Some(answer), _, _) => Some(Arc::new(answer)),
            (None, true, true) => {
                let (ask, rx) = AskClient::new();
                question = Some(rx);
                Some(Arc::new(ask))
            }
            (None, false, true) => Some(Arc::new(ElicitingApprover::new(
                context.peer.clone(),
                shared.approval_timeout,
            ))),
            _ => None,
        };

        let relay = context
            .meta
            .get_progress_token()
            .map(|token| ProgressRelay::new(token, context.peer.clone()));
        let cancel = self.calls.child_token();
        let started = std::time::Instant::now();
        let trace = telemetry::is_on()
            .then(|| request_span("tools/call", Some(&tool), &context, caller.as_deref()));
        let request = CallRequest {
            tool: tool.clone(),
            input: arguments.clone(),
            parent_id: None,
            origin: "mcp",
            progress: relay.as_ref().map(ProgressRelay::sink),
            cancel: cancel.clone(),
            approver,
            caller,
            trace: trace.clone(),
        };
        // The pipeline enforces the request timeout itself, so that the client, the audit log and
        // the stats all see `timeout`.
        let call = async {
            match self.call_deadline {
                Some(limit) => shared.pipeline.call_within(request, limit).await,
                None => shared.pipeline.call(request).await,
            }
        };
        let pump = async {
            match &relay {
                Some(r) => r.pump().await,
                None => pending().await,
            }
        };
        let asked = async {
            match question {
                Some(rx) => match rx.await {
                    Ok(q) => q,
                    Err(_) => pending().await,
                },
                None => pending().await,
            }
        };
        tokio::pin!(call, pump, asked);
        let mut abandoned = false;
        let mut handed = None;
        // Never drop `call` once it runs: cancelling it through its token lets the pipeline stop
        // the plugin and write the audit record.
        let outcome = loop {
            tokio::select! {
                biased;
                outcome = &mut call => break outcome,
                q = &mut asked, if handed.is_none() => {
                    // 2026-07-28: the answer comes in a new request. This call ends here; the
                    // pipeline records it as `input_required`.
                    handed = Some(q);
                    cancel.cancel();
                }
                () = context.ct.cancelled(), if !abandoned => {
                    abandoned = true;
                    cancel.cancel();
                }
                () = &mut pump => {}
            }
        };
        if let Some(q) = handed
            && outcome.error_kind() == Some(ErrorKind::InputRequired)
        {
            return shared
                .states
                .input_required(&tool, &arguments, &q)
                .map(Into::into);
        }
        if let Some(r) = &relay {
            // The pump may be part-way through a send, holding the relay's send lock: keep driving
            // it while the last report goes out, or each would wait for the other forever.
            tokio::select! {
                biased;
                () = r.flush() => {}
                () = &mut pump => {}
            }
        }
        if let Some(cx) = &trace {
            let error = outcome.error_kind().map(telemetry::error_type);
            end_request_span(cx, "tools/call", Some(&tool), error, started);
        }
        let era = Era::of(context.protocol_version());
        outcome::to_result(&tool, outcome, era).map(Into::into)
    }
}

/// The server span of an MCP request, as the MCP semantic conventions name and attribute it, under
/// the trace its `_meta.traceparent` continues.
fn request_span(
    method: &str,
    tool: Option<&str>,
    context: &RequestContext<RoleServer>,
    caller: Option<&Caller>,
) -> opentelemetry::Context {
    use opentelemetry::KeyValue;
    let meta = |key: &str| context.meta.get(key).and_then(Value::as_str);
    let parent = telemetry::remote_parent(meta("traceparent"), meta("tracestate"));
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method.to_owned()),
        KeyValue::new("jsonrpc.request.id", context.id.to_string()),
    ];
    if let Some(v) = context.protocol_version() {
        attributes.push(KeyValue::new("mcp.protocol.version", v.to_string()));
    }
    let session = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok());
    if let Some(id) = session {
        attributes.push(KeyValue::new("mcp.session.id", id.to_owned()));
    }
    if let Some(tool) = tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
        attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(c) = caller {
        attributes.push(KeyValue::new("enduser.id", c.subject.clone()));
    }
    let name = match tool {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    };
    telemetry::server_span(name, &parent, attributes)
}

/// `answer` inside the server span of MCP request `method` (when telemetry is on), its JSON-RPC
/// error code as `error.type` when it fails.
async fn traced<T>(
    method: &str,
    context: &RequestContext<RoleServer>,
    answer: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    if !telemetry::is_on() {
        return answer.await;
    }
    let started = std::time::Instant::now();
    let caller = caller_of(context);
    let cx = request_span(method, None, context, caller.as_deref());
    let result = answer.await;
    let code = result.as_ref().err().map(|e| e.code.0.to_string());
    end_request_span(&cx, method, None, code.as_deref(), started);
    result
}

/// End a request's span and record `mcp.server.operation.duration`.
fn end_request_span(
    cx: &opentelemetry::Context,
    method: &str,
    tool: Option<&str>,
    error: Option<&str>,
    started: std::time::Instant,
) {
    use opentelemetry::KeyValue;
    telemetry::end_span(cx, error);
    let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned())];
    if let Some(t) = tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", t.to_owned()));
    }
    if let Some(e) = error {
        attributes.push(KeyValue::new("error.type", e.to_owned()));
    }
    telemetry::instruments()
        .operation
        .record(started.elapsed().as_secs_f64(), &attributes);
}

/// The authenticated caller of an HTTP request (put there by [`super::auth`]); `None` on stdio.
fn caller_of(context: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<Caller>>())
        .cloned()
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
        let pipeline = &self.shared.pipeline;
        let sees = |name: &str| pipeline.sees(caller.as_deref(), name);
        let page = listing::page(&pipeline.catalog(), cursor, PAGE_SIZE, era, sees);
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
            .pipeline
            .catalog()
            .get(name)
            .map(|t| listing::to_mcp(&t.spec, Era::AnyValue))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
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
            Ok(GetTaskResult::new(tasks::detailed(&record, poll)))
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
            if !modern && tasks::LEGACY_METHODS.contains(&method.as_str()) {
                let caller = caller_of(&context);
                let ask = match context.client_capabilities().and_then(|c| c.elicitation) {
                    Some(_) => AskVia::Peer(context.peer.clone()),
                    None => AskVia::Nobody,
                };
                let params = request.params.clone().unwrap_or(Value::Null);
                let answer = tasks::legacy(&self.shared, &method, params, caller, ask).await?;
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
        let mut changes = self.shared.pipeline.registry().subscribe();
        changes.mark_unchanged();
        let stopping = self.shared.stopping.clone();
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
        let mut changes = self.shared.pipeline.registry().subscribe();
        changes.mark_unchanged();
        let wants_tools = context.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.shared.stopping.cancelled() => return Ok(()),
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
