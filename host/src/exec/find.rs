//! The find stage: who asks and which tool they mean. A caller's profile narrows what it sees (a
//! caller no profile matches sees nothing); a tool it may not see is as unknown as a made-up name.
//! A tool that is not served yet may be in a plugin still loading, and is waited for.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolhost_policy::call::ErrorKind;
use toolhost_policy::caller::{Access, NO_PROFILE, Profile, Profiles};

use super::request::CallRequest;
use super::services::LOAD_WAIT;
use super::shape;
use crate::audit::AuditLog;
use crate::registry::{Registry, Tool};

/// The find stage, over the registry, the callers' profiles and the audit log.
pub(super) struct Find<'a> {
    pub(super) registry: &'a Registry,
    pub(super) callers: &'a Profiles,
    pub(super) audit: &'a AuditLog,
    /// Cancelled once shutdown starts: a wait for a loading plugin ends then.
    pub(super) stopping: &'a CancellationToken,
}

/// A call's tool, and the profile of the caller that asks for it (none for the local operator
/// and where no profiles are configured).
pub(super) struct Found<'a> {
    pub(super) tool: Arc<Tool>,
    pub(super) profile: Option<&'a Profile>,
}

impl<'a> Find<'a> {
    /// The tool `req` names, as its caller sees it; or the kind and sentence the call ends with.
    pub(super) async fn find(&self, req: &CallRequest) -> Result<Found<'a>, (ErrorKind, String)> {
        if self.audit.refuses_on_failure() && self.audit.is_failing() {
            return Err((ErrorKind::AuditUnavailable, shape::audit_unavailable()));
        }
        if req.cancel.is_cancelled() {
            return Err((ErrorKind::Cancelled, shape::cancelled(&req.tool)));
        }
        let profile = match req.caller.as_deref().map(|c| self.callers.access(c)) {
            None | Some(Access::Unprofiled) => None,
            Some(Access::Profile(p)) => Some(p),
            Some(Access::Denied) => {
                let message = format!("Permission denied: {NO_PROFILE}.");
                return Err((ErrorKind::Denied, message));
            }
        };
        let sees = |name: &str| profile.is_none_or(|p| p.allows_tool(name));
        let mut catalog = self.registry.catalog();
        if catalog.get(&req.tool).is_none() && catalog.is_loading() && sees(&req.tool) {
            let stop = self.stopping.child_token();
            let cancel = req.cancel.clone();
            let waited = async {
                tokio::select! {
                    c = self.registry.loaded(&req.tool, LOAD_WAIT, &stop) => c,
                    () = cancel.cancelled() => self.registry.catalog(),
                }
            };
            catalog = waited.await;
        }
        if let Some(tool) = catalog.get(&req.tool).filter(|_| sees(&req.tool)) {
            return Ok(Found {
                tool: tool.clone(),
                profile,
            });
        }
        if req.cancel.is_cancelled() {
            return Err((ErrorKind::Cancelled, shape::cancelled(&req.tool)));
        }
        if catalog.is_loading() && sees(&req.tool) {
            let loading = catalog.loading.keys();
            return Err((
                ErrorKind::UnknownTool,
                shape::still_loading(&req.tool, LOAD_WAIT, loading),
            ));
        }
        let known = catalog.tools.keys().filter(|n| sees(n));
        Err((
            ErrorKind::UnknownTool,
            shape::unknown_tool(&req.tool, known),
        ))
    }
}
