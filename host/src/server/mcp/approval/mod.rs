//! Approvals for calls the gate answers with `ask`, through the client's elicitation support.
//!
//! - Clients of the `initialize` era (up to 2025-11-25): the server sends an `elicitation/create`
//!   request while the call waits ([`ElicitingApprover`]).
//! - 2026-07-28 clients: server-to-client requests are gone. The first `tools/call` ends with an
//!   `InputRequiredResult` carrying the question and a sealed `requestState` ([`AskClient`],
//!   [`RequestStates::input_required`]); the client retries with the answer, and the retry runs the
//!   call with that answer ([`RequestStates::answered`]). The state is HMAC-sealed with a per-process
//!   key, bound to the tool and its arguments, valid for [`STATE_TTL`] and usable once, so a client
//!   can neither forge an approval nor replay one. The first round is recorded as ended with
//!   `input_required` (decision `deferred`); the retry records the call with the user's answer.
//!
//! A client without form elicitation gets no approver, and the pipeline denies with a message that
//! says which rule to add instead.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    SealOptions,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::exec::{Answer, ApprovalRequest, Approver, digest};
use crate::state::Store;
use toolhost_config::config::StateKey;

/// Key of the approval question in `inputRequests` and of its answer in `inputResponses`.
pub(crate) const APPROVAL_KEY: &str = "approval";
/// How long a 2026-era approval question stays answerable.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(600);
/// The question put to the user.
pub(super) fn question(r: &ApprovalRequest) -> String {
    r.question()
}

/// The elicitation that asks for approval: a form with one checkbox, on by default; accepting the
/// form approves, declining or cancelling denies, and so does accepting with the box cleared.
pub(super) fn elicitation(r: &ApprovalRequest) -> ElicitRequestParams {
    let schema = ElicitationSchema::builder()
        .optional_bool_with("approve", |b| {
            b.title("Run this call")
                .description("Leave checked and accept to run the call.")
                .with_default(true)
        })
        .title("toolhost approval")
        .build()
        .unwrap_or_else(|_| {
            ElicitationSchema::builder()
                .optional_bool("approve", true)
                .build_unchecked()
        });
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(r),
        requested_schema: schema,
    }
}

/// Whether an elicitation answer approves the call.
pub(super) fn approves(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
}

/// Binds a sealed state to one tool and its exact arguments.
fn associated_data(tool: &str, arguments: &Value) -> Vec<u8> {
    format!("tools/call\0{tool}\0{}", digest(arguments)).into_bytes()
}

/// Asks an `initialize`-era client with an `elicitation/create` request.
pub(crate) struct ElicitingApprover {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl ElicitingApprover {
    /// Ask through `peer`, waiting at most `timeout` for the user.
    pub(crate) fn new(peer: Peer<RoleServer>, timeout: Duration) -> Self {
        Self { peer, timeout }
    }
}

impl Approver for ElicitingApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            match self
                .peer
                .create_elicitation_with_timeout(elicitation(request), Some(self.timeout))
                .await
            {
                Ok(answer) => Answer::from_yes(approves(&answer)),
                Err(e) => {
                    tracing::warn!(tool = %request.tool, "no approval from the client: {e}");
                    Answer::Unanswered(unanswered(&e, self.timeout))
                }
            }
        })
    }
}

/// Why an elicitation brought no answer, in words for the model and the audit log.
fn unanswered(e: &ServiceError, timeout: Duration) -> String {
    match e {
        ServiceError::Timeout { .. } => format!(
            "nobody answered the question within {} s",
            timeout.as_secs()
        ),
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
            "the client went away before answering".to_owned()
        }
        other => format!("the client could not put the question: {other}"),
    }
}

/// First round of a 2026-era approval: hands the question to the `tools/call` handler, which ends
/// the request with an `InputRequiredResult`; the pipeline's call is dropped while it waits here.
pub(crate) struct AskClient {
    questions: Mutex<Option<oneshot::Sender<ApprovalRequest>>>,
}

impl AskClient {
    /// The approver and where its question arrives.
    pub(crate) fn new() -> (Self, oneshot::Receiver<ApprovalRequest>) {
        let (tx, rx) = oneshot::channel();
        (
            Self {
                questions: Mutex::new(Some(tx)),
            },
            rx,
        )
    }
}

impl Approver for AskClient {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        if let Some(tx) = self
            .questions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = tx.send(request.clone());
        }
        // The handler cancels the call instead, which ends it as `input_required`.
        Box::pin(std::future::pending())
    }

    fn deferred(&self) -> bool {
        self.questions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }
}

/// Second round of a 2026-era approval: the user's answer, for the input it was given for.
pub(crate) struct Answered {
    approve: bool,
    input_digest: String,
}

impl Approver for Answered {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let answer = if digest(&request.input) == self.input_digest {
            Answer::from_yes(self.approve)
        } else {
            tracing::warn!(tool = %request.tool, "approval was given for a different input; not running");
            Answer::Mismatched
        };
        Box::pin(std::future::ready(answer))
    }
}

/// What a sealed `requestState` carries: which question was asked, about which validated input.
#[derive(Serialize, Deserialize)]
struct ApprovalState {
    nonce: String,
    input_digest: String,
}

/// Seals and opens 2026-era approval states; remembers which were used: in memory, or in the
/// shared store once there is one, so that an answer replayed to another daemon is refused too.
pub(crate) struct RequestStates {
    codec: RequestStateCodec,
    used: Mutex<HashMap<String, Instant>>,
    store: OnceLock<Arc<dyn Store>>,
}

impl RequestStates {
    /// States sealed with `key` (`server.state-key-env`, the same on every daemon), or with a
    /// fresh random key, which does not survive a restart.
    pub(crate) fn new(key: Option<&StateKey>) -> Self {
        let key: Vec<u8> = match key {
            Some(k) => k.0.clone(),
            None => (0..3)
                .flat_map(|_| uuid::Uuid::new_v4().into_bytes())
                .collect(),
        };
        Self {
            codec: RequestStateCodec::new_unchecked(key),
            used: Mutex::new(HashMap::new()),
            store: OnceLock::new(),
        }
    }

    /// Remember used states in `store` from now on.
    pub(crate) fn use_store(&self, store: Arc<dyn Store>) {
        let _ = self.store.set(store);
    }

    /// Whether `nonce` is used for the first time.
    async fn first_use(&self, nonce: String) -> Result<bool, ErrorData> {
        let ttl = i64::try_from(STATE_TTL.as_millis()).unwrap_or(i64::MAX);
        if let Some(store) = self.store.get() {
            return store
                .use_once(&nonce, crate::state::now_ms() + ttl)
                .await
                .map_err(|e| {
                    tracing::error!("cannot record a used requestState: {e}");
                    ErrorData::internal_error(
                        "toolhost could not check the approval; try again",
                        None,
                    )
                });
        }
        let now = Instant::now();
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|_, expires| *expires > now);
        Ok(used.insert(nonce, now + STATE_TTL).is_none())
    }

    /// The answer to a first `tools/call` whose approval must come from the user.
    pub(crate) fn input_required(
        &self,
        tool: &str,
        arguments: &Value,
        request: &ApprovalRequest,
    ) -> Result<InputRequiredResult, ErrorData> {
        let state = ApprovalState {
            nonce: uuid::Uuid::new_v4().to_string(),
            input_digest: digest(&request.input),
        };
        let ad = associated_data(tool, arguments);
        let sealed = self
            .codec
            .seal_json_with(
                &state,
                &SealOptions::new().associated_data(&ad).ttl(STATE_TTL),
            )
            .map_err(|e| {
                tracing::error!("cannot seal an approval request state: {e}");
                ErrorData::internal_error("toolhost could not prepare the approval question", None)
            })?;
        let mut requests = InputRequests::new();
        requests.insert(
            APPROVAL_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(elicitation(request))),
        );
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }

    /// Open the state a client echoed with its answer; the approver that gives that answer, or
    /// `None` when the retry carries no answer (the question is then asked again, as SEP-2322
    /// recommends, and the state stays unused).
    pub(crate) async fn answered(
        &self,
        tool: &str,
        arguments: &Value,
        sealed: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Option<Answered>, ErrorData> {
        let state: ApprovalState = self
            .codec
            .open_json_with(sealed, &associated_data(tool, arguments))
            .map_err(|e| {
                tracing::warn!(tool, "rejected a requestState: {e}");
                ErrorData::invalid_params(
                    "requestState is invalid, expired, or was issued for another call; \
                     call the tool again without requestState",
                    None,
                )
            })?;
        let Some(answer) = responses.and_then(|r| r.get(APPROVAL_KEY)) else {
            return Ok(None);
        };
        let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
            ErrorData::invalid_params(
                format!("inputResponses.{APPROVAL_KEY} is not an elicitation result: {e}"),
                None,
            )
        })?;
        if !self.first_use(state.nonce).await? {
            return Err(ErrorData::invalid_params(
                "requestState was already used; call the tool again without requestState",
                None,
            ));
        }
        Ok(Some(Answered {
            approve: approves(&answer),
            input_digest: state.input_digest,
        }))
    }
}

#[cfg(test)]
mod tests;
