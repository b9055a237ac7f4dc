//! Bodies toolhost reads from the network in full (an identity provider's answers, its keys), never
//! more than a limit: a `Content-Length` above it is refused before a byte is read, and a body that
//! does not say its length is cut off as soon as it passes the limit. A server, even a configured
//! one, is untrusted: a gigabyte of answer must cost what the limit allows, not a gigabyte of memory.

/// Why a body was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Larger than the limit (said, or found while reading).
    #[error("its answer is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The connection broke off.
    #[error("its answer broke off ({0})")]
    Broken(String),
}

/// The whole body of `response`, at most `limit` bytes.
pub async fn read(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(BodyError::TooLarge { limit });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(BodyError::Broken(e.without_url().to_string())),
        }
    }
}
