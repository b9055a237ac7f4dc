//! A pipeline outcome as an MCP `tools/call` answer.
//!
//! Failures a model can act on (invalid input, denied, timed out, tool failed, busy, ...) are results
//! with `isError: true` and a message that says what to try. An unknown tool is a JSON-RPC error
//! `-32602`, as the 2025-11-25 specification shows it (its message still lists the available tools).
//! Structured output goes in `structuredContent` with its JSON text as a content block, and never on
//! errors. `_meta` carries the audit call id and, on errors, the stable error kind.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Value, json};

use crate::exec::{CallOutcome, ErrorKind};

/// `_meta` key of the call's id in the audit log.
pub(crate) const META_CALL_ID: &str = "toolhost/callId";
/// `_meta` key of the error kind (`denied`, `invalid_input`, ...) on error results.
pub(crate) const META_ERROR_KIND: &str = "toolhost/errorKind";

/// The answer to a `tools/call` for `tool`.
pub(crate) fn to_result(tool: &str, outcome: CallOutcome) -> Result<CallToolResult, ErrorData> {
    let CallOutcome {
        call_id,
        content,
        structured,
        is_error,
        error_kind,
    } = outcome;
    if error_kind == Some(ErrorKind::UnknownTool) {
        return Err(ErrorData::invalid_params(
            content,
            Some(json!({ "tool": tool })),
        ));
    }
    let mut meta = MetaObject::new();
    meta.insert(META_CALL_ID.into(), Value::String(call_id));
    let mut result = if is_error {
        let kind = error_kind.unwrap_or(ErrorKind::Internal);
        meta.insert(META_ERROR_KIND.into(), Value::String(kind.as_str().into()));
        CallToolResult::error(vec![ContentBlock::text(content)])
    } else {
        match structured {
            None => CallToolResult::success(vec![ContentBlock::text(content)]),
            Some(value) => {
                let json_text = value.to_string();
                let mut blocks = Vec::with_capacity(2);
                if !content.is_empty() && content != json_text {
                    blocks.push(ContentBlock::text(content));
                }
                blocks.push(ContentBlock::text(json_text));
                let mut r = CallToolResult::success(blocks);
                r.structured_content = Some(value);
                r
            }
        }
    };
    result.meta = Some(meta);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(is_error: bool, kind: Option<ErrorKind>, structured: Option<Value>) -> CallOutcome {
        CallOutcome {
            call_id: "c1".into(),
            content: "2 + 3 = 5".into(),
            structured,
            is_error,
            error_kind: kind,
        }
    }

    #[test]
    fn structured_output_comes_with_its_json_text() {
        let r = to_result("calc", outcome(false, None, Some(json!({"result": 5.0})))).unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["structuredContent"], json!({"result": 5.0}));
        assert_eq!(v["content"][0]["text"], "2 + 3 = 5");
        assert_eq!(v["content"][1]["text"], r#"{"result":5.0}"#);
        assert_eq!(v["isError"], false);
        assert_eq!(v["_meta"][META_CALL_ID], "c1");
    }

    #[test]
    fn errors_carry_their_kind_and_no_structured_content() {
        let r = to_result("calc", outcome(true, Some(ErrorKind::Denied), None)).unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["isError"], true);
        assert!(v.get("structuredContent").is_none());
        assert_eq!(v["_meta"][META_ERROR_KIND], "denied");
    }

    #[test]
    fn unknown_tool_is_invalid_params() {
        let e = to_result("nope", outcome(true, Some(ErrorKind::UnknownTool), None)).unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(e.message, "2 + 3 = 5");
    }
}
