//! The I/O half of sending a planned request: resolve the name once, have the [`Plan`] vet every
//! address, connect to exactly those addresses (no second lookup, so no DNS-rebinding window), speak
//! TLS with the original name as SNI and for certificate checks (webpki roots), then HTTP/1.1 with
//! hyper under a connect and a total deadline, the bodies capped both ways.
//!
//! Must not decide policy (every yes or no is the plan's) nor choose what the guest sees (that is
//! `refusal`): failures are reported as [`NetError`]s with what was tried, and classified (refused,
//! unreachable, certificate, incomplete...) so that the guest gets the matching code.

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody};

use super::super::budget::FileBudget;
use super::body::{Direction, Guarded};
use super::plan::Plan;
use super::refusal::{ExchangeFailure, NetError, Reporter, TlsFailure};
use toolhost_gate::network::{Host, Scheme, Target};

/// Drives the connection after the response head arrived, until the body is read.
pub(super) type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// Send `req` as `plan` says; each connection holds a unit of `budget` (if any) until it closes.
/// Failures after the response head (the body, the connection) go to `reporter`.
pub(super) async fn send(
    reporter: Reporter,
    plan: Plan,
    budget: Option<Arc<FileBudget>>,
    mut req: Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<(Response<WasiBody>, IoFuture), NetError> {
    let limits = plan.limits;
    let target = plan.target.to_string();
    let started = Instant::now();
    let deadline = started + limits.request_timeout;
    let timeout_ms = limits.request_timeout.as_millis() as u64;
    let guest = options.unwrap_or_default();
    let connect_timeout = plan.connect_timeout(guest.connect_timeout);

    plan.check_request_length(req.headers())?;
    plan.rewrite(&mut req);
    let req = req.map(|b| {
        Guarded::new(
            b,
            Direction::Request,
            reporter.clone(),
            target.clone(),
            limits.max_request_bytes,
            None,
        )
        .boxed_unsync()
    });

    // The socket is a descriptor of the daemon's: it holds a unit of the budget until it closes.
    let unit = match &budget {
        Some(b) => Some(b.take(0).map_err(|e| NetError::Budget { limit: e.limit })?),
        None => None,
    };
    let stream = connect(&plan, connect_timeout).await?;
    let exchange = async {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| protocol(&plan, &e))?;
        let mut conn = Some(conn);
        let mut send = pin!(sender.send_request(req));
        // Drive the connection while waiting for the response head, as hyper needs.
        let res = poll_fn(|cx| match send.as_mut().poll(cx) {
            Poll::Ready(r) => Poll::Ready(r.map_err(|e| protocol(&plan, &e))),
            Poll::Pending => match conn.as_mut() {
                None => Poll::Pending,
                Some(c) => match Pin::new(c).poll(cx) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Ok(())) => {
                        conn = None;
                        send.as_mut().poll(cx).map_err(|e| protocol(&plan, &e))
                    }
                    Poll::Ready(Err(e)) => {
                        conn = None;
                        Poll::Ready(Err(protocol(&plan, &e)))
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
    plan.check_response_length(&parts.headers)?;
    let body = Guarded::new(
        incoming,
        Direction::Response,
        reporter.clone(),
        target.clone(),
        limits.max_response_bytes,
        Some((deadline, limits.request_timeout)),
    );
    let io: IoFuture = Box::new(async move {
        let _unit = unit;
        let Some(conn) = conn else { return Ok(()) };
        match tokio::time::timeout_at(deadline, conn).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(reporter.report(exchange_failure(&target, &e))),
            Err(_) => Err(reporter.report(NetError::Timeout {
                target,
                ms: timeout_ms,
            })),
        }
    });
    Ok((Response::from_parts(parts, body.boxed_unsync()), io))
}

/// Resolve, have the plan vet every address, connect to one of them, and speak TLS for https, all
/// within `timeout`.
async fn connect(plan: &Plan, timeout: Duration) -> Result<Box<dyn Stream>, NetError> {
    let deadline = Instant::now() + timeout;
    let ms = timeout.as_millis() as u64;
    let addrs = tokio::time::timeout_at(deadline, resolve(&plan.target))
        .await
        .map_err(|_| NetError::ResolveTimeout {
            host: plan.target.host.to_string(),
            ms,
        })??;
    plan.vet(&addrs)?;
    let connected = async {
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return wrap_tls(&plan.target, s).await;
                }
                Err(e) => last = Some((addr, e)),
            }
        }
        let (addr, e) = last.expect("resolve returns at least one address");
        Err(NetError::Connect {
            target: plan.target.to_string(),
            addr,
            kind: e.kind(),
            reason: e.to_string(),
        })
    };
    tokio::time::timeout_at(deadline, connected)
        .await
        .map_err(|_| NetError::ConnectTimeout {
            target: plan.target.to_string(),
            ms,
        })?
}

async fn wrap_tls(target: &Target, tcp: TcpStream) -> Result<Box<dyn Stream>, NetError> {
    if target.scheme == Scheme::Http {
        return Ok(Box::new(tcp));
    }
    let tls_error = |failure: TlsFailure, reason: String| NetError::Tls {
        target: target.to_string(),
        failure,
        reason,
    };
    let config = tls_config().map_err(|e| tls_error(TlsFailure::Protocol, e))?;
    let name = match &target.host {
        Host::Ip(ip) => rustls::pki_types::ServerName::from(*ip),
        Host::Name(n) => rustls::pki_types::ServerName::try_from(n.clone())
            .map_err(|e| tls_error(TlsFailure::Protocol, e.to_string()))?,
    };
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| tls_error(tls_failure(&e), e.to_string()))?;
    Ok(Box::new(stream))
}

/// What kind of TLS failure rustls reported through tokio-rustls's I/O error.
fn tls_failure(e: &std::io::Error) -> TlsFailure {
    match e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented) => {
            TlsFailure::Certificate
        }
        Some(rustls::Error::AlertReceived(alert)) => TlsFailure::Alert(u8::from(*alert)),
        _ => TlsFailure::Protocol,
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

/// hyper's error, unless it carries the request body cut by [`Guarded`] for its size.
fn protocol(plan: &Plan, e: &hyper::Error) -> NetError {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(HttpError::HttpRequestBodySize(declared)) = s.downcast_ref::<HttpError>() {
            return NetError::RequestTooLarge {
                declared: *declared,
                limit: plan.limits.max_request_bytes,
            };
        }
        source = s.source();
    }
    exchange_failure(&plan.target.to_string(), e)
}

/// hyper's error, classified.
fn exchange_failure(target: &str, e: &hyper::Error) -> NetError {
    let failure = if e.is_incomplete_message() {
        ExchangeFailure::Incomplete
    } else if e.is_closed() || e.is_canceled() {
        ExchangeFailure::Closed
    } else {
        ExchangeFailure::Malformed
    };
    NetError::Protocol {
        target: target.to_string(),
        failure,
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_gate::network::{Destination, NetworkGrant};

    #[tokio::test]
    async fn vets_what_a_name_resolves_to_before_connecting() {
        let grant = NetworkGrant::new(vec![Destination::parse("http://localhost:9").unwrap()]);
        let plan = Plan::new(&grant, &[], 1, &"http://localhost:9/".parse().unwrap()).unwrap();
        let e = connect(&plan, Duration::from_secs(5)).await.err().unwrap();
        assert!(
            e.to_string()
                .contains("a loopback address; private addresses are refused"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_closed_port_is_connection_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("http://127.0.0.1:{port}");
        let mut grant = NetworkGrant::new(vec![Destination::parse(&url).unwrap()]);
        grant.allow_private = true;
        let plan = Plan::new(&grant, &[], 1, &format!("{url}/").parse().unwrap()).unwrap();
        let e = connect(&plan, Duration::from_secs(5)).await.err().unwrap();
        assert!(
            matches!(e.code(), HttpError::ConnectionRefused),
            "{e} -> {:?}",
            e.code()
        );
        assert!(
            e.to_string().contains(&format!("cannot connect to {url}")),
            "{e}"
        );
    }
}
