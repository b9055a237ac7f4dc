//! Bodies read from registries and HTTPS servers, never more than a limit: a `Content-Length`
//! above it is refused before a byte is read, and a body that says nothing of its length (chunked)
//! is cut off as soon as it passes the limit. A registry is untrusted: a manifest of a gigabyte
//! must cost what the limit allows, not a gigabyte of memory. Blobs go to a file as they arrive,
//! hashed on the way, so a component is never held whole in memory.
//!
//! It judges no bytes: digests are compared by the callers, meanings elsewhere.

use std::io::Write as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};
use toolhost_trust::source::Digest;

use super::RemoteError;

/// The most of an error answer's body kept for its message.
const ERROR_BODY_BYTES: usize = 4 << 10;

/// A body written to a temporary file, with the digest of its bytes.
pub(crate) struct Spooled {
    /// The file, deleted when dropped unless kept.
    pub(crate) file: tempfile::NamedTempFile,
    /// The digest of what was written.
    pub(crate) digest: Digest,
}

/// The whole body of `response`, refused when it is (or says it is) larger than `limit` bytes.
pub(super) async fn read(
    mut response: reqwest::Response,
    limit: u64,
    what: &dyn Fn() -> String,
) -> Result<Vec<u8>, RemoteError> {
    refuse_declared(&response, limit, what)?;
    let mut out = Vec::new();
    while let Some(chunk) = next_chunk(&mut response, what).await? {
        if out.len() as u64 + chunk.len() as u64 > limit {
            return Err(too_large(what, limit));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The body of `response` in a temporary file in `dir`, hashed as it arrives; refused when it is
/// (or says it is) larger than `limit` bytes.
pub(super) async fn spool(
    mut response: reqwest::Response,
    limit: u64,
    what: &dyn Fn() -> String,
    dir: &Path,
) -> Result<Spooled, RemoteError> {
    refuse_declared(&response, limit, what)?;
    let io = |e: std::io::Error| RemoteError::Download {
        url: what(),
        message: format!("cannot write it to {}: {e}", dir.display()),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    let mut hash = Sha256::new();
    let mut len = 0u64;
    while let Some(chunk) = next_chunk(&mut response, what).await? {
        len += chunk.len() as u64;
        if len > limit {
            return Err(too_large(what, limit));
        }
        hash.update(&chunk);
        file.write_all(&chunk).map_err(io)?;
    }
    file.flush().map_err(io)?;
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let digest = format!("sha256:{hex}")
        .parse()
        .expect("a SHA-256 in hex is a digest");
    Ok(Spooled { file, digest })
}

/// What an error answer says, for its message: the start of its body, the rest never read (and
/// the message says it was cut, so a reader knows the registry said more).
pub(super) async fn error_text(mut response: reqwest::Response) -> String {
    let status = response.status();
    let mut body = Vec::new();
    // One byte past the limit tells a cut body from one of exactly the limit.
    while body.len() <= ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let cut = body.len() > ERROR_BODY_BYTES;
    body.truncate(ERROR_BODY_BYTES);
    let text = String::from_utf8_lossy(&body);
    let text = text.trim();
    let mut said = if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    };
    if cut {
        said.push_str(&format!(
            " (the body cut off after {ERROR_BODY_BYTES} bytes)"
        ));
    }
    said
}

/// Refuse a body whose `Content-Length` is over `limit` before reading any of it.
fn refuse_declared(
    response: &reqwest::Response,
    limit: u64,
    what: &dyn Fn() -> String,
) -> Result<(), RemoteError> {
    match response.content_length() {
        Some(declared) if declared > limit => Err(too_large(what, limit)),
        _ => Ok(()),
    }
}

async fn next_chunk(
    response: &mut reqwest::Response,
    what: &dyn Fn() -> String,
) -> Result<Option<bytes::Bytes>, RemoteError> {
    response.chunk().await.map_err(|e| RemoteError::Download {
        url: what(),
        message: e.to_string(),
    })
}

fn too_large(what: &dyn Fn() -> String, limit: u64) -> RemoteError {
    RemoteError::TooLarge {
        what: what(),
        limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: Vec<u8>) -> reqwest::Response {
        http::Response::builder()
            .status(status)
            .body(body)
            .expect("a valid answer")
            .into()
    }

    #[tokio::test]
    async fn error_text_keeps_the_start_of_a_long_body_and_says_where_it_was_cut() {
        let said = error_text(answer(500, vec![b'x'; 1 << 20])).await;
        assert!(
            said.starts_with("HTTP 500 Internal Server Error: xxx"),
            "{said}"
        );
        assert!(
            said.ends_with("(the body cut off after 4096 bytes)"),
            "{said}"
        );
        assert!(said.len() < ERROR_BODY_BYTES + 100, "{}", said.len());
        let exact = error_text(answer(404, vec![b'y'; ERROR_BODY_BYTES])).await;
        assert!(!exact.contains("cut off"), "{exact}");
    }

    #[tokio::test]
    async fn read_refuses_a_body_past_the_limit() {
        let what = || "the answer".to_owned();
        let err = read(answer(200, vec![0; 5000]), 4096, &what)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "the answer is larger than 4096 bytes");
        assert_eq!(
            read(answer(200, vec![1; 10]), 4096, &what)
                .await
                .unwrap()
                .len(),
            10
        );
    }
}
