//! The send-request hook: every outgoing `wasi:http` request of a plugin passes here, and only here.
//!
//! wasi:http does not go through wasi:sockets' checks, so this is where the policy is enforced, in order:
//! the plugin must hold a grant; the URL's scheme, host and port must match an allowlist pattern; the
//! host resolves the name itself and refuses if any address is loopback, private, link-local,
//! unique-local (unless `allow-private`), a metadata endpoint, unspecified, multicast or reserved;
//! it then connects to exactly the addresses it checked (no second lookup, so no DNS-rebinding window)
//! and speaks TLS with the original name as SNI and for certificate checks (webpki roots). Guest-set
//! `Authorization`/`Cookie` headers are removed unless the destination is in `guest-credentials`;
//! granted secret headers are added for their destinations only. Bodies are capped both ways and the
//! whole exchange has a connect and a total deadline.
//!
//! Redirects are not followed here: a 3xx goes back to the guest, and a guest that follows it sends a
//! new request through this same hook, checked from scratch.
//!
//! Every refusal reaches the guest as `error-code.internal-error(some(message))`, the message saying
//! why; messages name `scheme://host:port` only, never a path or query (which may carry secrets).

use std::future::{Future, poll_fn};
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Request, Response, header};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use super::super::budget::FileBudget;
use super::body::{Direction, Guarded};
use toolhost_policy::network::{
    AddressClass, DestinationError, Host, NetworkGrant, NetworkLimits, Redactor, SecretGrant,
    Target, classify,
};

/// Why the host refused or failed an outgoing request. The text goes to the guest and the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The plugin holds no network grant (it imports `wasi:http`, so it loaded, but may not send).
    #[error(
        "network is not granted to plugin {0}: grant it with `[plugins.{0}.network]` \
         `allow = [\"https://host\"]` in toolhost.toml"
    )]
    NotGranted(String),
    /// The per-call request budget is spent.
    #[error(
        "denied by the network policy: this call already sent {0} requests, the limit (network.max-requests)"
    )]
    TooManyRequests(u32),
    /// The URL's scheme or authority is not usable.
    #[error("invalid request URL: {0}")]
    BadUrl(DestinationError),
    /// The destination matches no allowlist pattern.
    #[error(
        "denied by the network policy: {target} is not in this plugin's allowlist (allowed: {allowed})"
    )]
    NotAllowed {
        /// `scheme://host:port`.
        target: String,
        /// The patterns, comma-separated.
        allowed: String,
    },
    /// Name resolution failed.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The name.
        host: String,
        /// The resolver's message.
        reason: String,
    },
    /// The destination is (or resolves to) an address the grant does not allow.
    #[error("denied by the network policy: {target} resolves to {ip}, {class}; {hint}")]
    Address {
        /// `scheme://host:port`.
        target: String,
        /// The refused address.
        ip: IpAddr,
        /// What kind of address it is.
        class: String,
        /// What would allow it, if anything.
        hint: &'static str,
    },
    /// Resolving and connecting took longer than the connect timeout.
    #[error("connecting to {target} timed out after {ms} ms (network.connect-timeout-ms)")]
    ConnectTimeout {
        /// `scheme://host:port`.
        target: String,
        /// The timeout.
        ms: u64,
    },
    /// TCP connect failed.
    #[error("cannot connect to {target} ({addr}): {reason}")]
    Connect {
        /// `scheme://host:port`.
        target: String,
        /// The address tried last.
        addr: SocketAddr,
        /// The OS error.
        reason: String,
    },
    /// The TLS handshake failed (certificate, protocol).
    #[error("TLS with {target} failed: {reason}")]
    Tls {
        /// `scheme://host:port`.
        target: String,
        /// Why.
        reason: String,
    },
    /// The exchange took longer than the request timeout.
    #[error("the request to {target} timed out after {ms} ms (network.request-timeout-ms)")]
    Timeout {
        /// `scheme://host:port`.
        target: String,
        /// The timeout.
        ms: u64,
    },
    /// The guest's request body is too large.
    #[error("the request body exceeds the limit of {limit} bytes (network.max-request-kb)")]
    RequestTooLarge {
        /// The limit.
        limit: u64,
    },
    /// The response body is too large.
    #[error("the response from {target} is larger than the limit of {limit} bytes{} (network.max-response-kb)",
        .declared.map(|n| format!(": it declares {n} bytes")).unwrap_or_default())]
    ResponseTooLarge {
        /// `scheme://host:port`.
        target: String,
        /// The `Content-Length`, when the server sent one.
        declared: Option<u64>,
        /// The limit.
        limit: u64,
    },
    /// The daemon-wide descriptor budget is spent: no connection was opened.
    #[error(
        "toolhost's open-file budget is exhausted: all calls together may hold {limit} files, \
         directories and connections (`[engine] open-files`); no connection was opened for this request"
    )]
    Budget {
        /// The daemon-wide limit.
        limit: usize,
    },
    /// HTTP-level failure (malformed response, connection closed early).
    #[error("HTTP exchange with {target} failed: {reason}")]
    Protocol {
        /// `scheme://host:port`.
        target: String,
        /// hyper's message.
        reason: String,
    },
}

impl NetError {
    /// Whether the policy refused (as opposed to the network failing).
    pub fn is_denial(&self) -> bool {
        matches!(
            self,
            Self::NotGranted(_)
                | Self::TooManyRequests(_)
                | Self::NotAllowed { .. }
                | Self::Address { .. }
        )
    }

    /// The wasi:http error the guest receives: the message, verbatim.
    pub(super) fn into_http(self) -> HttpError {
        HttpError::InternalError(Some(self.to_string()))
    }
}

/// The per-call `WasiHttpHooks`: the plugin's grant, its secret headers, and the request count.
pub(crate) struct NetworkHooks {
    plugin: String,
    grant: Option<Arc<NetworkGrant>>,
    secrets: Arc<[SecretGrant]>,
    redactor: Redactor,
    sent: u32,
    /// The daemon-wide descriptor budget each connection counts against; `None` in unit tests.
    budget: Option<Arc<FileBudget>>,
}

impl NetworkHooks {
    /// Hooks for one call of `plugin`; `grant: None` refuses every request.
    pub(crate) fn new(plugin: &str, grant: Option<&NetworkGrant>, secrets: &[SecretGrant]) -> Self {
        Self {
            plugin: plugin.to_string(),
            grant: grant.cloned().map(Arc::new),
            secrets: secrets
                .iter()
                .filter(|s| s.header.is_some())
                .cloned()
                .collect(),
            redactor: Redactor::new(secrets.iter().map(|s| &s.value)),
            sent: 0,
            budget: None,
        }
    }

    /// Count each connection against the daemon-wide descriptor budget.
    pub(crate) fn with_budget(mut self, budget: Arc<FileBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Replaces the plugin's secrets in text leaving the sandbox.
    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The synchronous checks: grant, budget, URL, allowlist; and the headers for this destination.
    fn plan(&mut self, req: &Request<WasiBody>) -> Result<Plan, NetError> {
        let grant = self
            .grant
            .clone()
            .ok_or_else(|| NetError::NotGranted(self.plugin.clone()))?;
        self.sent += 1;
        if self.sent > grant.limits.max_requests {
            return Err(NetError::TooManyRequests(grant.limits.max_requests));
        }
        let uri = req.uri();
        let target = Target::new(
            uri.scheme_str().unwrap_or(""),
            uri.authority().map(|a| a.as_str()).unwrap_or(""),
        )
        .map_err(NetError::BadUrl)?;
        if !grant.allows(&target) {
            let allowed: Vec<String> = grant.allow.iter().map(ToString::to_string).collect();
            return Err(NetError::NotAllowed {
                target: target.to_string(),
                allowed: allowed.join(", "),
            });
        }
        let mut add = Vec::new();
        for s in self.secrets.iter() {
            let Some(h) = &s.header else { continue };
            if h.destinations.iter().any(|d| d.matches(&target)) {
                // Validated by config; a bad one is skipped rather than sent malformed.
                if let (Ok(name), Ok(mut value)) = (
                    HeaderName::from_bytes(h.name.as_bytes()),
                    HeaderValue::from_str(h.value.expose()),
                ) {
                    value.set_sensitive(true);
                    add.push((name, value));
                }
            }
        }
        Ok(Plan {
            keep_credentials: grant.guest_credentials.iter().any(|d| d.matches(&target)),
            allow_private: grant.allow_private,
            limits: grant.limits,
            target,
            add,
            budget: self.budget.clone(),
        })
    }
}

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(Response<WasiBody>, IoFuture), HttpError>> + Send>;

impl WasiHttpHooks for NetworkHooks {
    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let plan = self.plan(&request);
        let plugin = self.plugin.clone();
        Box::new(async move {
            let result = match plan {
                Ok(plan) => plan.send(request, options).await,
                Err(e) => Err(e),
            };
            result.map_err(|e| {
                if e.is_denial() {
                    tracing::warn!(plugin, "outgoing request refused: {e}");
                } else {
                    tracing::info!(plugin, "outgoing request failed: {e}");
                }
                e.into_http()
            })
        })
    }
}

/// A request that passed the synchronous checks, with what the host adds to it. `Debug` is safe:
/// secret header values are marked sensitive and print as `Sensitive`.
#[derive(Debug)]
struct Plan {
    target: Target,
    limits: NetworkLimits,
    allow_private: bool,
    keep_credentials: bool,
    add: Vec<(HeaderName, HeaderValue)>,
    budget: Option<Arc<FileBudget>>,
}

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

impl Plan {
    async fn send(
        self,
        mut req: Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> Result<(Response<WasiBody>, IoFuture), NetError> {
        let limits = self.limits;
        let target = self.target.to_string();
        let started = Instant::now();
        let deadline = started + limits.request_timeout;
        let timeout_ms = limits.request_timeout.as_millis() as u64;
        let guest = options.unwrap_or_default();
        let connect_timeout = shorter(
            limits.connect_timeout.min(limits.request_timeout),
            guest.connect_timeout,
        );

        if let Some(n) = content_length(req.headers())
            && n > limits.max_request_bytes
        {
            return Err(NetError::RequestTooLarge {
                limit: limits.max_request_bytes,
            });
        }
        self.rewrite(&mut req);
        let req = req.map(|b| {
            Guarded::new(
                b,
                Direction::Request,
                target.clone(),
                limits.max_request_bytes,
                None,
            )
            .boxed_unsync()
        });

        // The socket is a descriptor of the daemon's: it holds a unit of the budget until it closes.
        let unit = match &self.budget {
            Some(b) => Some(b.take(0).map_err(|e| NetError::Budget { limit: e.limit })?),
            None => None,
        };
        let connected = tokio::time::timeout(connect_timeout, self.connect()).await;
        let stream = connected.map_err(|_| NetError::ConnectTimeout {
            target: target.clone(),
            ms: connect_timeout.as_millis() as u64,
        })??;
        let exchange = async {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| protocol(&target, &e))?;
            let mut conn = Some(conn);
            let mut send = pin!(sender.send_request(req));
            // Drive the connection while waiting for the response head, as hyper needs.
            let res = poll_fn(|cx| match send.as_mut().poll(cx) {
                Poll::Ready(r) => Poll::Ready(r.map_err(|e| protocol(&target, &e))),
                Poll::Pending => match conn.as_mut() {
                    None => Poll::Pending,
                    Some(c) => match Pin::new(c).poll(cx) {
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(Ok(())) => {
                            conn = None;
                            send.as_mut().poll(cx).map_err(|e| protocol(&target, &e))
                        }
                        Poll::Ready(Err(e)) => {
                            conn = None;
                            Poll::Ready(Err(protocol(&target, &e)))
                        }
                    },
                },
            })
            .await?;
            Ok::<_, NetError>((res, conn))
        };
        let first_byte = match guest.first_byte_timeout {
            Some(t) => deadline.min(Instant::now() + t),
            None => deadline,
        };
        let (res, conn) = tokio::time::timeout_at(first_byte, exchange)
            .await
            .map_err(|_| NetError::Timeout {
                target: target.clone(),
                ms: (first_byte - started).as_millis() as u64,
            })??;

        let (parts, incoming) = res.into_parts();
        if let Some(n) = content_length(&parts.headers)
            && n > limits.max_response_bytes
        {
            return Err(NetError::ResponseTooLarge {
                target,
                declared: Some(n),
                limit: limits.max_response_bytes,
            });
        }
        let body = Guarded::new(
            incoming,
            Direction::Response,
            target.clone(),
            limits.max_response_bytes,
            Some((deadline, limits.request_timeout)),
        );
        let io: IoFuture = Box::new(async move {
            let _unit = unit;
            let Some(conn) = conn else { return Ok(()) };
            match tokio::time::timeout_at(deadline, conn).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(protocol(&target, &e).into_http()),
                Err(_) => Err(NetError::Timeout {
                    target,
                    ms: timeout_ms,
                }
                .into_http()),
            }
        });
        Ok((Response::from_parts(parts, body.boxed_unsync()), io))
    }

    /// Origin-form URI, our own `Host`, credentials and secret headers per the grant.
    fn rewrite(&self, req: &mut Request<WasiBody>) {
        let path = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        *req.uri_mut() = http::Uri::builder()
            .path_and_query(path)
            .build()
            .unwrap_or_else(|_| http::Uri::from_static("/"));
        let headers = req.headers_mut();
        if let Ok(host) = HeaderValue::from_str(&self.target.authority()) {
            headers.insert(header::HOST, host);
        }
        // wasi:http already forbids guests to set Proxy-Authorization; no proxy is ever used anyway.
        headers.remove(header::PROXY_AUTHORIZATION);
        if !self.keep_credentials {
            for name in [header::AUTHORIZATION, header::COOKIE] {
                if headers.remove(&name).is_some() {
                    tracing::warn!(
                        target = %self.target,
                        "removed the plugin's own `{name}` header: credentials to this destination are not \
                         granted (network.guest-credentials)"
                    );
                }
            }
        }
        for (name, value) in &self.add {
            headers.insert(name.clone(), value.clone());
        }
    }

    /// Resolve, vet every address, connect to one of them, and speak TLS for https.
    async fn connect(&self) -> Result<Box<dyn Stream>, NetError> {
        let addrs = resolve(&self.target).await?;
        for a in &addrs {
            let class = classify(a.ip());
            if !class.is_allowed(self.allow_private) {
                return Err(NetError::Address {
                    target: self.target.to_string(),
                    ip: a.ip(),
                    class: class.to_string(),
                    hint: hint(class, self.allow_private),
                });
            }
        }
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return self.wrap_tls(s).await;
                }
                Err(e) => last = Some((addr, e)),
            }
        }
        let (addr, e) = last.expect("resolve returns at least one address");
        Err(NetError::Connect {
            target: self.target.to_string(),
            addr,
            reason: e.to_string(),
        })
    }

    async fn wrap_tls(&self, tcp: TcpStream) -> Result<Box<dyn Stream>, NetError> {
        use toolhost_policy::network::Scheme;
        if self.target.scheme == Scheme::Http {
            return Ok(Box::new(tcp));
        }
        let tls_error = |reason: String| NetError::Tls {
            target: self.target.to_string(),
            reason,
        };
        let config = tls_config().map_err(tls_error)?;
        let name = match &self.target.host {
            Host::Ip(ip) => rustls::pki_types::ServerName::from(*ip),
            Host::Name(n) => rustls::pki_types::ServerName::try_from(n.clone())
                .map_err(|e| tls_error(e.to_string()))?,
        };
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| tls_error(e.to_string()))?;
        Ok(Box::new(stream))
    }
}

/// Every address of the target: the literal, or what the system resolver returns for the name.
async fn resolve(target: &Target) -> Result<Vec<SocketAddr>, NetError> {
    let addrs: Vec<SocketAddr> = match &target.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
        Host::Name(name) => tokio::net::lookup_host((name.as_str(), target.port))
            .await
            .map_err(|e| NetError::Resolve {
                host: name.clone(),
                reason: e.to_string(),
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(NetError::Resolve {
            host: target.host.to_string(),
            reason: "no addresses".into(),
        });
    }
    Ok(addrs)
}

fn hint(class: AddressClass, allow_private: bool) -> &'static str {
    if class.is_private() && !allow_private {
        "private addresses are refused unless the grant sets `allow-private = true`"
    } else {
        "such addresses are always refused"
    }
}

/// One client configuration for the process: webpki roots, HTTP/1.1 by ALPN, ring.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

fn content_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn shorter(policy: Duration, guest: Option<Duration>) -> Duration {
    guest.map_or(policy, |g| g.min(policy))
}

/// hyper's error, unless it carries one of ours (a body cut by [`Guarded`]).
fn protocol(target: &str, e: &hyper::Error) -> NetError {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(HttpError::InternalError(Some(m))) = s.downcast_ref::<HttpError>() {
            return NetError::Protocol {
                target: target.to_string(),
                reason: m.clone(),
            };
        }
        source = s.source();
    }
    NetError::Protocol {
        target: target.to_string(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_policy::network::Destination;

    fn hooks(allow: &[&str], allow_private: bool) -> NetworkHooks {
        let mut grant = NetworkGrant::new(
            allow
                .iter()
                .map(|d| Destination::parse(d).unwrap())
                .collect(),
        );
        grant.allow_private = allow_private;
        NetworkHooks::new("p", Some(&grant), &[])
    }

    fn request(url: &str) -> Request<WasiBody> {
        let body = http_body_util::Empty::new()
            .map_err(|e: std::convert::Infallible| -> HttpError { match e {} })
            .boxed_unsync();
        Request::get(url).body(body).unwrap()
    }

    #[test]
    fn plans_only_allowed_destinations() {
        let mut h = hooks(&["http://127.0.0.1:8080"], true);
        assert!(h.plan(&request("http://127.0.0.1:8080/x?y")).is_ok());
        let e = h.plan(&request("http://127.0.0.1:8081/")).unwrap_err();
        assert!(
            e.to_string()
                .contains("http://127.0.0.1:8081 is not in this plugin's allowlist"),
            "{e}"
        );
        assert!(!e.to_string().contains("/x"), "{e}");
        let e = h.plan(&request("https://127.0.0.1:8080/")).unwrap_err();
        assert!(matches!(e, NetError::NotAllowed { .. }), "{e}");
    }

    #[test]
    fn no_grant_refuses_everything() {
        let mut h = NetworkHooks::new("p", None, &[]);
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

    #[test]
    fn counts_requests_per_call() {
        let mut grant = NetworkGrant::new(vec![Destination::parse("https://example.com").unwrap()]);
        grant.limits.max_requests = 2;
        let mut h = NetworkHooks::new("p", Some(&grant), &[]);
        assert!(h.plan(&request("https://example.com/")).is_ok());
        assert!(h.plan(&request("https://example.com/")).is_ok());
        assert_eq!(
            h.plan(&request("https://example.com/")).unwrap_err(),
            NetError::TooManyRequests(2)
        );
    }

    #[test]
    fn strips_guest_credentials_and_adds_secret_headers_for_their_destination() {
        use toolhost_policy::network::{Secret, SecretHeader};
        let api = Destination::parse("https://api.example.com").unwrap();
        let other = Destination::parse("https://other.example.com:8443").unwrap();
        let mut grant = NetworkGrant::new(vec![api.clone(), other.clone()]);
        let secret = SecretGrant {
            name: "t".into(),
            value: Secret::new("0123456789"),
            env: None,
            header: Some(SecretHeader {
                name: "authorization".into(),
                value: Secret::new("Bearer 0123456789"),
                destinations: vec![api],
            }),
        };
        let rewritten = |grant: &NetworkGrant, url: &str| {
            let mut h = NetworkHooks::new("p", Some(grant), std::slice::from_ref(&secret));
            let mut req = request(url);
            req.headers_mut().insert(
                header::AUTHORIZATION,
                HeaderValue::from_static("Bearer guest"),
            );
            req.headers_mut()
                .insert(header::COOKIE, HeaderValue::from_static("session=guest"));
            h.plan(&req).unwrap().rewrite(&mut req);
            req
        };
        let req = rewritten(&grant, "https://other.example.com:8443/x?y=1");
        assert!(req.headers().get(header::AUTHORIZATION).is_none());
        assert!(req.headers().get(header::COOKIE).is_none());
        assert_eq!(req.headers()[header::HOST], "other.example.com:8443");
        assert_eq!(req.uri(), "/x?y=1");
        let req = rewritten(&grant, "https://api.example.com/");
        assert_eq!(req.headers()[header::AUTHORIZATION], "Bearer 0123456789");
        assert_eq!(req.headers()[header::HOST], "api.example.com");
        grant.guest_credentials = vec![other];
        let req = rewritten(&grant, "https://other.example.com:8443/");
        assert_eq!(req.headers()[header::AUTHORIZATION], "Bearer guest");
        assert_eq!(req.headers()[header::COOKIE], "session=guest");
    }

    #[tokio::test]
    async fn refuses_private_addresses_without_allow_private() {
        let mut h = hooks(
            &[
                "http://127.0.0.1:9",
                "http://localhost:9",
                "http://[::ffff:169.254.169.254]:9",
            ],
            false,
        );
        for url in ["http://127.0.0.1:9/", "http://localhost:9/"] {
            let plan = h.plan(&request(url)).unwrap();
            let e = plan.connect().await.err().unwrap();
            assert!(
                e.to_string()
                    .contains("a loopback address; private addresses are refused"),
                "{e}"
            );
        }
        let plan = h
            .plan(&request("http://[::ffff:169.254.169.254]:9/"))
            .unwrap();
        let e = plan.connect().await.err().unwrap();
        assert!(
            e.to_string()
                .contains("cloud metadata endpoint; such addresses are always refused"),
            "{e}"
        );
    }
}
