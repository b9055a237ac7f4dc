//! Why an outgoing request was refused or failed ([`NetError`]), and what the guest receives for it.
//!
//! Owns the error type and its mapping to `wasi:http` error codes. Must not decide anything (that is
//! `plan`) nor touch the network (that is `transport`): it only describes and translates.

use std::net::{IpAddr, SocketAddr};

use wasmtime_wasi_http::Error as HttpError;

use toolhost_policy::network::DestinationError;

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
