//! The one path every call takes: find -> validate -> gate -> execute -> shape -> record.
//! Front ends (CLI, MCP, batch API) build a [`CallRequest`] and get a [`CallOutcome`]; they never reach
//! past this module into the sandbox or the gate.

mod checks;
mod pipeline;
mod shape;
mod timing;
mod types;

pub use self::pipeline::Pipeline;
pub use self::timing::StageTimes;
pub use self::types::{
    ApprovalRequest, Approver, CallOutcome, CallRequest, ErrorKind, Progress, ProgressSink,
};
