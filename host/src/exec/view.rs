//! What a caller may see of the daemon: the tools its `[[callers]]` profile lets through, for
//! listings, `/health` and `/metrics` alike. Decides visibility only; calls are decided by the
//! pipeline.

use toolhost_gate::caller::{Access, Caller};

use super::Pipeline;

impl Pipeline {
    /// Whether `caller` may see `tool`: every tool for the local operator and for callers without a
    /// profile; the profile's tools otherwise (none, when no profile matches).
    pub fn sees(&self, caller: Option<&Caller>, tool: &str) -> bool {
        match caller.map(|c| self.config().callers.access(c)) {
            None | Some(Access::Unprofiled) => true,
            Some(Access::Profile(p)) => p.allows_tool(tool),
            Some(Access::Denied) => false,
        }
    }

    /// Whether a listing for `caller` names `tool`: a tool it sees, within `server.short-list`
    /// when one is set (the others stay callable, and `search_tools` finds them).
    pub fn lists(&self, caller: Option<&Caller>, tool: &str) -> bool {
        let short = &self.config().server.short_list;
        (short.is_empty() || short.iter().any(|p| p.matches(tool))) && self.sees(caller, tool)
    }

    /// Whether `caller` sees the whole daemon, as the operator does: the local operator, and every
    /// caller when no `[[callers]]` profiles are configured. A profiled caller's view is narrowed
    /// to its tools, and leaves out what no tool of theirs did (calls of unknown names).
    pub fn sees_everything(&self, caller: Option<&Caller>) -> bool {
        match caller.map(|c| self.config().callers.access(c)) {
            None | Some(Access::Unprofiled) => true,
            Some(Access::Profile(_) | Access::Denied) => false,
        }
    }
}
