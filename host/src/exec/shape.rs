//! Messages for models: every failure says what went wrong and what to try; long output is cut with a
//! marker that says how much was cut and how to ask for less.

use std::sync::Arc;

use serde_json::Value;

use super::checks::Checks;
use crate::registry::Tool;
use crate::sandbox::RunError;
use toolhost_call::call::{CallOutcome, ErrorKind};

/// Cut `text` to at most `limit` bytes at a character boundary, appending a marker. Returns whether it cut.
pub(crate) fn truncate(text: &mut String, limit: usize) -> bool {
    if text.len() <= limit {
        return false;
    }
    let total = text.len();
    let cut = toolhost_call::text::prefix(text, limit).len();
    text.truncate(cut);
    text.push_str(&format!(
        "\n\n[output truncated: showing the first {cut} of {total} bytes ({} bytes cut). \
         Ask for less, e.g. a line range, a narrower pattern or a smaller directory.]",
        total - cut
    ));
    true
}

/// The model-facing message for a call the sandbox ended.
pub(crate) fn run_error(tool: &str, e: &RunError) -> String {
    match e {
        RunError::Timeout(d) => format!(
            "Tool '{tool}' timed out after {} ms and was stopped. Try a smaller input or a narrower request.",
            d.as_millis()
        ),
        RunError::OutOfFuel(fuel) => format!(
            "Tool '{tool}' used up its compute budget ({fuel} fuel) and was stopped. \
             Try a smaller input or a narrower request."
        ),
        RunError::MemoryLimit { limit, .. } => format!(
            "Tool '{tool}' exceeded its memory limit of {} MiB and was stopped. Try a smaller input.",
            limit >> 20
        ),
        // Joined, not formatted: a hostile plugin can trap on every call (issue 20).
        RunError::Trap(msg) => [
            "Tool '",
            tool,
            "' crashed: ",
            msg,
            ". This is a fault in the tool; the same input will likely fail again.",
        ]
        .concat(),
        RunError::Cancelled => format!("The call to '{tool}' was cancelled."),
        // The detail (host paths, OS errors) goes to the operator's log and the audit record.
        RunError::Setup(_) => format!(
            "Tool '{tool}' could not be set up on the host, so it did not run; the operator's \
             log has the details. This is not a fault in your input."
        ),
    }
}

/// The model-facing message for a call stopped by the front end's limit on a whole call.
pub(crate) fn request_timeout(tool: &str, limit: std::time::Duration) -> String {
    format!(
        "The call to '{tool}' took longer than the server's request timeout of {} s and was \
         stopped. Try a smaller input or a narrower request.",
        limit.as_secs_f64()
    )
}

/// The message for a call that ended by asking the client for approval (2026-07-28).
pub(crate) fn input_required(tool: &str) -> String {
    format!("The call to '{tool}' needs the user's approval; the question went to the client.")
}

/// The model-facing message for an unknown tool: the available names, closest first.
pub(crate) fn unknown_tool<'a>(name: &str, available: impl Iterator<Item = &'a String>) -> String {
    let mut names: Vec<(f64, &String)> = available
        .map(|n| {
            (
                strsim::jaro_winkler(&name.to_lowercase(), &n.to_lowercase()),
                n,
            )
        })
        .collect();
    names.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    if names.is_empty() {
        return format!("Unknown tool '{name}'. No tools are available.");
    }
    let list: Vec<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
    format!(
        "Unknown tool '{name}'. Available tools: {}.",
        list.join(", ")
    )
}

/// The model-facing message for a tool that is not served while plugins are still loading: it
/// may be theirs, so try again shortly.
pub(crate) fn still_loading<'a>(
    name: &str,
    waited: std::time::Duration,
    loading: impl Iterator<Item = &'a String>,
) -> String {
    let plugins: Vec<&str> = loading.map(String::as_str).collect();
    let which = match plugins.as_slice() {
        [] => "its plugins".to_owned(),
        names => format!("plugins {}", names.join(", ")),
    };
    format!(
        "Tool '{name}' is not served yet: after {:.0} s, toolhost is still loading {which}, \
         which may provide it. Try again in a minute.",
        waited.as_secs_f64(),
    )
}

/// A successful run as an outcome: structured output checked against the tool's output schema
/// (off the runtime unless surely quick, see [`Checks`]), content cut to the output limit.
/// Returns whether it cut.
pub(super) async fn success(
    checks: &Checks,
    tool: &Arc<Tool>,
    mut content: String,
    structured: Option<String>,
    call_id: &str,
) -> (CallOutcome, bool) {
    let name = &tool.spec.name;
    let limit = tool.plugin.policy.output_bytes;
    let structured = match structured {
        None if tool.spec.output_schema.is_some() => {
            let msg = format!(
                "Tool '{name}' declares an output schema but returned no structured output."
            );
            return (error(call_id, ErrorKind::BadOutput, msg), false);
        }
        None => None,
        Some(text) if text.len() > limit => {
            content.push_str(&format!(
                "\n\n[structured output of {} bytes omitted: the limit is {limit} bytes]",
                text.len()
            ));
            None
        }
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Err(e) => {
                let msg =
                    format!("Tool '{name}' returned structured output that is not valid JSON: {e}");
                return (error(call_id, ErrorKind::BadOutput, msg), false);
            }
            Ok(v) => match (&tool.spec.output_schema, tool.schemas.ready()) {
                (None, _) => Some(v),
                // The input's check compiled both schemas, or the call ended there.
                (Some(_), None) => {
                    let msg = format!("The output schema of '{name}' is not compiled.");
                    return (error(call_id, ErrorKind::Internal, msg), false);
                }
                (Some(_), Some(schemas)) => {
                    let quick = schemas.output.as_ref().is_some_and(|s| s.is_quick(&v));
                    let checked = tool.clone();
                    let check = move || {
                        let verdict = checked
                            .schemas
                            .ready()
                            .and_then(|s| s.output.as_ref())
                            .map(|s| s.check(&v));
                        (v, verdict)
                    };
                    match checks.run(quick, check).await {
                        Ok((_, Some(Err(e)))) => {
                            let msg = format!(
                                "Tool '{name}' returned structured output that does not match its output schema:\n- {}",
                                e.problems().join("\n- ")
                            );
                            return (error(call_id, ErrorKind::BadOutput, msg), false);
                        }
                        Ok((v, _)) => Some(v),
                        Err(u) => {
                            let what = format!("the structured output of '{name}'");
                            let kind = match u.kind() {
                                ErrorKind::Timeout => ErrorKind::BadOutput,
                                other => other,
                            };
                            return (error(call_id, kind, u.message(&what)), false);
                        }
                    }
                }
            },
        },
    };
    let truncated = truncate(&mut content, limit);
    (CallOutcome::ok(call_id, content, structured), truncated)
}

/// A failed call's outcome.
pub(super) fn error(call_id: &str, kind: ErrorKind, content: String) -> CallOutcome {
    CallOutcome::failed(call_id, kind, content)
}

/// What the host refused or failed of a failed call's network requests, for the model: the guest
/// saw only `wasi:http` codes, and its own message may not say why.
pub(super) fn network_notes(notes: &[String]) -> String {
    let mut text = String::new();
    if !notes.is_empty() {
        text.push_str("\ntoolhost refused or could not complete the plugin's network requests:");
        for note in notes {
            text.push_str("\n- ");
            text.push_str(note);
        }
    }
    text
}

/// The paths of a failed call that no directory grant covers, each with the grant that would,
/// for the model and its user: the guest saw only EACCES, and its own message says no more.
pub(super) fn file_notes(notes: &[String]) -> String {
    let mut text = String::new();
    for note in notes {
        text.push_str("\ntoolhost: ");
        text.push_str(note);
    }
    text
}

/// The message for a call the caller cancelled.
pub(super) fn cancelled(tool: &str) -> String {
    format!("The call to '{tool}' was cancelled.")
}

/// The message for a call an operator stopped from the console.
pub(super) fn cancelled_by_operator(tool: &str) -> String {
    format!(
        "The call to '{tool}' was stopped by toolhost's operator before it finished; do not call \
         it again with the same input unless the user asks you to."
    )
}

/// The message for a call stopped because the daemon shut down before it finished.
pub(super) fn shut_down(tool: &str) -> String {
    format!(
        "toolhost shut down before the call to '{tool}' finished, and stopped it; call the tool \
         again once toolhost is back."
    )
}

/// The message for a call whose approval a person declined.
pub(super) fn declined(tool: &str) -> String {
    format!("Permission denied for '{tool}': the user declined the call.")
}

/// The message for a call whose approval question nobody answered (`why`).
pub(super) fn unanswered(tool: &str, why: &str) -> String {
    format!(
        "The call to '{tool}' needs a person's approval, and none came ({why}), so it did not \
         run. Nobody declined it: you may call it again to ask again."
    )
}

/// The message for a call whose approval was given for another input.
pub(super) fn mismatched(tool: &str) -> String {
    format!(
        "The approval that came with this call to '{tool}' was given for a different input, so \
         the call did not run. Call the tool again without the earlier answer to be asked anew."
    )
}

/// The refusal of a call that could not be recorded, when the policy refuses unaudited calls.
pub(super) fn audit_unavailable() -> String {
    "toolhost cannot write its audit log and is configured to refuse unaudited calls. \
     An operator must fix the audit log; retrying now will fail the same way."
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_at_a_char_boundary_with_marker() {
        let mut s = "é".repeat(10); // 20 bytes
        assert!(truncate(&mut s, 5));
        assert!(s.starts_with("éé[") || s.starts_with("éé\n"), "{s}");
        assert!(s.contains("first 4 of 20 bytes (16 bytes cut)"), "{s}");
        let mut short = "abc".to_string();
        assert!(!truncate(&mut short, 5));
        assert_eq!(short, "abc");
    }

    #[test]
    fn lists_closest_tool_first() {
        let names = [
            "write_file".to_string(),
            "read_file".to_string(),
            "echo".to_string(),
        ];
        let m = unknown_tool("reed_file", names.iter());
        assert!(
            m.starts_with("Unknown tool 'reed_file'. Available tools: read_file,"),
            "{m}"
        );
    }
}
