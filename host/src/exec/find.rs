//! The find stage: who asks and which tool they mean. A caller's profile narrows what it sees (a
//! caller no profile matches sees nothing); a tool it may not see is as unknown as a made-up name.
//! A tool that is not served yet may be in a plugin still loading, and is waited for.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolhost_call::call::ErrorKind;
use toolhost_gate::caller::{Access, NO_PROFILE, Profile, Profiles};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::fixture::Fixture;
    use toolhost_gate::caller::Caller;

    fn request(tool: &str, caller: Option<Caller>) -> CallRequest {
        CallRequest {
            tool: tool.into(),
            caller: caller.map(Arc::new),
            ..CallRequest::default()
        }
    }

    fn caller(subject: &str) -> Caller {
        Caller {
            issuer: "https://issuer.test".into(),
            subject: subject.into(),
            ..Caller::default()
        }
    }

    async fn find(fixture: &Fixture, req: &CallRequest) -> Result<String, (ErrorKind, String)> {
        let s = &fixture.services;
        let stage = Find {
            registry: &s.registry,
            callers: &s.config.callers,
            audit: &s.audit,
            stopping: s.admission.stopping(),
        };
        stage
            .find(req)
            .await
            .map(|found| found.tool.spec.name.clone())
    }

    #[tokio::test]
    async fn finds_a_served_tool_and_names_the_closest_for_a_typo() {
        let fixture = Fixture::open("").await;
        assert_eq!(
            find(&fixture, &request("double", None)).await.unwrap(),
            "double"
        );
        let (kind, message) = find(&fixture, &request("doubel", None)).await.unwrap_err();
        assert_eq!(kind, ErrorKind::UnknownTool);
        assert!(message.contains("double"), "{message}");
    }

    #[tokio::test]
    async fn a_profile_hides_other_tools_and_a_caller_no_profile_matches_gets_nothing() {
        // Profiles match authenticated callers, so a token is configured (any variable that is
        // set will do: none is presented here).
        let fixture = Fixture::open(
            r#"
            server.token-env = "PATH"

            [[callers]]
            name = "readers"
            match = { sub = "reader" }
            tools = ["echo"]

            [[callers]]
            name = "doublers"
            match = { sub = "doubler" }
            tools = ["double"]
            "#,
        )
        .await;
        let doubler = request("double", Some(caller("doubler")));
        assert_eq!(find(&fixture, &doubler).await.unwrap(), "double");
        // Hidden exactly as a made-up name is: no hint that it exists.
        let (kind, message) = find(&fixture, &request("double", Some(caller("reader"))))
            .await
            .unwrap_err();
        assert_eq!(kind, ErrorKind::UnknownTool);
        let (_, made_up) = find(&fixture, &request("nosuch", Some(caller("reader"))))
            .await
            .unwrap_err();
        assert_eq!(
            message.replace("double", "X"),
            made_up.replace("nosuch", "X")
        );
        let (kind, message) = find(&fixture, &request("double", Some(caller("stranger"))))
            .await
            .unwrap_err();
        assert_eq!(kind, ErrorKind::Denied);
        assert!(message.contains(NO_PROFILE), "{message}");
        // The local operator (no caller) sees every tool.
        assert!(find(&fixture, &request("double", None)).await.is_ok());
    }

    #[tokio::test]
    async fn a_call_cancelled_before_it_is_found_ends_cancelled() {
        let fixture = Fixture::open("").await;
        let req = request("double", None);
        req.cancel.cancel();
        let (kind, _) = find(&fixture, &req).await.unwrap_err();
        assert_eq!(kind, ErrorKind::Cancelled);
    }
}
