//! A small blocking HTTP GET over `wasi:http/outgoing-handler`, and just enough URL handling to
//! follow redirects. The host decides where requests may go; a refusal comes back as its error code.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// Bytes asked for per read.
const CHUNK: u64 = 64 * 1024;

/// An absolute http(s) URL, split the way wasi:http wants it.
#[derive(Debug, Clone, PartialEq)]
pub struct Url {
    /// `http` or `https`.
    pub https: bool,
    /// `host[:port]`.
    pub authority: String,
    /// Path and query, starting with `/`; no fragment.
    pub path: String,
}

impl Url {
    /// Parse `http://host[:port][/path][?query][#fragment]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (scheme, rest) = text.split_once("://").ok_or_else(|| {
            format!("{text:?} is not an absolute URL (expected http:// or https://)")
        })?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "scheme {other:?} is not supported; use http or https"
                ));
            }
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(format!("{text:?} has no host"));
        }
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Ok(Self {
            https,
            authority: authority.to_string(),
            path,
        })
    }

    /// Resolve a `Location` header against this URL.
    pub fn join(&self, location: &str) -> Result<Self, String> {
        let location = location.split('#').next().unwrap_or_default();
        if location.contains("://") {
            return Self::parse(location);
        }
        if let Some(rest) = location.strip_prefix("//") {
            return Self::parse(&format!(
                "{}://{rest}",
                if self.https { "https" } else { "http" }
            ));
        }
        let path = if location.starts_with('/') {
            location.to_string()
        } else {
            let base = self.path.split('?').next().unwrap_or("/");
            let dir = &base[..base.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{location}")
        };
        Ok(Self {
            path,
            ..self.clone()
        })
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority, self.path)
    }
}

/// A response, with at most `max` body bytes kept.
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Location`, if any.
    pub location: Option<String>,
    /// The body, cut at `max` bytes.
    pub body: Vec<u8>,
    /// Whether the body was longer than `max`.
    pub truncated: bool,
}

/// GET `url` with these headers, keeping at most `max` body bytes.
pub fn get(url: &Url, headers: &[(&str, &str)], max: usize) -> Result<Fetched, String> {
    let list: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
    let fields = Fields::from_list(&list).map_err(|e| format!("invalid request header: {e:?}"))?;
    let request = OutgoingRequest::new(fields);
    let scheme = if url.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_method(&Method::Get)
        .map_err(|()| "cannot set the method")?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "cannot set the scheme")?;
    request
        .set_authority(Some(&url.authority))
        .map_err(|()| format!("invalid host {:?}", url.authority))?;
    request
        .set_path_with_query(Some(&url.path))
        .map_err(|()| format!("invalid path {:?}", url.path))?;

    let pending = outgoing_handler::handle(request, None).map_err(|e| describe(&e))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(describe(&e)),
        Some(Err(())) | None => return Err("the host returned no response".into()),
    };
    let status = response.status();
    let (content_type, location) = {
        let h = response.headers();
        let one = |name: &str| {
            h.get(name)
                .into_iter()
                .next()
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        };
        (one("content-type"), one("location"))
    };
    let body = response
        .consume()
        .map_err(|()| "the response body was already taken")?;
    let (bytes, truncated) = {
        let stream = body
            .stream()
            .map_err(|()| "the response body stream was already taken")?;
        read_capped(&stream, max)?
    };
    drop(body);
    drop(response);
    Ok(Fetched {
        status,
        content_type,
        location,
        body: bytes,
        truncated,
    })
}

fn read_capped(
    stream: &wasip2::io::streams::InputStream,
    max: usize,
) -> Result<(Vec<u8>, bool), String> {
    let mut out = Vec::new();
    loop {
        let want = CHUNK.min((max + 1 - out.len()) as u64);
        match stream.blocking_read(want) {
            Ok(chunk) => {
                out.extend_from_slice(&chunk);
                if out.len() > max {
                    out.truncate(max);
                    return Ok((out, true));
                }
            }
            Err(StreamError::Closed) => return Ok((out, false)),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(match wasip2::http::types::http_error_code(&e) {
                    Some(code) => describe(&code),
                    None => {
                        let text = e.to_debug_string();
                        text.strip_prefix("internal error: ")
                            .unwrap_or(&text)
                            .to_string()
                    }
                });
            }
        }
    }
}

/// The host's message when it sent one, else the error code's name (toolhost sends the code; its log says why).
pub fn describe(e: &ErrorCode) -> String {
    match e {
        ErrorCode::InternalError(Some(m)) => m.clone(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_joins_urls() {
        let u = Url::parse("HTTP://example.org:8080?q=1#frag").unwrap();
        assert_eq!(u.to_string(), "http://example.org:8080/?q=1");
        assert_eq!(
            u.join("/a/b").unwrap().to_string(),
            "http://example.org:8080/a/b"
        );
        let u = Url::parse("https://x.org/dir/page?x").unwrap();
        assert_eq!(
            u.join("other").unwrap().to_string(),
            "https://x.org/dir/other"
        );
        assert_eq!(u.join("//y.org/z").unwrap().to_string(), "https://y.org/z");
        assert_eq!(u.join("http://z.org").unwrap().to_string(), "http://z.org/");
        assert!(Url::parse("ftp://x.org").is_err());
        assert!(Url::parse("x.org").is_err());
    }
}
