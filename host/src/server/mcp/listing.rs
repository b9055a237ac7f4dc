//! `tools/list`: the catalog as MCP tools, one page at a time, in name order.
//!
//! The cursor is the name of the last tool on the previous page, so pages stay consistent while
//! plugins come and go: a reload between two pages neither repeats nor skips the tools that remain.
//! An output schema is listed as the client's protocol revision allows (see [`Era`]).

use std::ops::Bound;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{ListToolsResult, Tool as McpTool, ToolAnnotations};

use super::outcome::Era;
use crate::registry::Catalog;
use toolhost_call::tool::{ToolSpec, is_valid_name};

/// Tools per `tools/list` page.
pub(crate) const PAGE_SIZE: usize = 100;

/// One page of `catalog`, starting after `cursor`.
pub(crate) fn page(
    catalog: &Catalog,
    cursor: Option<&str>,
    size: usize,
    era: Era,
    sees: impl Fn(&str) -> bool,
) -> Result<ListToolsResult, ErrorData> {
    let start = match cursor {
        None => Bound::Unbounded,
        Some(c) if is_valid_name(c) => Bound::Excluded(c.to_string()),
        Some(c) => {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid cursor {c:?}: pass the nextCursor of the previous tools/list result, or none"
                ),
                None,
            ));
        }
    };
    let mut range = catalog
        .tools
        .range((start, Bound::Unbounded))
        .filter(|(name, _)| sees(name));
    let tools: Vec<McpTool> = range
        .by_ref()
        .take(size)
        .map(|(_, t)| to_mcp(&t.spec, era))
        .collect();
    let more = range.next().is_some();
    let mut result = ListToolsResult::with_all_items(Vec::new());
    result.next_cursor = if more {
        tools.last().map(|t| t.name.to_string())
    } else {
        None
    };
    result.tools = tools;
    // The tool set may change at any time (hot reload): nothing may be cached.
    result.ttl_ms = Some(0);
    Ok(result)
}

/// One tool as MCP describes it to a client of `era`.
pub(crate) fn to_mcp(spec: &ToolSpec, era: Era) -> McpTool {
    let input = match &spec.input_schema {
        serde_json::Value::Object(map) => map.clone(),
        // The registry only accepts object schemas; keep clients working if that ever changes.
        _ => serde_json::Map::from_iter([("type".to_string(), "object".into())]),
    };
    let h = spec.hints;
    // A tool that says both read-only and destructive is treated as destructive, as the gate does.
    let read_only = h.is_read_only();
    let annotations = ToolAnnotations::from_raw(
        spec.title.clone(),
        Some(read_only),
        Some(h.destructive),
        Some(h.idempotent),
        Some(h.open_world),
    );
    let mut tool = McpTool::new(spec.name.clone(), spec.description.clone(), Arc::new(input))
        .with_annotations(annotations);
    if let Some(title) = &spec.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(serde_json::Value::Object(out)) = &spec.output_schema
        && (era == Era::AnyValue || out.get("type").and_then(|t| t.as_str()) == Some("object"))
    {
        tool = tool.with_raw_output_schema(Arc::new(out.clone()));
    }
    tool
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use toolhost_call::tool::Hints;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: Some("Title".into()),
            description: "does things".into(),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            output_schema: Some(json!({"type": "object"})),
            hints: Hints {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            permission_subject: None,
        }
    }

    #[test]
    fn maps_schemas_title_and_hints() {
        let t = serde_json::to_value(to_mcp(&spec("read_file"), Era::ObjectsOnly)).unwrap();
        assert_eq!(t["name"], "read_file");
        assert_eq!(t["title"], "Title");
        assert_eq!(t["inputSchema"]["properties"]["a"]["type"], "string");
        assert_eq!(t["outputSchema"], json!({"type": "object"}));
        assert_eq!(
            t["annotations"],
            json!({"title": "Title", "readOnlyHint": true, "destructiveHint": false,
                   "idempotentHint": true, "openWorldHint": false})
        );
    }

    #[test]
    fn contradictory_hints_are_not_read_only() {
        let mut s = spec("rm");
        s.hints.destructive = true;
        let t = serde_json::to_value(to_mcp(&s, Era::ObjectsOnly)).unwrap();
        assert_eq!(t["annotations"]["readOnlyHint"], false);
        assert_eq!(t["annotations"]["destructiveHint"], true);
    }

    #[test]
    fn lists_non_object_output_schemas_from_2026_only() {
        for schema in [
            json!({"type": "array", "items": {"type": "integer"}}),
            json!({"type": ["object", "null"]}),
            json!({"properties": {"n": {"type": "integer"}}}),
        ] {
            let mut s = spec("count");
            s.output_schema = Some(schema.clone());
            let old = serde_json::to_value(to_mcp(&s, Era::ObjectsOnly)).unwrap();
            assert!(old.get("outputSchema").is_none(), "{old}");
            let new = serde_json::to_value(to_mcp(&s, Era::AnyValue)).unwrap();
            assert_eq!(new["outputSchema"], schema);
        }
        let t = serde_json::to_value(to_mcp(&spec("read"), Era::AnyValue)).unwrap();
        assert_eq!(t["outputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn rejects_a_cursor_that_is_not_a_tool_name() {
        let e = page(
            &Catalog::default(),
            Some("not a name!"),
            10,
            Era::AnyValue,
            |_| true,
        )
        .unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn empty_catalog_has_one_empty_page() {
        let p = page(&Catalog::default(), None, 10, Era::ObjectsOnly, |_| true).unwrap();
        assert!(p.tools.is_empty() && p.next_cursor.is_none());
    }
}
