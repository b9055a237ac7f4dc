//! The per-call `WasiHttpHooks`: every outgoing `wasi:http` request of a plugin passes here, and only
//! here (wasi:http does not go through wasi:sockets' checks).
//!
//! It counts the request, has the [`Plan`] decide, has the transport send, and logs every refusal or
//! failure with the plugin's name and the destination (`scheme://host:port` only, never a path or
//! query, which may carry secrets). Redirects are not followed: a 3xx goes back to the guest, and a
//! guest that follows it sends a new request through this same hook, checked from scratch. Must not
//! decide policy itself nor do I/O itself.

use std::future::Future;
use std::sync::Arc;

use http::{Request, Response};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use super::super::budget::FileBudget;
use super::super::secrets::Secrets;
use super::plan::Plan;
use super::refusal::{NetError, Reporter};
use super::transport::{self, IoFuture};
use toolhost_gate::network::NetworkGrant;

type SendFuture =
    Box<dyn Future<Output = Result<(Response<WasiBody>, IoFuture), HttpError>> + Send>;

/// A plugin's network grant, bound once when the plugin is loaded; every call's hooks start from
/// it (with the call's secrets: the plugin's and its caller's).
#[derive(Debug)]
pub(crate) struct Binding {
    plugin: String,
    grant: Option<NetworkGrant>,
}

impl Binding {
    /// `plugin`'s binding; `grant: None` refuses every request.
    pub(crate) fn new(plugin: &str, grant: Option<&NetworkGrant>) -> Self {
        Self {
            plugin: plugin.to_string(),
            grant: grant.cloned(),
        }
    }
}

/// The per-call `WasiHttpHooks`: the plugin's binding, the call's request count, and why its
/// requests were refused or failed (the guest sees only the `wasi:http` code; the model is told why).
pub(crate) struct NetworkHooks {
    binding: Arc<Binding>,
    /// The headers to add: the plugin's secrets and the caller's credentials for this call.
    secrets: Arc<Secrets>,
    sent: u32,
    reporter: Reporter,
    /// The daemon-wide descriptor budget each connection counts against; `None` in unit tests.
    budget: Option<Arc<FileBudget>>,
}

impl NetworkHooks {
    /// Hooks for one call with `binding`, adding the headers of `secrets` (the call's).
    pub(crate) fn new(binding: Arc<Binding>, secrets: Arc<Secrets>) -> Self {
        Self {
            sent: 0,
            reporter: Reporter::new(binding.plugin.clone()),
            secrets,
            binding,
            budget: None,
        }
    }

    /// Count each connection against the daemon-wide descriptor budget.
    pub(crate) fn with_budget(mut self, budget: Arc<FileBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Why this call's requests were refused or failed, in order (the first few).
    pub(crate) fn take_notes(&self) -> Vec<String> {
        self.reporter.take_notes()
    }

    /// The checks before any lookup: grant, request count, URL, allowlist.
    fn plan<B>(&mut self, req: &Request<B>) -> Result<Plan, NetError> {
        let b = &*self.binding;
        let Some(grant) = &b.grant else {
            return Err(NetError::NotGranted(b.plugin.clone()));
        };
        self.sent += 1;
        Plan::new(grant, self.secrets.headers(), self.sent, req.uri())
    }
}

impl WasiHttpHooks for NetworkHooks {
    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let plan = self.plan(&request);
        let budget = self.budget.clone();
        let reporter = self.reporter.clone();
        Box::new(async move {
            let result = match plan {
                Ok(plan) => transport::send(reporter.clone(), plan, budget, request, options).await,
                Err(e) => Err(e),
            };
            result.map_err(|e| reporter.report(e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_gate::network::Destination;

    fn no_secrets() -> Arc<Secrets> {
        Arc::new(Secrets::bind(&[]).unwrap())
    }

    fn request(url: &str) -> Request<()> {
        Request::get(url).body(()).unwrap()
    }

    #[test]
    fn no_grant_refuses_everything() {
        let mut h = NetworkHooks::new(Arc::new(Binding::new("p", None)), no_secrets());
        assert_eq!(
            h.plan(&request("https://example.com/")).unwrap_err(),
            NetError::NotGranted("p".into())
        );
        assert!(
            NetError::NotGranted("p".into())
                .to_string()
                .starts_with("network is not granted to plugin p"),
        );
    }

    #[tokio::test]
    async fn a_refused_request_reaches_the_guest_as_denied() {
        use http_body_util::BodyExt;
        let body = http_body_util::Empty::new()
            .map_err(|e: std::convert::Infallible| -> HttpError { match e {} })
            .boxed_unsync();
        let req = Request::get("https://example.com/").body(body).unwrap();
        let mut h = NetworkHooks::new(Arc::new(Binding::new("p", None)), no_secrets());
        let sent = h.send_request(req, None, Box::new(async { Ok(()) }));
        let e = Box::into_pin(sent).await.err().unwrap();
        assert!(matches!(e, HttpError::HttpRequestDenied), "{e:?}");
    }

    #[test]
    fn counts_requests_per_call() {
        let mut grant = NetworkGrant::new(vec![Destination::parse("https://example.com").unwrap()]);
        grant.limits.max_requests = 2;
        let mut h = NetworkHooks::new(Arc::new(Binding::new("p", Some(&grant))), no_secrets());
        assert!(h.plan(&request("https://example.com/")).is_ok());
        assert!(h.plan(&request("https://example.com/")).is_ok());
        assert_eq!(
            h.plan(&request("https://example.com/")).unwrap_err(),
            NetError::TooManyRequests(2)
        );
    }
}
