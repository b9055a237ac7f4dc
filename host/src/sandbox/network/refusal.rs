//! Why an outgoing request was refused or failed ([`NetError`]), and what the guest receives for it.
//!
//! Owns the error type and its mapping to `wasi:http` error codes: a refusal by the policy is
//! `HTTP-request-denied` (or `destination-IP-prohibited` for a vetted address), a failed lookup a
//! `DNS-*` code, a failed connection `connection-*`, TLS `TLS-*`, a cut body `HTTP-*-body-size`, and
//! so on ([`NetError::code`]). The code is all a `wasi:http` 0.2 guest gets; the why, naming the plugin
//! and the destination (never a path or query, which may carry secrets), goes to the log
//! ([`NetError::report`]) and, through the call's [`Reporter`], into the failed call's result, so
//! that the model knows what to change. Must not decide anything (that is `plan`) nor touch the network (that is
//! `transport`): it only describes and translates.

use std::io::ErrorKind as IoErrorKind;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime_wasi_http::Error as HttpError;

use toolhost_gate::network::DestinationError;

/// Why the host refused or failed an outgoing request. The text goes to the log, the code to the guest.
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
    /// Name resolution took longer than the connect timeout.
    #[error("resolving {host} timed out after {ms} ms (network.connect-timeout-ms)")]
    ResolveTimeout {
        /// The name.
        host: String,
        /// The timeout.
        ms: u64,
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
        /// The OS error's kind, for the code.
        kind: IoErrorKind,
        /// The OS error.
        reason: String,
    },
    /// The TLS handshake failed (certificate, protocol).
    #[error("TLS with {target} failed: {reason}")]
    Tls {
        /// `scheme://host:port`.
        target: String,
        /// What kind of failure, for the code.
        failure: TlsFailure,
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
    #[error("the request body is larger than the limit of {limit} bytes{} (network.max-request-kb)",
        .declared.map(|n| format!(": it declares {n} bytes")).unwrap_or_default())]
    RequestTooLarge {
        /// The `Content-Length`, when the guest set one.
        declared: Option<u64>,
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
        /// What kind of failure, for the code.
        failure: ExchangeFailure,
        /// hyper's message.
        reason: String,
    },
}

/// How a TLS handshake failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFailure {
    /// The server's certificate was not accepted (expired, wrong name, unknown issuer).
    Certificate,
    /// The server sent this alert.
    Alert(u8),
    /// Anything else: a protocol violation, no common version or cipher, a closed connection.
    Protocol,
}

/// How an HTTP exchange failed after the connection was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeFailure {
    /// The server closed the connection before the response was complete.
    Incomplete,
    /// The connection was closed or reset.
    Closed,
    /// The server's answer was not valid HTTP/1.1.
    Malformed,
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

    /// The `wasi:http` error code the guest receives.
    pub fn code(&self) -> HttpError {
        match self {
            Self::NotGranted(_) | Self::TooManyRequests(_) | Self::NotAllowed { .. } => {
                HttpError::HttpRequestDenied
            }
            Self::Address { .. } => HttpError::DestinationIpProhibited,
            Self::BadUrl(_) => HttpError::HttpRequestUriInvalid,
            Self::Resolve { reason, .. } => HttpError::DnsError {
                rcode: Some(
                    reason
                        .strip_prefix("failed to lookup address information: ")
                        .unwrap_or(reason)
                        .to_string(),
                ),
                info_code: None,
            },
            Self::ResolveTimeout { .. } => HttpError::DnsTimeout,
            Self::ConnectTimeout { .. } => HttpError::ConnectionTimeout,
            Self::Connect { kind, .. } => match kind {
                IoErrorKind::ConnectionRefused => HttpError::ConnectionRefused,
                IoErrorKind::TimedOut => HttpError::ConnectionTimeout,
                IoErrorKind::ConnectionReset | IoErrorKind::ConnectionAborted => {
                    HttpError::ConnectionTerminated
                }
                IoErrorKind::HostUnreachable | IoErrorKind::NetworkUnreachable => {
                    HttpError::DestinationIpUnroutable
                }
                _ => HttpError::DestinationUnavailable,
            },
            Self::Tls { failure, .. } => match failure {
                TlsFailure::Certificate => HttpError::TlsCertificateError,
                TlsFailure::Alert(id) => HttpError::TlsAlertReceived {
                    alert_id: Some(*id),
                    alert_message: None,
                },
                TlsFailure::Protocol => HttpError::TlsProtocolError,
            },
            Self::Timeout { .. } => HttpError::ConnectionReadTimeout,
            Self::RequestTooLarge { declared, .. } => HttpError::HttpRequestBodySize(*declared),
            Self::ResponseTooLarge { declared, .. } => HttpError::HttpResponseBodySize(*declared),
            Self::Budget { .. } => HttpError::ConnectionLimitReached,
            Self::Protocol { failure, .. } => match failure {
                ExchangeFailure::Incomplete => HttpError::HttpResponseIncomplete,
                ExchangeFailure::Closed => HttpError::ConnectionTerminated,
                ExchangeFailure::Malformed => HttpError::HttpProtocolError,
            },
        }
    }

    /// Log why, naming `plugin`, and hand back the code for the guest.
    pub(super) fn report(self, plugin: &str) -> HttpError {
        if self.is_denial() {
            tracing::warn!(plugin, "outgoing request refused: {self}");
        } else {
            tracing::warn!(plugin, "outgoing request failed: {self}");
        }
        self.code()
    }
}

/// Reasons kept per call for the model; a plugin retrying in a loop must not grow them without end.
const MAX_NOTES: usize = 8;

/// Where one call's refused and failed requests are reported: the log, naming the plugin, and the
/// call's notes, which tell the model why (the guest gets only the code). Cheap to clone.
#[derive(Clone)]
pub(super) struct Reporter {
    plugin: String,
    notes: Arc<Mutex<Vec<String>>>,
}

impl Reporter {
    /// A reporter for one call of `plugin`, with no notes yet.
    pub(super) fn new(plugin: String) -> Self {
        Self {
            plugin,
            notes: Arc::default(),
        }
    }

    /// Log `e`, note why for the model, and return the code the guest gets.
    pub(super) fn report(&self, e: NetError) -> HttpError {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if notes.len() < MAX_NOTES {
            notes.push(e.to_string());
        }
        e.report(&self.plugin)
    }

    /// The notes so far, taken.
    pub(super) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> String {
        "https://api.example.com:443".into()
    }

    #[test]
    fn policy_refusals_reach_the_guest_as_denied() {
        for e in [
            NetError::NotGranted("p".into()),
            NetError::TooManyRequests(3),
            NetError::NotAllowed {
                target: target(),
                allowed: "https://other.example.com".into(),
            },
        ] {
            assert!(e.is_denial(), "{e}");
            assert!(matches!(e.code(), HttpError::HttpRequestDenied), "{e}");
        }
        let e = NetError::Address {
            target: target(),
            ip: "10.0.0.1".parse().unwrap(),
            class: "a private address".into(),
            hint: "",
        };
        assert!(e.is_denial());
        assert!(matches!(e.code(), HttpError::DestinationIpProhibited));
        let e = NetError::BadUrl(DestinationError::Scheme("ftp".into()));
        assert!(matches!(e.code(), HttpError::HttpRequestUriInvalid));
    }

    #[test]
    fn lookup_failures_reach_the_guest_as_dns_errors() {
        let e = NetError::Resolve {
            host: "nowhere.invalid".into(),
            reason: "failed to lookup address information: Name or service not known".into(),
        };
        assert!(!e.is_denial());
        match e.code() {
            HttpError::DnsError { rcode, info_code } => {
                assert_eq!(rcode.as_deref(), Some("Name or service not known"));
                assert_eq!(info_code, None);
            }
            other => panic!("{other:?}"),
        }
        let e = NetError::ResolveTimeout {
            host: "slow.example".into(),
            ms: 100,
        };
        assert!(matches!(e.code(), HttpError::DnsTimeout));
    }

    #[test]
    fn connection_failures_reach_the_guest_by_kind() {
        let connect = |kind| NetError::Connect {
            target: target(),
            addr: "192.0.2.1:443".parse().unwrap(),
            kind,
            reason: "os error".into(),
        };
        // By the codes' Display, which names each one.
        for (kind, expected) in [
            (IoErrorKind::ConnectionRefused, "connection refused"),
            (IoErrorKind::TimedOut, "connection timeout"),
            (IoErrorKind::ConnectionReset, "connection terminated"),
            (
                IoErrorKind::NetworkUnreachable,
                "destination IP address is unroutable",
            ),
            (IoErrorKind::PermissionDenied, "destination unavailable"),
        ] {
            assert_eq!(connect(kind).code().to_string(), expected, "{kind:?}");
        }
        let e = NetError::ConnectTimeout {
            target: target(),
            ms: 10,
        };
        assert!(matches!(e.code(), HttpError::ConnectionTimeout));
        let e = NetError::Budget { limit: 64 };
        assert!(matches!(e.code(), HttpError::ConnectionLimitReached));
    }

    #[test]
    fn tls_failures_reach_the_guest_by_kind() {
        let tls = |failure| NetError::Tls {
            target: target(),
            failure,
            reason: "handshake".into(),
        };
        assert!(matches!(
            tls(TlsFailure::Certificate).code(),
            HttpError::TlsCertificateError
        ));
        assert!(matches!(
            tls(TlsFailure::Protocol).code(),
            HttpError::TlsProtocolError
        ));
        assert!(matches!(
            tls(TlsFailure::Alert(40)).code(),
            HttpError::TlsAlertReceived {
                alert_id: Some(40),
                ..
            }
        ));
    }

    #[test]
    fn exchange_failures_reach_the_guest_as_timeouts_sizes_and_protocol_errors() {
        let e = NetError::Timeout {
            target: target(),
            ms: 500,
        };
        assert!(matches!(e.code(), HttpError::ConnectionReadTimeout));
        let e = NetError::RequestTooLarge {
            declared: Some(2048),
            limit: 1024,
        };
        assert!(matches!(
            e.code(),
            HttpError::HttpRequestBodySize(Some(2048))
        ));
        let e = NetError::ResponseTooLarge {
            target: target(),
            declared: None,
            limit: 4096,
        };
        assert!(matches!(e.code(), HttpError::HttpResponseBodySize(None)));
        let protocol = |failure| NetError::Protocol {
            target: target(),
            failure,
            reason: "hyper".into(),
        };
        assert!(matches!(
            protocol(ExchangeFailure::Incomplete).code(),
            HttpError::HttpResponseIncomplete
        ));
        assert!(matches!(
            protocol(ExchangeFailure::Closed).code(),
            HttpError::ConnectionTerminated
        ));
        assert!(matches!(
            protocol(ExchangeFailure::Malformed).code(),
            HttpError::HttpProtocolError
        ));
    }

    #[test]
    fn messages_name_the_destination_but_no_path() {
        let e = NetError::Timeout {
            target: target(),
            ms: 500,
        };
        assert_eq!(
            e.to_string(),
            "the request to https://api.example.com:443 timed out after 500 ms (network.request-timeout-ms)"
        );
    }
}
