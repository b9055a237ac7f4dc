//! A pipeline outcome as an MCP `tools/call` answer.
//!
//! Failures a model can act on (invalid input, denied, timed out, tool failed, busy, ...) are results
//! with `isError: true` and a message that says what to try. An unknown tool is a JSON-RPC error
//! `-32602`, as the 2025-11-25 specification shows it (its message still lists the available tools).
//! Structured output goes in `structuredContent` with its JSON text as a content block, and never on
//! errors. Clients before 2026-07-28 accept only an object there (see [`Era`]): any other value
//! reaches them as its JSON text alone. `_meta` carries the audit call id and, on errors, the stable
//! error kind.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, ProtocolVersion};
use serde_json::{Value, json};

use crate::exec::{CallOutcome, CallStatus, ErrorKind};

/// `_meta` key of the call's id in the audit log.
pub(crate) const META_CALL_ID: &str = "toolhost/callId";
/// `_meta` key of the error kind (`denied`, `invalid_input`, ...) on error results.
pub(crate) const META_ERROR_KIND: &str = "toolhost/errorKind";
/// `_meta` key of a `rate_limited` result's wait before a retry, in milliseconds.
pub(crate) const META_RETRY_AFTER: &str = "toolhost/retryAfterMs";

/// Which protocol revision's rules for structured output a client gets.
///
/// Up to 2025-11-25, a tool's `outputSchema` must be an object schema (`"type": "object"`) and
/// `structuredContent` an object; 2026-07-28 allows any JSON Schema and any JSON value. For the
/// older revisions a tool whose output schema is not an object schema is listed without one, and
/// a structured result that is not an object is sent as its JSON text only. Wrapping it in an
/// object instead would give old and new clients different data for the same call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// Up to 2025-11-25: objects only. Also for a client whose revision is unknown, since these
    /// answers are valid in both.
    ObjectsOnly,
    /// 2026-07-28 and later: any JSON value.
    AnyValue,
}

impl Era {
    /// The rules of `version`.
    pub(crate) fn of(version: Option<ProtocolVersion>) -> Self {
        match version {
            Some(v) if v >= ProtocolVersion::V_2026_07_28 => Self::AnyValue,
            _ => Self::ObjectsOnly,
        }
    }
}

/// The answer to a `tools/call` for `tool`, by the rules of `era`.
pub(crate) fn to_result(
    tool: &str,
    outcome: CallOutcome,
    era: Era,
) -> Result<CallToolResult, ErrorData> {
    let CallOutcome {
        call_id,
        content,
        status,
        retry_after,
    } = outcome;
    if status == CallStatus::Failed(ErrorKind::UnknownTool) {
        return Err(ErrorData::invalid_params(
            content,
            Some(json!({ "tool": tool })),
        ));
    }
    let mut meta = MetaObject::new();
    meta.insert(META_CALL_ID.into(), Value::String(call_id));
    let mut result = match status {
        CallStatus::Failed(kind) => {
            meta.insert(META_ERROR_KIND.into(), Value::String(kind.as_str().into()));
            if let Some(wait) = retry_after {
                // A `rate_limited` call: when a client may try again, for one that retries itself.
                let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                meta.insert(META_RETRY_AFTER.into(), Value::from(ms));
            }
            CallToolResult::error(vec![ContentBlock::text(content)])
        }
        CallStatus::Ok { structured } => match structured {
            None => CallToolResult::success(vec![ContentBlock::text(content)]),
            Some(value) => {
                let json_text = value.to_string();
                let mut blocks = Vec::with_capacity(2);
                if !content.is_empty() && content != json_text {
                    blocks.push(ContentBlock::text(content));
                }
                blocks.push(ContentBlock::text(json_text));
                let mut r = CallToolResult::success(blocks);
                if value.is_object() || era == Era::AnyValue {
                    r.structured_content = Some(value);
                }
                r
            }
        },
    };
    result.meta = Some(meta);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(kind: Option<ErrorKind>, structured: Option<Value>) -> CallOutcome {
        let content = "2 + 3 = 5".to_owned();
        match kind {
            Some(kind) => CallOutcome::failed("c1", kind, content),
            None => CallOutcome::ok("c1", content, structured),
        }
    }

    #[test]
    fn sends_non_object_structured_output_as_text_before_2026() {
        for value in [json!([1, 2]), json!("five"), json!(5), json!(null)] {
            let r = to_result("calc", outcome(None, Some(value.clone())), Era::ObjectsOnly);
            let v = serde_json::to_value(r.unwrap()).unwrap();
            assert!(v.get("structuredContent").is_none(), "{v}");
            assert_eq!(v["content"][1]["text"], value.to_string(), "{v}");
            let r = to_result("calc", outcome(None, Some(value.clone())), Era::AnyValue);
            let v = serde_json::to_value(r.unwrap()).unwrap();
            assert_eq!(v["structuredContent"], value, "{v}");
        }
        let object = Some(json!({"n": 1}));
        let r = to_result("calc", outcome(None, object), Era::ObjectsOnly).unwrap();
        assert_eq!(r.structured_content, Some(json!({"n": 1})));
    }

    #[test]
    fn tells_eras_by_protocol_version() {
        assert_eq!(Era::of(None), Era::ObjectsOnly);
        assert_eq!(
            Era::of(Some(ProtocolVersion::V_2025_11_25)),
            Era::ObjectsOnly
        );
        assert_eq!(
            Era::of(Some(ProtocolVersion::V_2024_11_05)),
            Era::ObjectsOnly
        );
        assert_eq!(Era::of(Some(ProtocolVersion::V_2026_07_28)), Era::AnyValue);
    }

    #[test]
    fn structured_output_comes_with_its_json_text() {
        let r = to_result(
            "calc",
            outcome(None, Some(json!({"result": 5.0}))),
            Era::ObjectsOnly,
        )
        .unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["structuredContent"], json!({"result": 5.0}));
        assert_eq!(v["content"][0]["text"], "2 + 3 = 5");
        assert_eq!(v["content"][1]["text"], r#"{"result":5.0}"#);
        assert_eq!(v["isError"], false);
        assert_eq!(v["_meta"][META_CALL_ID], "c1");
    }

    #[test]
    fn errors_carry_their_kind_and_no_structured_content() {
        let r = to_result(
            "calc",
            outcome(Some(ErrorKind::Denied), None),
            Era::AnyValue,
        )
        .unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["isError"], true);
        assert!(v.get("structuredContent").is_none());
        assert_eq!(v["_meta"][META_ERROR_KIND], "denied");
        assert!(v["_meta"].get(META_RETRY_AFTER).is_none());
    }

    #[test]
    fn a_rate_limited_result_says_when_to_retry() {
        let mut o = outcome(Some(ErrorKind::RateLimited), None);
        o.retry_after = Some(std::time::Duration::from_millis(2500));
        let v = serde_json::to_value(to_result("calc", o, Era::AnyValue).unwrap()).unwrap();
        assert_eq!(v["_meta"][META_ERROR_KIND], "rate_limited");
        assert_eq!(v["_meta"][META_RETRY_AFTER], 2500);
    }

    #[test]
    fn unknown_tool_is_invalid_params() {
        let e = to_result(
            "nope",
            outcome(Some(ErrorKind::UnknownTool), None),
            Era::AnyValue,
        )
        .unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(e.message, "2 + 3 = 5");
    }
}
