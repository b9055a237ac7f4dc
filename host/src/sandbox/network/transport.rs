//! The I/O half of sending a planned request: resolve the name once, have the [`Plan`] vet every
//! address, connect to exactly those addresses (no second lookup, so no DNS-rebinding window), speak
//! TLS with the original name as SNI and for certificate checks (webpki roots), then HTTP/1.1 with
//! hyper under a connect and a total deadline, the bodies capped both ways.
//!
//! Must not decide policy (every yes or no is the plan's) nor choose what the guest sees (that is
//! `refusal`): failures are reported as [`NetError`]s with what was tried.

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::Poll;

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
use super::refusal::NetError;
use toolhost_policy::network::{Host, Scheme, Target};

/// Drives the connection after the response head arrived, until the body is read.
pub(super) type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// Send `req` as `plan` says; each connection holds a unit of `budget` (if any) until it closes.
pub(super) async fn send(
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
    let connected = tokio::time::timeout(connect_timeout, connect(&plan)).await;
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
    plan.check_response_length(&parts.headers)?;
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

/// Resolve, have the plan vet every address, connect to one of them, and speak TLS for https.
async fn connect(plan: &Plan) -> Result<Box<dyn Stream>, NetError> {
    let addrs = resolve(&plan.target).await?;
    plan.vet(&addrs)?;
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
        reason: e.to_string(),
    })
}

async fn wrap_tls(target: &Target, tcp: TcpStream) -> Result<Box<dyn Stream>, NetError> {
    if target.scheme == Scheme::Http {
        return Ok(Box::new(tcp));
    }
    let tls_error = |reason: String| NetError::Tls {
        target: target.to_string(),
        reason,
    };
    let config = tls_config().map_err(tls_error)?;
    let name = match &target.host {
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
    use toolhost_policy::network::{Destination, NetworkGrant};

    #[tokio::test]
    async fn vets_what_a_name_resolves_to_before_connecting() {
        let grant = NetworkGrant::new(vec![Destination::parse("http://localhost:9").unwrap()]);
        let plan = Plan::new(&grant, &[], 1, &"http://localhost:9/".parse().unwrap()).unwrap();
        let e = connect(&plan).await.err().unwrap();
        assert!(
            e.to_string()
                .contains("a loopback address; private addresses are refused"),
            "{e}"
        );
    }
}
