//! The gate every call passes before it runs: its input is checked against the tool's JSON Schema
//! (and safely coerced), then the permission rules decide whether it runs, needs approval, or not.
//! Pure code: no wasmtime, no clock, no writes; the one read is [`Mounts`] resolving a path's links
//! inside the plugin's granted directories. The pipeline in `exec` calls it and acts on the answer.

mod beneath;
mod coerce;
mod cost;
mod decision;
pub mod defaults;
mod guard;
mod limits;
mod mode;
mod mounts;
mod path;
mod permission;
mod rule;
mod subject;
mod validate;
mod violation;

pub use self::coerce::Coercion;
pub use self::cost::{CostError, INLINE_EVALUATIONS, MAX_EVALUATIONS};
pub use self::decision::{Decision, MatchedRule};
pub use self::guard::{Denial, PathGuard, Refusal};
pub use self::limits::InputLimits;
pub use self::mode::{Mode, UnknownMode};
pub use self::mounts::{Mounts, Resolved, Unresolved, guest_root};
pub use self::permission::{CallerRules, PermissionConfig, Permissions, Preview};
pub use self::rule::{Rule, RuleError, RuleKind, RuleProblem, Scope, ToolPattern};
pub use self::validate::{
    InputValidator, InvalidInput, InvalidOutput, OutputValidator, SchemaError, Validated,
};
