//! The `fetch` example plugin: GET a URL over `wasi:http` and return its text.
//!
//! It needs a network grant (`[plugins.fetch.network] allow = [...]`): without one the host refuses to
//! load it. The host decides where requests may go and refuses everything else with a message this
//! plugin passes on. The plugin follows redirects itself (at most [`MAX_REDIRECTS`]), so every hop is
//! checked by the host again; it keeps at most `max_bytes` of the body and returns text only.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

mod http;

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::json;
use toolhost::plugin::types::ToolHints;

use crate::http::{Fetched, Url};

const MAX_REDIRECTS: usize = 5;
const DEFAULT_MAX_BYTES: usize = 100_000;
const MAX_MAX_BYTES: usize = 2_000_000;
const USER_AGENT: &str = "toolhost-fetch/0.1";
const ACCEPT: &str = "text/html, text/plain;q=0.9, application/json;q=0.9, text/*;q=0.8, */*;q=0.1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    url: String,
    #[serde(default = "default_max")]
    max_bytes: usize,
}

fn default_max() -> usize {
    DEFAULT_MAX_BYTES
}

struct Fetch;

impl Guest for Fetch {
    fn describe() -> Vec<ToolSpec> {
        let input = json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The http:// or https:// URL to GET. Only destinations the operator allowed are reachable.",
                    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"
                },
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_MAX_BYTES,
                    "default": DEFAULT_MAX_BYTES,
                    "description": "Keep at most this many bytes of the body; the rest is cut with a note."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        });
        let output = json!({
            "type": "object",
            "properties": {
                "url": { "type": "string", "description": "The final URL, after redirects." },
                "status": { "type": "integer" },
                "content_type": { "type": ["string", "null"] },
                "bytes": { "type": "integer", "description": "Body bytes returned." },
                "truncated": { "type": "boolean" }
            },
            "required": ["url", "status", "content_type", "bytes", "truncated"],
            "additionalProperties": false
        });
        vec![ToolSpec {
            name: "fetch".into(),
            title: Some("Fetch a URL".into()),
            description:
                "GET a web page or text resource and return its text (HTML is returned as is). \
                          Follows up to 5 redirects. Binary content is refused."
                    .into(),
            input_schema: input.to_string(),
            output_schema: Some(output.to_string()),
            hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT | ToolHints::OPEN_WORLD,
            permission_subject: Some("/url".into()),
        }]
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        if name != "fetch" {
            return Err(ToolError::InvalidInput(format!(
                "unknown tool '{name}'; this plugin provides only 'fetch'"
            )));
        }
        let input: Input = serde_json::from_str(&input)
            .map_err(|e| ToolError::InvalidInput(format!("invalid input for 'fetch': {e}")))?;
        if !(1..=MAX_MAX_BYTES).contains(&input.max_bytes) {
            return Err(ToolError::InvalidInput(format!(
                "'max_bytes' must be between 1 and {MAX_MAX_BYTES}"
            )));
        }
        let mut url = Url::parse(&input.url).map_err(ToolError::InvalidInput)?;
        let mut hops = 0;
        let fetched = loop {
            let f = http::get(
                &url,
                &[("user-agent", USER_AGENT), ("accept", ACCEPT)],
                input.max_bytes,
            )
            .map_err(|e| ToolError::Failed(format!("cannot fetch {url}: {e}")))?;
            match (f.status, &f.location) {
                (301 | 302 | 303 | 307 | 308, Some(location)) => {
                    hops += 1;
                    if hops > MAX_REDIRECTS {
                        return Err(ToolError::Failed(format!(
                            "too many redirects (more than {MAX_REDIRECTS}); the last one pointed to {location}"
                        )));
                    }
                    url = url.join(location).map_err(|e| {
                        ToolError::Failed(format!("{url} redirected to a bad location: {e}"))
                    })?;
                }
                _ => break f,
            }
        };
        respond(&url, fetched)
    }
}

fn respond(url: &Url, f: Fetched) -> Result<ToolOutput, ToolError> {
    let text = String::from_utf8_lossy(&f.body).into_owned();
    if !(200..300).contains(&f.status) {
        let excerpt: String = text.chars().take(500).collect();
        return Err(ToolError::Failed(format!(
            "{url} answered HTTP {}: {excerpt}",
            f.status
        )));
    }
    if let Some(ct) = f.content_type.as_deref().filter(|ct| !is_text(ct)) {
        return Err(ToolError::Failed(format!(
            "{url} returned {ct}, which is not text; fetch returns text only"
        )));
    }
    let structured = json!({
        "url": url.to_string(),
        "status": f.status,
        "content_type": f.content_type,
        "bytes": f.body.len(),
        "truncated": f.truncated,
    });
    let mut content = text;
    if f.truncated {
        content.push_str(&format!(
            "\n\n[truncated: showing the first {} bytes; ask again with a larger max_bytes for more]",
            f.body.len()
        ));
    }
    Ok(ToolOutput {
        content,
        structured: Some(structured.to_string()),
    })
}

fn is_text(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-www-form-urlencoded"
        )
}

export!(Fetch);
