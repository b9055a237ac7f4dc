//! The pure half of sending: from the grant, the request and the resolved addresses, decide whether
//! and where a request may go, and what it carries.
//!
//! In order: the plugin must hold a grant and budget for one more request; the URL's scheme, host and
//! port must match an allowlist pattern; every resolved address must be of a class the grant allows
//! (loopback, private, link-local and unique-local only with `allow-private`; metadata endpoints,
//! unspecified, multicast and reserved never). Guest-set `Authorization`/`Cookie` headers are removed
//! unless the destination is in `guest-credentials`; granted secret headers are added for their
//! destinations only. Must not do I/O: no lookups, no sockets, no clocks (that is `transport`).

use std::net::SocketAddr;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Request, Uri, header};

use super::super::secrets::SecretHeader;
use super::refusal::NetError;
use toolhost_gate::network::{AddressClass, NetworkGrant, NetworkLimits, Target, classify};

/// A request that passed the checks before any lookup, with what the host adds to it. `Debug` is
/// safe: secret header values are marked sensitive and print as `Sensitive`.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) target: Target,
    pub(super) limits: NetworkLimits,
    allow_private: bool,
    keep_credentials: bool,
    add: Vec<(HeaderName, HeaderValue)>,
}

impl Plan {
    /// The checks before any lookup for the `sent`-th request (counting this one) of a call under
    /// `grant` to `uri`, and the secret headers for its destination.
    pub(super) fn new(
        grant: &NetworkGrant,
        secrets: &[SecretHeader],
        sent: u32,
        uri: &Uri,
    ) -> Result<Self, NetError> {
        if sent > grant.limits.max_requests {
            return Err(NetError::TooManyRequests(grant.limits.max_requests));
        }
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
        for h in secrets {
            if h.destinations.iter().any(|d| d.matches(&target)) {
                add.push((h.name.clone(), h.value.clone()));
            }
        }
        Ok(Self {
            keep_credentials: grant.guest_credentials.iter().any(|d| d.matches(&target)),
            allow_private: grant.allow_private,
            limits: grant.limits,
            target,
            add,
        })
    }

    /// Refuse a request body that declares more than the limit, before connecting.
    pub(super) fn check_request_length(&self, headers: &HeaderMap) -> Result<(), NetError> {
        match content_length(headers) {
            Some(n) if n > self.limits.max_request_bytes => Err(NetError::RequestTooLarge {
                declared: Some(n),
                limit: self.limits.max_request_bytes,
            }),
            _ => Ok(()),
        }
    }

    /// Refuse a response that declares more than the limit, before the guest reads it.
    pub(super) fn check_response_length(&self, headers: &HeaderMap) -> Result<(), NetError> {
        match content_length(headers) {
            Some(n) if n > self.limits.max_response_bytes => Err(NetError::ResponseTooLarge {
                target: self.target.to_string(),
                declared: Some(n),
                limit: self.limits.max_response_bytes,
            }),
            _ => Ok(()),
        }
    }

    /// The connect timeout: the policy's, within the request timeout, shortened by the guest's.
    pub(super) fn connect_timeout(&self, guest: Option<Duration>) -> Duration {
        shorter(
            self.limits.connect_timeout.min(self.limits.request_timeout),
            guest,
        )
    }

    /// Every resolved address must be of a class the grant allows; one that is not refuses them all.
    pub(super) fn vet(&self, addrs: &[SocketAddr]) -> Result<(), NetError> {
        for a in addrs {
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
        Ok(())
    }

    /// Origin-form URI, our own `Host`, credentials and secret headers per the grant.
    pub(super) fn rewrite<B>(&self, req: &mut Request<B>) {
        let path = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        *req.uri_mut() = Uri::builder()
            .path_and_query(path)
            .build()
            .unwrap_or_else(|_| Uri::from_static("/"));
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
}

fn hint(class: AddressClass, allow_private: bool) -> &'static str {
    if class.is_private() && !allow_private {
        "private addresses are refused unless the grant sets `allow-private = true`"
    } else {
        "such addresses are always refused"
    }
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_gate::network::Destination;

    fn grant(allow: &[&str], allow_private: bool) -> NetworkGrant {
        let mut grant = NetworkGrant::new(
            allow
                .iter()
                .map(|d| Destination::parse(d).unwrap())
                .collect(),
        );
        grant.allow_private = allow_private;
        grant
    }

    fn plan(grant: &NetworkGrant, url: &str) -> Result<Plan, NetError> {
        Plan::new(grant, &[], 1, &url.parse().unwrap())
    }

    fn request(url: &str) -> Request<()> {
        Request::get(url).body(()).unwrap()
    }

    #[test]
    fn plans_only_allowed_destinations() {
        let g = grant(&["http://127.0.0.1:8080"], true);
        assert!(plan(&g, "http://127.0.0.1:8080/x?y").is_ok());
        let e = plan(&g, "http://127.0.0.1:8081/").unwrap_err();
        assert!(
            e.to_string()
                .contains("http://127.0.0.1:8081 is not in this plugin's allowlist"),
            "{e}"
        );
        assert!(!e.to_string().contains("/x"), "{e}");
        let e = plan(&g, "https://127.0.0.1:8080/").unwrap_err();
        assert!(matches!(e, NetError::NotAllowed { .. }), "{e}");
    }

    #[test]
    fn refuses_past_the_request_limit() {
        let mut g = grant(&["https://example.com"], false);
        g.limits.max_requests = 2;
        let uri: Uri = "https://example.com/".parse().unwrap();
        assert!(Plan::new(&g, &[], 1, &uri).is_ok());
        assert!(Plan::new(&g, &[], 2, &uri).is_ok());
        assert_eq!(
            Plan::new(&g, &[], 3, &uri).unwrap_err(),
            NetError::TooManyRequests(2)
        );
    }

    #[test]
    fn strips_guest_credentials_and_adds_secret_headers_for_their_destination() {
        use super::super::super::secrets::Secrets;
        use toolhost_gate::network::{Secret, SecretGrant, SecretHeader};
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
        let secrets = Secrets::bind(std::slice::from_ref(&secret)).unwrap();
        let rewritten = |grant: &NetworkGrant, url: &str| {
            let mut req = request(url);
            req.headers_mut().insert(
                header::AUTHORIZATION,
                HeaderValue::from_static("Bearer guest"),
            );
            req.headers_mut()
                .insert(header::COOKIE, HeaderValue::from_static("session=guest"));
            Plan::new(grant, secrets.headers(), 1, req.uri())
                .unwrap()
                .rewrite(&mut req);
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

    #[test]
    fn refuses_private_addresses_without_allow_private() {
        let addr = |s: &str| -> Vec<SocketAddr> { vec![s.parse().unwrap()] };
        let g = grant(
            &["http://127.0.0.1:9", "http://[::ffff:169.254.169.254]:9"],
            false,
        );
        let p = plan(&g, "http://127.0.0.1:9/").unwrap();
        let e = p.vet(&addr("127.0.0.1:9")).unwrap_err();
        assert!(
            e.to_string()
                .contains("a loopback address; private addresses are refused"),
            "{e}"
        );
        // One refused address among allowed ones refuses the request.
        let e = p
            .vet(&[
                "93.184.215.14:9".parse().unwrap(),
                "10.0.0.1:9".parse().unwrap(),
            ])
            .unwrap_err();
        assert!(matches!(e, NetError::Address { .. }), "{e}");
        let p = plan(&g, "http://[::ffff:169.254.169.254]:9/").unwrap();
        let e = p.vet(&addr("[::ffff:169.254.169.254]:9")).unwrap_err();
        assert!(
            e.to_string()
                .contains("cloud metadata endpoint; such addresses are always refused"),
            "{e}"
        );
        // allow-private opens private ranges, never metadata endpoints.
        let g = grant(&["http://127.0.0.1:9", "http://169.254.169.254"], true);
        let p = plan(&g, "http://127.0.0.1:9/").unwrap();
        assert!(p.vet(&addr("127.0.0.1:9")).is_ok());
        let p = plan(&g, "http://169.254.169.254/").unwrap();
        assert!(p.vet(&addr("169.254.169.254:80")).is_err());
    }

    #[test]
    fn checks_declared_lengths_and_shortens_timeouts() {
        let mut g = grant(&["https://example.com"], false);
        g.limits.max_request_bytes = 10;
        g.limits.max_response_bytes = 20;
        let p = plan(&g, "https://example.com/").unwrap();
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("11"));
        assert_eq!(
            p.check_request_length(&h),
            Err(NetError::RequestTooLarge {
                declared: Some(11),
                limit: 10
            })
        );
        assert!(p.check_response_length(&h).is_ok());
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("21"));
        assert!(matches!(
            p.check_response_length(&h),
            Err(NetError::ResponseTooLarge {
                declared: Some(21),
                ..
            })
        ));
        let policy = p.connect_timeout(None);
        assert_eq!(
            p.connect_timeout(Some(Duration::from_millis(1))),
            Duration::from_millis(1)
        );
        assert_eq!(p.connect_timeout(Some(policy * 2)), policy);
    }
}
