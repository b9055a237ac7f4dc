//! The `search_tools` example plugin: finds tools by what they do, for hosts with more tools than
//! a model should read in one list. It ranks the tools its caller may see (the host's
//! `toolhost:plugin/tools` interface lists exactly those, within the plugin's `call-tools` grant)
//! with BM25 over each tool's name, title, description and input properties, and returns the best
//! ones' full definitions, ready to call. It calls no tool itself.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "tool-caller",
});

mod index;

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost::plugin::tools;
use toolhost::plugin::types::ToolHints;

use index::{Document, Index};

const MAX_LIMIT: usize = 50;
const DESCRIPTION: &str = "Find tools by what they do. Ranks every tool you may call by how well \
     its name, description and inputs match the query, and returns the best ones' full \
     definitions (name, description, input schema), ready to call. Use it when the tool you need \
     is not in your list.";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    query: String,
    #[serde(default = "five")]
    limit: usize,
}

fn five() -> usize {
    5
}

struct Search;

impl Guest for Search {
    fn describe() -> Vec<ToolSpec> {
        let input = json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "What the tool should do, in a few words, e.g. \"read a file\"."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": 5,
                    "description": "Return at most this many tools."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let output = json!({
            "type": "object",
            "properties": {
                "tools": { "type": "array", "items": { "type": "object" } },
                "searched": { "type": "integer", "description": "How many tools were ranked." }
            },
            "required": ["tools", "searched"]
        });
        vec![ToolSpec {
            name: "search_tools".into(),
            title: Some("Search tools".into()),
            description: DESCRIPTION.into(),
            input_schema: input.to_string(),
            output_schema: Some(output.to_string()),
            hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
            permission_subject: None,
        }]
    }

    fn call(_name: String, input: String) -> Result<ToolOutput, ToolError> {
        let input: Input =
            serde_json::from_str(&input).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        let specs = tools::list();
        let schemas: Vec<Option<Value>> = specs
            .iter()
            .map(|s| serde_json::from_str(&s.input_schema).ok())
            .collect();
        let docs: Vec<Document<'_>> = specs
            .iter()
            .zip(&schemas)
            .map(|(s, schema)| Document {
                name: &s.name,
                title: s.title.as_deref(),
                description: &s.description,
                schema: schema.as_ref(),
            })
            .collect();
        let scores = Index::new(&docs).scores(&input.query);
        let mut ranked: Vec<usize> = (0..specs.len()).filter(|&i| scores[i] > 0.0).collect();
        ranked.sort_by(|&a, &b| {
            scores[b]
                .total_cmp(&scores[a])
                .then_with(|| specs[a].name.cmp(&specs[b].name))
        });
        ranked.truncate(input.limit.clamp(1, MAX_LIMIT));
        let found: Vec<Value> = ranked
            .iter()
            .map(|&i| {
                let s = &specs[i];
                json!({
                    "name": s.name,
                    "title": s.title,
                    "description": s.description,
                    "inputSchema": schemas[i],
                    "outputSchema": s.output_schema.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok()),
                })
            })
            .collect();
        let content = if found.is_empty() {
            format!(
                "No tool matches '{}' among the {} you may call; try other words.",
                input.query,
                specs.len()
            )
        } else {
            found
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        };
        Ok(ToolOutput {
            content,
            structured: Some(json!({ "tools": found, "searched": specs.len() }).to_string()),
        })
    }
}

export!(Search);
