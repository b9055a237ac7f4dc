//! The one path every call takes: admit -> find -> validate -> gate -> execute -> shape -> record.
//! Front ends (CLI, MCP, batch API, tasks) build a [`CallRequest`] and get a [`CallOutcome`]; they
//! never reach past this module into the sandbox or the gate, and never decide an outcome.

mod admission;
mod asking;
mod checks;
mod credentials;
mod execution;
mod gate;
mod health;
mod live;
mod nested;
mod pipeline;
mod questions;
mod quiet;
mod quota;
mod recorder;
mod request;
mod shape;
mod timing;
mod validation;
mod view;

pub use self::admission::{Deadline, Stopping, Ticket};
pub use self::health::ToolsHealth;
pub use self::live::{Live, LiveEvent, NotRunning, RECENT, RunningView, caller_name};
pub use self::nested::Nested;
pub use self::pipeline::Pipeline;
pub use self::questions::{
    AnswerError, Attendance, PRESENT_FOR, Question, Questions, Subject, Verdict, digest,
};
pub use self::quota::{Ledger, LedgerError, Taken};
pub use self::recorder::CALL_LOG;
pub use self::request::CallRequest;
pub use self::timing::StageTimes;
pub use toolhost_call::call::{
    Answer, ApprovalRequest, Approver, CallOutcome, CallStatus, ErrorKind, Progress, ProgressSink,
};
