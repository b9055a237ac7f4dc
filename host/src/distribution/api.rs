//! The reads of the OCI distribution API that `pull` makes (`GET /v2/<name>/manifests/<ref>` and
//! `/v2/<name>/blobs/<digest>`), authenticated as the registry asks: HTTP Basic with the configured
//! credentials, or a bearer token from the token service its `WWW-Authenticate` names. Done here
//! rather than by oci-client, which reads every answer (manifests, token answers, error bodies)
//! whole into memory: a hostile registry could make any of them a gigabyte. Every body that
//! reaches this module is read through [`super::bounded`].

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use oci_client::secrets::RegistryAuth;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, WWW_AUTHENTICATE};

use super::RemoteError;
use super::bounded;

/// The most of a token service's answer read: a token and a few fields.
const MAX_TOKEN_ANSWER_BYTES: u64 = 64 << 10;

/// A client for the read side of the distribution API.
pub(super) struct Api {
    http: reqwest::Client,
    /// The `Authorization` value that worked, by registry and repository.
    authorizations: Mutex<HashMap<String, String>>,
}

/// Where a GET goes: a registry (`host[:port]`, as resolved), a repository and a path below it.
pub(super) struct Target<'a> {
    /// `http` or `https`.
    pub(super) scheme: &'a str,
    /// The registry's host.
    pub(super) registry: &'a str,
    /// The repository.
    pub(super) repository: &'a str,
    /// `manifests/<ref>` or `blobs/<digest>`.
    pub(super) path: String,
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
        let url = format!(
            "{}://{}/v2/{}/{}",
            target.scheme, target.registry, target.repository, target.path
        );
        let key = format!("{}/{}", target.registry, target.repository);
        let known = self.known(&key).or_else(|| match auth {
            RegistryAuth::Bearer(token) => Some(format!("Bearer {token}")),
            _ => None,
        });
        let response = self.send(&url, accept, known.as_deref(), what).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
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
            (Some("bearer"), _) if !matches!(auth, RegistryAuth::Bearer(_)) => {
                Some(self.token(&challenge, target, auth, what).await?)
            }
            _ => None,
        };
        let Some(authorization) = authorization else {
            return Err(RemoteError::Registry {
                what: what(),
                message: format!("unauthorized: {refused}"),
            });
        };
        let response = self.send(&url, accept, Some(&authorization), what).await?;
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
        url: &str,
        accept: &str,
        authorization: Option<&str>,
        what: &dyn Fn() -> String,
    ) -> Result<reqwest::Response, RemoteError> {
        let mut request = self.http.get(url);
        if !accept.is_empty() {
            request = request.header(ACCEPT, accept);
        }
        if let Some(a) = authorization {
            request = request.header(AUTHORIZATION, a);
        }
        request.send().await.map_err(|e| RemoteError::Registry {
            what: what(),
            message: e.to_string(),
        })
    }

    /// `Bearer <token>` from the token service `challenge` names, for pulling `target`'s repository.
    async fn token(
        &self,
        challenge: &str,
        target: &Target<'_>,
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
        let mut url = reqwest::Url::parse(realm).map_err(|e| failed(format!("{realm}: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = params.get("service") {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:pull", target.repository));
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
