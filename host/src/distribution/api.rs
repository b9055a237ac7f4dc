//! The OCI distribution API as `pull`, `push` and `sign` use it (`GET`/`HEAD`/`PUT` of
//! `/v2/<name>/manifests/<ref>` and `/v2/<name>/blobs/<digest>`, uploads), authenticated as the
//! registry asks: HTTP Basic with the configured credentials, or a bearer token from the token
//! service its `WWW-Authenticate` names. Done here rather than by oci-client, which reads every
//! answer (manifests, token answers, upload answers, error bodies) whole into memory: a hostile
//! registry could make any of them a gigabyte. Every body that reaches this module is read through
//! [`super::bounded`].

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode, Url};

use super::RemoteError;
use super::bounded;
use super::credentials::RegistryAuth;

/// The most of a token service's answer read: a token and a few fields.
const MAX_TOKEN_ANSWER_BYTES: u64 = 64 << 10;

/// A client for the distribution API.
pub(super) struct Api {
    http: reqwest::Client,
    /// The `Authorization` value that worked, by registry, repository and access.
    authorizations: Mutex<HashMap<String, String>>,
}

/// A repository of a registry (`host[:port]`, as resolved), and a path below `/v2/<name>/`.
pub(super) struct Target<'a> {
    /// `http` or `https`.
    pub(super) scheme: &'a str,
    /// The registry's host.
    pub(super) registry: &'a str,
    /// The repository.
    pub(super) repository: &'a str,
    /// `manifests/<ref>`, `blobs/<digest>` or `blobs/uploads/`.
    pub(super) path: String,
}

impl Target<'_> {
    /// The URL of the path.
    pub(super) fn url(&self, what: &dyn Fn() -> String) -> Result<Url, RemoteError> {
        let url = format!(
            "{}://{}/v2/{}/{}",
            self.scheme, self.registry, self.repository, self.path
        );
        Url::parse(&url).map_err(|e| RemoteError::Registry {
            what: what(),
            message: format!("{url}: {e}"),
        })
    }
}

/// What a request may do, as a token's scope says: a token for pulling cannot push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Read manifests and blobs.
    Pull,
    /// Read, and upload blobs and manifests.
    Push,
}

impl Access {
    fn actions(self) -> &'static str {
        match self {
            Self::Pull => "pull",
            Self::Push => "pull,push",
        }
    }
}

/// One request: sent once, and again with credentials when the registry asks for them.
pub(super) struct Call<'a> {
    /// The method.
    pub(super) method: Method,
    /// Where: below the target's repository, or an upload's `Location` (credentials go only to
    /// the registry's own origin).
    pub(super) url: Url,
    /// The `Accept` header, when not empty.
    pub(super) accept: &'a str,
    /// The body and its `Content-Type`, if any; cheap to clone for the second attempt.
    pub(super) body: Option<(&'a str, bytes::Bytes)>,
}

impl Api {
    /// A client with the timeouts of the rest of the distribution code.
    pub(super) fn new() -> Result<Self, RemoteError> {
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(15))
            .read_timeout(std::time::Duration::from_secs(60))
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RemoteError::Client(e.to_string()))?;
        Ok(Self {
            http,
            authorizations: Mutex::new(HashMap::new()),
        })
    }

    /// The answer to a GET of `target` (any status but a 401 that credentials could answer), its
    /// body not read yet.
    pub(super) async fn get(
        &self,
        target: &Target<'_>,
        accept: &str,
        auth: &RegistryAuth,
        what: &dyn Fn() -> String,
    ) -> Result<reqwest::Response, RemoteError> {
        let call = Call {
            method: Method::GET,
            url: target.url(what)?,
            accept,
            body: None,
        };
        self.call(target, Access::Pull, &call, auth, what).await
    }

    /// The answer to `call` in `target`'s repository (any status but a 401 that credentials could
    /// answer), its body not read yet.
    pub(super) async fn call(
        &self,
        target: &Target<'_>,
        access: Access,
        call: &Call<'_>,
        auth: &RegistryAuth,
        what: &dyn Fn() -> String,
    ) -> Result<reqwest::Response, RemoteError> {
        // Credentials only for the registry itself, never for an upload `Location` elsewhere.
        let ours = target.url(what)?.origin() == call.url.origin();
        let key = format!(
            "{}/{}:{}",
            target.registry,
            target.repository,
            access.actions()
        );
        let known = if ours { self.known(&key) } else { None };
        let response = self.send(call, known.as_deref(), what).await?;
        if response.status() != StatusCode::UNAUTHORIZED || !ours {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let refused = bounded::error_text(response).await;
        let authorization = match (scheme(&challenge).as_deref(), auth) {
            (Some("basic"), RegistryAuth::Basic(user, password)) => Some(basic(user, password)),
            (Some("bearer"), _) => Some(self.token(&challenge, target, access, auth, what).await?),
            _ => None,
        };
        let Some(authorization) = authorization else {
            return Err(RemoteError::Registry {
                what: what(),
                message: format!("unauthorized: {refused}"),
            });
        };
        let response = self.send(call, Some(&authorization), what).await?;
        if response.status().is_success() {
            self.authorizations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, authorization);
        }
        Ok(response)
    }

    fn known(&self, key: &str) -> Option<String> {
        self.authorizations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    async fn send(
        &self,
        call: &Call<'_>,
        authorization: Option<&str>,
        what: &dyn Fn() -> String,
    ) -> Result<reqwest::Response, RemoteError> {
        let mut request = self.http.request(call.method.clone(), call.url.clone());
        if !call.accept.is_empty() {
            request = request.header(ACCEPT, call.accept);
        }
        if let Some(a) = authorization {
            request = request.header(AUTHORIZATION, a);
        }
        if let Some((content_type, body)) = &call.body {
            request = request
                .header(CONTENT_TYPE, *content_type)
                .body(body.clone());
        }
        request.send().await.map_err(|e| RemoteError::Registry {
            what: what(),
            message: e.to_string(),
        })
    }

    /// `Bearer <token>` from the token service `challenge` names, for `access` to `target`'s
    /// repository.
    async fn token(
        &self,
        challenge: &str,
        target: &Target<'_>,
        access: Access,
        auth: &RegistryAuth,
        what: &dyn Fn() -> String,
    ) -> Result<String, RemoteError> {
        let failed = |message: String| RemoteError::Registry {
            what: what(),
            message: format!("the registry's token service: {message}"),
        };
        let params = challenge_params(challenge);
        let realm = params
            .get("realm")
            .ok_or_else(|| failed("the challenge names no realm".into()))?;
        let mut url = Url::parse(realm).map_err(|e| failed(format!("{realm}: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = params.get("service") {
                query.append_pair("service", service);
            }
            query.append_pair(
                "scope",
                &format!("repository:{}:{}", target.repository, access.actions()),
            );
        }
        let mut request = self.http.get(url);
        if let RegistryAuth::Basic(user, password) = auth {
            request = request.header(AUTHORIZATION, basic(user, password));
        }
        let response = request.send().await.map_err(|e| failed(e.to_string()))?;
        if !response.status().is_success() {
            return Err(failed(bounded::error_text(response).await));
        }
        let body = bounded::read(response, MAX_TOKEN_ANSWER_BYTES, &|| {
            format!("the token answer for {}", what())
        })
        .await?;
        #[derive(serde::Deserialize)]
        struct Answer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| failed(e.to_string()))?;
        let token = answer
            .token
            .or(answer.access_token)
            .ok_or_else(|| failed("the answer holds no token".into()))?;
        Ok(format!("Bearer {token}"))
    }
}

fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", STANDARD.encode(format!("{user}:{password}")))
}

/// The scheme of a `WWW-Authenticate` challenge, in lower case.
fn scheme(challenge: &str) -> Option<String> {
    let scheme = challenge.split_whitespace().next()?;
    Some(scheme.to_ascii_lowercase())
}

/// The `key="value"` parameters of a challenge (`Bearer realm="…",service="…"`), keys in lower case.
fn challenge_params(challenge: &str) -> HashMap<String, String> {
    let rest = challenge
        .trim_start()
        .split_once(char::is_whitespace)
        .map_or("", |(_, rest)| rest);
    let mut params = HashMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.next_if(|c| *c == ',' || c.is_whitespace()).is_some() {}
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        if chars.next().is_none() {
            break;
        }
        let mut value = String::new();
        if chars.next_if_eq(&'"').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        } else {
            value.extend(std::iter::from_fn(|| chars.next_if(|c| *c != ',')));
        }
        params.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_bearer_challenge() {
        let c = r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#;
        assert_eq!(scheme(c).as_deref(), Some("bearer"));
        let p = challenge_params(c);
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["service"], "registry.example");
        assert_eq!(p["scope"], "repository:a/b:pull,push");
        let p = challenge_params(r#"Basic realm="toolhost-test""#);
        assert_eq!(p["realm"], "toolhost-test");
        assert!(challenge_params("Bearer").is_empty());
        assert!(challenge_params("").is_empty());
    }
}
