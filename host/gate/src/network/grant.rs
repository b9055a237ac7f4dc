//! The network grant and secret grants: plain data, filled in by `config`, read by `wasi` (secrets as
//! env vars) and by the send path (everything else). Off unless granted: no grant, no network.

use std::time::Duration;

use super::destination::{Destination, Target};
use super::secret::Secret;

/// Outgoing HTTP for one plugin. Without it a plugin cannot even link `wasi:http`.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkGrant {
    /// Where requests may go; a request must match one pattern exactly (scheme, host, port).
    pub allow: Vec<Destination>,
    /// Whether allowed names may resolve to (and IP literals may be) loopback, private, link-local or
    /// unique-local addresses. Off by default, which is what stops SSRF into the daemon's network.
    pub allow_private: bool,
    /// Destinations to which the guest may send its own `Authorization` and `Cookie` headers; to every
    /// other destination the host removes them. Secrets granted as headers are unaffected.
    pub guest_credentials: Vec<Destination>,
    /// Sizes, timeouts and request count.
    pub limits: NetworkLimits,
}

impl NetworkGrant {
    /// A grant for these destinations with default limits and no private addresses.
    pub fn new(allow: Vec<Destination>) -> Self {
        Self {
            allow,
            allow_private: false,
            guest_credentials: Vec::new(),
            limits: NetworkLimits::default(),
        }
    }

    /// Whether a request to `target` is allowed (before its addresses are checked).
    pub fn allows(&self, target: &Target) -> bool {
        self.allow.iter().any(|d| d.matches(target))
    }
}

/// How much one plugin may send, receive and wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkLimits {
    /// Largest request body, in bytes.
    pub max_request_bytes: u64,
    /// Largest response body, in bytes: a larger declared length is refused before the body is read,
    /// and a body that grows past it is cut with an error.
    pub max_response_bytes: u64,
    /// Name resolution plus TCP connect (plus TLS handshake).
    pub connect_timeout: Duration,
    /// One whole request, from the hook to the last byte of the response body.
    pub request_timeout: Duration,
    /// Requests per call, redirects included.
    pub max_requests: u32,
}

impl Default for NetworkLimits {
    fn default() -> Self {
        Self {
            max_request_bytes: 1 << 20,
            max_response_bytes: 10 << 20,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_requests: 100,
        }
    }
}

/// A named secret given to one plugin, as an env var, as a header the host adds, or both.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretGrant {
    /// The name in the config (`[plugins.x.secrets.NAME]`), for messages.
    pub name: String,
    /// The value (never printed).
    pub value: Secret,
    /// The guest sees the value in this environment variable.
    pub env: Option<String>,
    /// The host adds this header to requests to these destinations; the guest never sees it.
    pub header: Option<SecretHeader>,
}

/// A header the host adds to matching requests, replacing any header of that name the guest set.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretHeader {
    /// Header name, lowercase.
    pub name: String,
    /// The full header value, e.g. `Bearer <secret>` (never printed).
    pub value: Secret,
    /// Requests matching one of these get the header; a subset of the network allowlist.
    pub destinations: Vec<Destination>,
}

/// A header whose value each call's caller brings, never the daemon: the caller's profile's own
/// secret, or a token exchanged for the caller's own (RFC 8693). The value never enters the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct CallerSecret {
    /// The name in the config (`[plugins.x.secrets.NAME]`), for messages and the audit log.
    pub name: String,
    /// Where each call's value comes from.
    pub source: CallerSource,
    /// Header name, lowercase.
    pub header: String,
    /// The header's value, `{secret}` standing for the caller's credential.
    pub format: String,
    /// Requests matching one of these get the header; a subset of the network allowlist.
    pub destinations: Vec<Destination>,
}

/// Where a [`CallerSecret`]'s value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerSource {
    /// The calling profile's secret of this name (`[[callers]] secrets.NAME`).
    Profile(String),
    /// A token for this destination, exchanged at the identity provider for the caller's own.
    Exchange(Exchange),
}

/// What a token exchange asks for (RFC 8693 §2.1): at least an audience or a resource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Exchange {
    /// `audience`: the logical name of the destination.
    pub audience: Option<String>,
    /// `resource`: the destination's URI.
    pub resource: Option<String>,
    /// `scope`, space-separated.
    pub scope: Option<String>,
}
