//! The `github` example plugin: the `github_repo` tool calls the GitHub REST API over `wasi:http` and
//! returns structured JSON (checked by the host against the declared output schema).
//!
//! The API base comes from the env var `GITHUB_API_URL` (default `https://api.github.com`; GitHub
//! Enterprise uses `https://HOST/api/v3`). The plugin never handles a token: grant one as a secret
//! header and the host adds `Authorization` to requests to the API only, e.g.
//!
//! ```toml
//! [plugins.github.network]
//! allow = ["https://api.github.com"]
//! [plugins.github.secrets.token]
//! from-env = "GITHUB_TOKEN"
//! header = "Authorization"
//! format = "Bearer {secret}"
//! destinations = ["https://api.github.com"]
//! ```

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost::plugin::types::ToolHints;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

const DEFAULT_API: &str = "https://api.github.com";
/// Repository JSON is a few KB; anything far larger is not what we asked for.
const MAX_BODY: usize = 1 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    owner: String,
    repo: String,
}

/// The fields of GitHub's repository object we return.
#[derive(Deserialize)]
struct Repo {
    full_name: String,
    description: Option<String>,
    html_url: String,
    stargazers_count: u64,
    forks_count: u64,
    open_issues_count: u64,
    language: Option<String>,
    license: Option<License>,
    default_branch: String,
    archived: bool,
    pushed_at: Option<String>,
}

#[derive(Deserialize)]
struct License {
    spdx_id: Option<String>,
}

struct Github;

impl Guest for Github {
    fn describe() -> Vec<ToolSpec> {
        let name = json!({ "type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$" });
        let input = json!({
            "type": "object",
            "properties": {
                "owner": { "description": "User or organisation, e.g. \"rust-lang\".", "allOf": [name] },
                "repo": { "description": "Repository name, e.g. \"rust\".", "allOf": [name] }
            },
            "required": ["owner", "repo"],
            "additionalProperties": false
        });
        let output = json!({
            "type": "object",
            "properties": {
                "full_name": { "type": "string" },
                "description": { "type": ["string", "null"] },
                "url": { "type": "string" },
                "stars": { "type": "integer" },
                "forks": { "type": "integer" },
                "open_issues": { "type": "integer" },
                "language": { "type": ["string", "null"] },
                "license": { "type": ["string", "null"], "description": "SPDX identifier" },
                "default_branch": { "type": "string" },
                "archived": { "type": "boolean" },
                "pushed_at": { "type": ["string", "null"] }
            },
            "required": ["full_name", "description", "url", "stars", "forks", "open_issues", "language",
                         "license", "default_branch", "archived", "pushed_at"],
            "additionalProperties": false
        });
        vec![ToolSpec {
            name: "github_repo".into(),
            title: Some("GitHub repository facts".into()),
            description:
                "Look up a GitHub repository: description, stars, forks, open issues, language, \
                          license, default branch, last push."
                    .into(),
            input_schema: input.to_string(),
            output_schema: Some(output.to_string()),
            hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT | ToolHints::OPEN_WORLD,
            permission_subject: Some("/owner".into()),
        }]
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        if name != "github_repo" {
            return Err(ToolError::InvalidInput(format!(
                "unknown tool '{name}'; this plugin provides only 'github_repo'"
            )));
        }
        let input: Input = serde_json::from_str(&input).map_err(|e| {
            ToolError::InvalidInput(format!("invalid input for 'github_repo': {e}"))
        })?;
        for (field, v) in [("owner", &input.owner), ("repo", &input.repo)] {
            let ok = !v.is_empty()
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
            if !ok || v == "." || v == ".." {
                return Err(ToolError::InvalidInput(format!(
                    "'{field}' {v:?} is not a GitHub name"
                )));
            }
        }
        let base = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| DEFAULT_API.to_string());
        let (status, body) = get(&base, &format!("/repos/{}/{}", input.owner, input.repo))
            .map_err(|e| {
                ToolError::Failed(format!("cannot reach the GitHub API at {base}: {e}"))
            })?;
        let full = format!("{}/{}", input.owner, input.repo);
        match status {
            200 => {}
            404 => {
                return Err(ToolError::Failed(format!(
                    "repository {full} not found (or it is private and no token is granted)"
                )));
            }
            _ => {
                let message = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["message"].as_str().map(str::to_string))
                    .unwrap_or_default();
                return Err(ToolError::Failed(format!(
                    "GitHub answered HTTP {status} for {full}: {message}"
                )));
            }
        }
        let repo: Repo = serde_json::from_slice(&body).map_err(|e| {
            ToolError::Failed(format!(
                "GitHub's answer for {full} is not a repository: {e}"
            ))
        })?;
        let license = repo.license.and_then(|l| l.spdx_id);
        let content = format!(
            "{} ({}){}\n{} stars, {} forks, {} open issues; language {}, license {}, default branch {}{}",
            repo.full_name,
            repo.html_url,
            repo.description
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default(),
            repo.stargazers_count,
            repo.forks_count,
            repo.open_issues_count,
            repo.language.as_deref().unwrap_or("unknown"),
            license.as_deref().unwrap_or("none"),
            repo.default_branch,
            if repo.archived { "; archived" } else { "" },
        );
        let structured = json!({
            "full_name": repo.full_name,
            "description": repo.description,
            "url": repo.html_url,
            "stars": repo.stargazers_count,
            "forks": repo.forks_count,
            "open_issues": repo.open_issues_count,
            "language": repo.language,
            "license": license,
            "default_branch": repo.default_branch,
            "archived": repo.archived,
            "pushed_at": repo.pushed_at,
        });
        Ok(ToolOutput {
            content,
            structured: Some(structured.to_string()),
        })
    }
}

/// GET `base` + `path` (base like `https://host[:port][/prefix]`): the status and the body.
fn get(base: &str, path: &str) -> Result<(u16, Vec<u8>), String> {
    let (scheme, rest) = base
        .split_once("://")
        .ok_or("GITHUB_API_URL must start with https:// or http://")?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        _ => return Err("GITHUB_API_URL must start with https:// or http://".into()),
    };
    let (authority, prefix) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let prefix = prefix.trim_end_matches('/');
    let full_path = if prefix.is_empty() {
        path.to_string()
    } else {
        format!("/{prefix}{path}")
    };

    let headers = Fields::from_list(&[
        (
            "accept".to_string(),
            b"application/vnd.github+json".to_vec(),
        ),
        (
            "user-agent".to_string(),
            b"toolhost-github-example/0.1".to_vec(),
        ),
        ("x-github-api-version".to_string(), b"2022-11-28".to_vec()),
    ])
    .map_err(|e| format!("invalid header: {e:?}"))?;
    let request = OutgoingRequest::new(headers);
    request
        .set_method(&Method::Get)
        .map_err(|()| "cannot set the method")?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "cannot set the scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| format!("invalid host {authority:?}"))?;
    request
        .set_path_with_query(Some(&full_path))
        .map_err(|()| format!("invalid path {full_path:?}"))?;

    let pending = outgoing_handler::handle(request, None).map_err(|e| describe(&e))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(describe(&e)),
        Some(Err(())) | None => return Err("the host returned no response".into()),
    };
    let status = response.status();
    let body = response
        .consume()
        .map_err(|()| "the response body was already taken")?;
    let mut out = Vec::new();
    {
        let stream = body
            .stream()
            .map_err(|()| "the response body stream was already taken")?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => {
                    out.extend_from_slice(&chunk);
                    if out.len() > MAX_BODY {
                        return Err(format!("the answer is larger than {MAX_BODY} bytes"));
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    let text = e.to_debug_string();
                    return Err(text
                        .strip_prefix("internal error: ")
                        .unwrap_or(&text)
                        .to_string());
                }
            }
        }
    }
    drop(body);
    Ok((status, out))
}

/// The host's message when it sent one (every refusal carries one), else the error code's name.
fn describe(e: &ErrorCode) -> String {
    match e {
        ErrorCode::InternalError(Some(m)) => m.clone(),
        other => format!("{other:?}"),
    }
}

export!(Github);
