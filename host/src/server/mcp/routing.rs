//! What a request no handler took is told: invalid params for a known method with params of the
//! wrong shape, method not found for the rest (and, on 2026-07-28, for the methods it removed).

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, ErrorCode, PaginatedRequestParams};
use serde_json::Value;

/// The methods rmcp reads into typed requests. One of them arriving as a custom request had params
/// of the wrong shape (`"name": 5`, `"arguments": []`): JSON-RPC answers that with -32602 Invalid
/// params, where rmcp's default says -32601 Method not found.
const TYPED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Methods the 2026-07-28 revision removed: for its clients they are unknown, whatever the params.
const REMOVED_IN_2026: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The error for a request no handler took: bad params of a known method, or an unknown method
/// (which includes, for a 2026-07-28 request, the methods that revision removed).
pub(super) fn unroutable(method: &str, params: Option<&Value>, modern: bool) -> ErrorData {
    if !TYPED_METHODS.contains(&method) || (modern && REMOVED_IN_2026.contains(&method)) {
        return ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
            None,
        );
    }
    let params = params.cloned().unwrap_or(Value::Null);
    let why = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params).err(),
        _ => None,
    };
    let message = match why {
        Some(e) => format!("invalid params for {method}: {e}"),
        None => format!("invalid params for {method}"),
    };
    ErrorData::invalid_params(message, None)
}
