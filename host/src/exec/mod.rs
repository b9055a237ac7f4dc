//! The one path every call takes: find -> validate -> gate -> execute -> shape -> record.
//! Front ends (CLI, MCP, batch API) build a [`CallRequest`] and get a [`CallOutcome`]; they never reach
//! past this module into the sandbox or the gate.

mod checks;
mod health;
mod pipeline;
mod quiet;
mod request;
mod shape;
mod timing;
mod view;

pub use self::health::ToolsHealth;
pub use self::pipeline::Pipeline;
pub use self::request::CallRequest;
pub use self::timing::StageTimes;
pub use toolhost_policy::call::{
    ApprovalRequest, Approver, CallOutcome, CallStatus, ErrorKind, Progress, ProgressSink,
};
