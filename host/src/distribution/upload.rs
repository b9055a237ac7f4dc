//! Uploads for `toolhost push` and `toolhost sign`, by the OCI distribution API: each blob
//! skipped when a `HEAD` finds it, else uploaded monolithically (`POST /v2/<name>/blobs/uploads/`,
//! then `PUT <Location>?digest=`), then the manifest `PUT`. A registry's answers to uploads say
//! everything in their status and headers; their bodies are read through [`super::bounded`] all
//! the same (a small limit, error bodies cut at 4 KiB), so a hostile registry answering with a
//! gigabyte costs what the limit allows.
//!
//! It decides nothing about what is uploaded: the artifact is built by `toolhost_trust::oci`.

use reqwest::header::LOCATION;
use reqwest::{Method, Response};

use toolhost_trust::oci::MANIFEST_MEDIA_TYPE;
use toolhost_trust::source::Digest;

use super::RemoteError;
use super::api::{Access, Api, Call, Target};
use super::bounded;
use super::credentials::RegistryAuth;

/// The most of a successful upload answer's body read: the distribution API sends none.
const MAX_UPLOAD_ANSWER_BYTES: u64 = 4 << 10;

/// Upload `bytes` as blob `digest` of `repo`'s repository, unless the registry has it already.
pub(super) async fn blob(
    api: &Api,
    repo: &Target<'_>,
    auth: &RegistryAuth,
    digest: &Digest,
    bytes: bytes::Bytes,
) -> Result<(), RemoteError> {
    let what = || {
        format!(
            "upload of blob {digest} to {}/{}",
            repo.registry, repo.repository
        )
    };
    let at = |path: String| Target { path, ..*repo };
    let existing = at(format!("blobs/{digest}"));
    let head = Call {
        method: Method::HEAD,
        url: existing.url(&what)?,
        accept: "",
        body: None,
    };
    let found = api
        .call(&existing, Access::Push, &head, auth, &what)
        .await?;
    // A HEAD answer has no body to read.
    if found.status().is_success() {
        return Ok(());
    }
    let uploads = at("blobs/uploads/".into());
    let start = Call {
        method: Method::POST,
        url: uploads.url(&what)?,
        accept: "",
        body: None,
    };
    let started = expect(
        api.call(&uploads, Access::Push, &start, auth, &what)
            .await?,
        &what,
    )
    .await?;
    let location = started
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    drain(started, &what).await?;
    let location = location.ok_or_else(|| RemoteError::Registry {
        what: what(),
        message: "the registry started an upload without a Location".into(),
    })?;
    // A relative Location is below the registry's own origin.
    let mut url = uploads
        .url(&what)?
        .join(&location)
        .map_err(|e| RemoteError::Registry {
            what: what(),
            message: format!("the upload's Location {location}: {e}"),
        })?;
    url.query_pairs_mut().append_pair("digest", digest.as_str());
    let put = Call {
        method: Method::PUT,
        url,
        accept: "",
        body: Some(("application/octet-stream", bytes)),
    };
    let done = expect(
        api.call(&uploads, Access::Push, &put, auth, &what).await?,
        &what,
    )
    .await?;
    drain(done, &what).await
}

/// Put `bytes` as the manifest `reference` (a tag or digest) of `repo`'s repository.
pub(super) async fn manifest(
    api: &Api,
    repo: &Target<'_>,
    auth: &RegistryAuth,
    reference: &str,
    bytes: bytes::Bytes,
) -> Result<(), RemoteError> {
    let what = || format!("{}/{}:{reference}", repo.registry, repo.repository);
    let target = Target {
        path: format!("manifests/{reference}"),
        ..*repo
    };
    let put = Call {
        method: Method::PUT,
        url: target.url(&what)?,
        accept: "",
        body: Some((MANIFEST_MEDIA_TYPE, bytes)),
    };
    let done = expect(
        api.call(&target, Access::Push, &put, auth, &what).await?,
        &what,
    )
    .await?;
    drain(done, &what).await
}

/// `response` when its status is a success (`202 Accepted` for a started upload, `201 Created`
/// for a finished one, as registries differ in the detail), else an error with the start of its
/// body.
async fn expect(response: Response, what: &dyn Fn() -> String) -> Result<Response, RemoteError> {
    if response.status().is_success() {
        return Ok(response);
    }
    Err(RemoteError::Registry {
        what: what(),
        message: bounded::error_text(response).await,
    })
}

/// Read a successful answer's body to its end, within the limit (so the connection can be used
/// again), and drop it.
async fn drain(response: Response, what: &dyn Fn() -> String) -> Result<(), RemoteError> {
    bounded::read(response, MAX_UPLOAD_ANSWER_BYTES, &|| {
        format!("the registry's answer to the {}", what())
    })
    .await
    .map(drop)
}
