//! What a tool's circuit breaker did with a call, as its audit line says it (`"breaker": [...]`).

use serde::{Deserialize, Serialize};
use toolhost_call::call::ErrorKind;
use toolhost_gate::breaker::{Suspension, Transition};

/// One thing a tool's circuit breaker did with a call, for its audit line:
/// `{"event":"opened","kind":"timeout","failures":3,"cool_down_s":30}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerNote {
    /// `refused`, `opened`, `half_opened` (this call is the trial), `reopened` or `closed`; the
    /// same prefixed `caller_` for the caller's own breaker.
    pub event: String,
    /// The kind of the failures that opened (or keep open) the breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// How many of them in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<u32>,
    /// Seconds, rounded up, until the tool is tried again (opened, reopened, refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_s: Option<u64>,
}

impl BreakerNote {
    /// The note for a change of state.
    pub fn from_transition(t: &Transition) -> Self {
        let (kind, failures, retry) = match *t {
            Transition::Opened {
                kind,
                failures,
                cool_down,
                ..
            }
            | Transition::Reopened {
                kind,
                failures,
                cool_down,
                ..
            } => (Some(kind), Some(failures), Some(cool_down)),
            Transition::HalfOpened | Transition::Closed { .. } => (None, None, None),
        };
        Self {
            event: t.as_str().to_owned(),
            kind,
            failures,
            retry_in_s: retry.map(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0)),
        }
    }

    /// The same note about the caller's own breaker (failures under the limits its profile
    /// lowered): its event prefixed `caller_`, e.g. `caller_opened`, `caller_refused`.
    pub fn for_caller(mut self) -> Self {
        self.event.insert_str(0, "caller_");
        self
    }

    /// The note for a refused call.
    pub fn refused(s: &Suspension) -> Self {
        let d = s.retry_in;
        Self {
            event: "refused".to_owned(),
            kind: Some(s.kind),
            failures: Some(s.failures),
            retry_in_s: Some(d.as_secs() + u64::from(d.subsec_nanos() > 0)),
        }
    }
}
