//! The console's page and its two assets, built by `host/console/build.sh` and embedded in the
//! binary (so `cargo install` users have the console without Node), each served with headers that
//! keep a page of toolhost's from running anything but its own script.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX: &[u8] = include_bytes!("../../../console/dist/index.html");
const APP_JS: &[u8] = include_bytes!("../../../console/dist/app.js");
const APP_CSS: &[u8] = include_bytes!("../../../console/dist/app.css");

/// No inline script or style, nothing from elsewhere, no framing, no form posted elsewhere.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// Adds the console's security headers to any of its answers.
pub(super) fn harden(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

fn asset(bytes: &'static [u8], kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], bytes).into_response()
}

/// `GET /console/`.
pub(super) async fn index() -> Response {
    asset(INDEX, "text/html; charset=utf-8")
}

/// `GET /console/assets/app.js`.
pub(super) async fn app_js() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

/// `GET /console/assets/app.css`.
pub(super) async fn app_css() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}
