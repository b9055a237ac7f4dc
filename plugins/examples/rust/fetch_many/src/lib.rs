//! The `fetch_many` example plugin, for WASI 0.3 (`toolhost:plugin@0.2.0`): GET several URLs at
//! once over `wasi:http@0.3` and return what each answered, streaming a line per URL as it is
//! answered (an MCP client sees them as progress; the result has them all, in the order asked).
//!
//! Its `call` is an `async func`: the requests wait together, so the call takes about as long as
//! the slowest one, not their sum. Like `fetch`, it needs a network grant
//! (`[plugins.fetch_many.network] allow = [...]`); the host checks every request against it and
//! the guest gets the `wasi:http` error code of a refused one, which is reported for that URL.

wit_bindgen::generate!({
    path: "../../../../wit/v0.2",
    world: "plugin",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use futures::future::join_all;
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost::plugin::host;
use toolhost::plugin::types::{ToolHints, Update};
use wasip3::http::client;
use wasip3::http::types::{Fields, Method, Request, Response, Scheme};

const MAX_URLS: usize = 16;
const DEFAULT_MAX_BYTES: usize = 20_000;
const MAX_MAX_BYTES: usize = 200_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    urls: Vec<String>,
    #[serde(default = "default_max")]
    max_bytes: usize,
}

fn default_max() -> usize {
    DEFAULT_MAX_BYTES
}

/// What one URL answered: its status and text, or why there is none.
struct Answer {
    url: String,
    result: Result<(u16, String), String>,
}

impl Answer {
    fn line(&self) -> String {
        match &self.result {
            Ok((status, text)) => format!("{} -> {status}, {} bytes", self.url, text.len()),
            Err(e) => format!("{} -> failed: {e}", self.url),
        }
    }

    fn json(&self) -> Value {
        match &self.result {
            Ok((status, text)) => json!({ "url": self.url, "status": status, "text": text }),
            Err(e) => json!({ "url": self.url, "error": e }),
        }
    }
}

struct FetchMany;

impl Guest for FetchMany {
    fn describe() -> Vec<ToolSpec> {
        let input = json!({
            "type": "object",
            "properties": {
                "urls": {
                    "type": "array",
                    "items": { "type": "string", "description": "An http:// or https:// URL." },
                    "minItems": 1,
                    "maxItems": MAX_URLS,
                    "description": "The URLs to GET, all at once."
                },
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_MAX_BYTES,
                    "default": DEFAULT_MAX_BYTES,
                    "description": "The most bytes of each body to keep."
                }
            },
            "required": ["urls"],
            "additionalProperties": false
        });
        vec![ToolSpec {
            name: "fetch_many".into(),
            title: Some("Fetch several URLs at once".into()),
            description: "GET several URLs at the same time and return each one's status and text \
                          (or why it failed), in the order given. Only destinations the operator \
                          allowed are reachable."
                .into(),
            input_schema: input.to_string(),
            output_schema: None,
            hints: ToolHints::READ_ONLY | ToolHints::OPEN_WORLD | ToolHints::IDEMPOTENT,
            permission_subject: None,
        }]
    }

    async fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        if name != "fetch_many" {
            return Err(ToolError::InvalidInput(format!("no tool named {name}")));
        }
        let input: Input =
            serde_json::from_str(&input).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        if input.urls.is_empty() || input.urls.len() > MAX_URLS {
            return Err(ToolError::InvalidInput(format!(
                "give 1 to {MAX_URLS} URLs"
            )));
        }
        let max = input.max_bytes.clamp(1, MAX_MAX_BYTES);
        let (updates, reader) = wit_stream::new::<Update>();
        host::updates(reader);
        // One writer for all the requests: each waits its turn to say its line.
        let updates = futures::lock::Mutex::new(Some(updates));
        let fetches = input.urls.iter().map(|url| async {
            let answer = Answer {
                url: url.clone(),
                result: get(url, max).await,
            };
            // Said as soon as it is known; once the host stops reading, no more lines are written.
            let mut writer = updates.lock().await;
            if let Some(w) = writer.as_mut()
                && w.write_one(Update::Partial(answer.line())).await.is_some()
            {
                *writer = None;
            }
            answer
        });
        let answers = join_all(fetches).await;
        let content: Vec<String> = answers
            .iter()
            .map(|a| match &a.result {
                Ok((_, text)) => format!("## {}\n{text}", a.line()),
                Err(_) => format!("## {}", a.line()),
            })
            .collect();
        let structured = Value::Array(answers.iter().map(Answer::json).collect());
        Ok(ToolOutput {
            content: content.join("\n\n"),
            structured: Some(structured.to_string()),
        })
    }
}

/// GET `url`, keeping at most `max` bytes of its body, as text.
async fn get(url: &str, max: usize) -> Result<(u16, String), String> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err("only http:// and https:// URLs".into()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (_, trailers) = wasip3::wit_future::new(|| Ok(None));
    let (request, _sent) = Request::new(Fields::new(), None, trailers, None);
    let set = |ok: Result<(), ()>, what: &str| ok.map_err(|()| format!("invalid {what}"));
    set(request.set_method(&Method::Get), "method")?;
    set(request.set_scheme(Some(&scheme)), "scheme")?;
    set(request.set_authority(Some(authority)), "host")?;
    set(request.set_path_with_query(Some(path)), "path")?;
    let response = client::send(request).await.map_err(|e| format!("{e:?}"))?;
    let status = response.get_status_code();
    let (_, done) = wasip3::wit_future::new(|| Ok(()));
    let (mut body, _trailers) = Response::consume_body(response, done);
    let mut kept = Vec::new();
    while kept.len() < max {
        let (result, chunk) = body.read(Vec::with_capacity(max - kept.len())).await;
        kept.extend_from_slice(&chunk);
        if !matches!(result, wit_bindgen::StreamResult::Complete(_)) {
            break;
        }
    }
    kept.truncate(max);
    Ok((status, String::from_utf8_lossy(&kept).into_owned()))
}

export!(FetchMany);
