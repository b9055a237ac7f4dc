//! The call as every front end hands it to the pipeline: the request, with its cancellation,
//! progress sink, approver, deadline and admission. What comes back is a [`CallOutcome`](toolhost_call::call::CallOutcome).

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolhost_call::call::{Approver, ProgressSink};
use toolhost_gate::caller::Caller;

use super::admission::{Deadline, Ticket};
use super::nesting::Nested;

/// One tool call, from any front end.
#[derive(Clone, Default)]
pub struct CallRequest {
    /// The tool's name as the caller gave it.
    pub tool: String,
    /// The input object (any JSON value; the validator says what is wrong with it).
    pub input: Value,
    /// A batch or request this call belongs to, for the audit log.
    pub parent_id: Option<String>,
    /// Which front end asked ("cli", "mcp", "batch", ...), for the audit log.
    pub origin: &'static str,
    /// Where the plugin's progress reports go, when the caller wants them.
    pub progress: Option<ProgressSink>,
    /// Cancelled by the caller to stop the call; the guest is interrupted promptly.
    pub cancel: CancellationToken,
    /// Who answers an `ask` decision; with none, ask means deny.
    pub approver: Option<Arc<dyn Approver>>,
    /// The authenticated caller (HTTP with a token), whose `[[callers]]` profile applies; `None`
    /// for the local operator (stdio, the CLI) and open HTTP.
    pub caller: Option<Arc<Caller>>,
    /// The span this call's stage spans go under, when telemetry is on.
    pub trace: Option<opentelemetry::Context>,
    /// The front end's limit on the whole call, approval included; past it the pipeline ends the
    /// call as `timeout`. `None`: no limit beyond the plugin's own.
    pub deadline: Option<Deadline>,
    /// The admission of the batch or task this call is part of ([`Admission::admit`]): such a
    /// call runs even once shutdown has started. Without one, the pipeline admits the call
    /// itself, or refuses it.
    ///
    /// [`Admission::admit`]: super::Admission::admit
    pub admitted: Option<Ticket>,
    /// Where the call sits among calls plugins make of other tools; `None` for a front end's call.
    pub nested: Option<Nested>,
}
