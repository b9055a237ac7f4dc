//! The one path every call takes: admit -> find -> validate -> gate -> execute -> shape -> record.
//! Front ends (CLI, MCP, batch API, tasks) build a [`CallRequest`] and get a [`CallOutcome`]; they
//! never reach past this module into the sandbox or the gate, and never decide an outcome.
//!
//! Two kinds of thing live here. The [`Services`] a daemon shares (admission, audit, stats, live
//! calls, questions, health, quotas, credentials), built once by the host and read by the front
//! ends too; and the [`Pipeline`], whose stages (the modules `admit`, `find`, `validation`, `gate`,
//! `execution`, `recorder`) are each a type borrowing the services it needs, so that each can be
//! tested alone.

mod admission;
mod admit;
mod asking;
mod board;
mod checks;
mod credentials;
mod execution;
mod find;
#[cfg(test)]
mod fixture;
mod gate;
mod health;
mod live;
mod nested;
mod nesting;
mod pipeline;
mod question;
mod questions;
mod quiet;
mod quota;
mod recorder;
mod request;
mod services;
mod shape;
mod timing;
mod validation;

pub use self::admission::{Admission, Deadline, Stopping, Ticket};
pub use self::board::{Board, BoardError, Notice};
pub use self::health::ToolsHealth;
pub use self::live::fleet::{Cancelled, Listed};
pub use self::live::{Live, LiveEvent, NotRunning, RECENT, RunningView, as_written, caller_name};
pub use self::nesting::Nested;
pub use self::pipeline::Pipeline;
pub use self::question::{Question, Subject};
pub use self::questions::{AnswerError, Attendance, PRESENT_FOR, Questions, Verdict, digest};
pub use self::quota::{Ledger, LedgerError, Taken};
pub use self::recorder::CALL_LOG;
pub use self::request::CallRequest;
pub use self::services::Services;
pub use self::timing::StageTimes;
pub use toolhost_call::call::{
    Answer, ApprovalRequest, Approver, CallOutcome, CallStatus, ErrorKind, Progress, ProgressSink,
};
