//! One `tools/call` through the pipeline, as [`McpServer`] runs it: the approval by elicitation or
//! by `requestState`, the offer to run it as a task, progress, the deadline and the request's span,
//! and the outcome mapped to the client's era. The pipeline decides; this only translates.

use std::future::pending;
use std::sync::Arc;
use tokio_util::task::TaskTracker;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use super::approval::{AskClient, ElicitingApprover};
use super::handler::McpServer;
use super::outcome::{self, Era};
use super::progress::ProgressRelay;
use super::sessions::SessionCall;
use super::spans::{caller_of, end_request_span, request_span};
use super::tasks;
use crate::exec::{Approver, CallRequest, Deadline, ErrorKind};
use crate::telemetry;

impl McpServer {
    /// Runs one `tools/call`.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Counted until its answer is handed to the transport.
        let _running = self.running.as_ref().map(TaskTracker::token);
        // Entered before anything else, so that a `DELETE` of its session stops it at any point.
        let session = self.sessions.as_ref().zip(session_of(&context));
        let session = session.map(|(calls, id)| calls.enter(id, &self.calls));
        let shared = &self.shared;
        let tool = request.name.to_string();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let caller = caller_of(&context);

        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let elicits = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if let Some(answer) = tasks::offer(
            shared,
            &context,
            &tool,
            &arguments,
            caller.clone(),
            elicits,
            request.request_state.is_some(),
        )
        .await?
        {
            return Ok(answer);
        }
        let mut question = None;
        let answered = match (&request.request_state, modern) {
            (Some(state), true) => {
                self.states
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
        let cancel = session
            .as_ref()
            .map_or(&self.calls, SessionCall::token)
            .child_token();
        let started = std::time::Instant::now();
        let trace = telemetry::is_on()
            .then(|| request_span("tools/call", Some(&tool), &context, caller.as_deref()));
        // The arguments are kept only where a question may hand the call back to the client.
        let (input, kept) = match question {
            Some(_) => (arguments.clone(), Some(arguments)),
            None => (arguments, None),
        };
        let request = CallRequest {
            tool: tool.clone(),
            input,
            parent_id: None,
            origin: "mcp",
            progress: relay.as_ref().map(ProgressRelay::sink),
            cancel: cancel.clone(),
            approver,
            caller,
            trace: trace.clone(),
            // The pipeline enforces the request timeout itself, so that the client, the audit
            // log and the stats all see `timeout`.
            deadline: self.call_deadline.map(Deadline::after),
            admitted: None,
            nested: None,
        };
        let call = shared.pipeline.call(request);
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
        if let (Some(q), Some(arguments)) = (handed, &kept)
            && outcome.error_kind() == Some(ErrorKind::InputRequired)
        {
            return self
                .states
                .input_required(&tool, arguments, &q)
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

/// The HTTP session a request came in, by its `mcp-session-id`; `None` on stdio and for stateless
/// requests.
fn session_of(context: &RequestContext<RoleServer>) -> Option<&str> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
}
