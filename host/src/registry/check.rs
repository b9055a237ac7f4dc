//! Checks a plugin's declared tool specs before any of them is served: names, schemas, hints, subjects.

use serde_json::Value;

use crate::gate::{InputValidator, OutputValidator};
use crate::sandbox::GuestSpec;
use crate::tool::{ToolSpec, is_valid_name};

/// Most tools one plugin may declare; more is a bug or an attack on the tool list.
pub(crate) const MAX_TOOLS_PER_PLUGIN: usize = 256;
/// Longest description accepted, in bytes.
const MAX_DESCRIPTION: usize = 8192;

/// A spec that passed every check, with its compiled validators.
pub(crate) struct CheckedTool {
    pub(crate) spec: ToolSpec,
    pub(crate) input: InputValidator,
    pub(crate) output: Option<OutputValidator>,
}

/// Check every spec; the first problem rejects the whole plugin with a message naming the tool.
pub(crate) fn check_specs(specs: Vec<GuestSpec>) -> Result<Vec<CheckedTool>, String> {
    if specs.is_empty() {
        return Err("describe returned no tools".into());
    }
    if specs.len() > MAX_TOOLS_PER_PLUGIN {
        return Err(format!(
            "describe returned {} tools; a plugin may declare at most {MAX_TOOLS_PER_PLUGIN}",
            specs.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(specs.len());
    for s in specs {
        if !is_valid_name(&s.name) {
            return Err(format!(
                "tool name {:?} is not accepted by LLM APIs: use 1-64 letters, digits, '_' or '-'",
                truncate(&s.name, 80)
            ));
        }
        if !seen.insert(s.name.clone()) {
            return Err(format!("tool '{}' is declared twice", s.name));
        }
        out.push(check_one(s)?);
    }
    Ok(out)
}

fn check_one(s: GuestSpec) -> Result<CheckedTool, String> {
    let name = &s.name;
    if s.description.trim().is_empty() {
        return Err(format!(
            "tool '{name}': the description is empty; models need it to choose the tool"
        ));
    }
    if s.description.len() > MAX_DESCRIPTION {
        return Err(format!(
            "tool '{name}': the description exceeds {MAX_DESCRIPTION} bytes"
        ));
    }
    if s.hints.read_only && s.hints.destructive {
        return Err(format!(
            "tool '{name}': hints read-only and destructive contradict each other"
        ));
    }
    let input_schema = parse_schema(name, "input-schema", &s.input_schema)?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "tool '{name}': input-schema must describe an object (\"type\": \"object\"), as LLM APIs require"
        ));
    }
    let input = InputValidator::compile(&input_schema)
        .map_err(|e| format!("tool '{name}': input-schema: {e}"))?;
    let (output_schema, output) = match &s.output_schema {
        Some(text) => {
            let v = parse_schema(name, "output-schema", text)?;
            let compiled = OutputValidator::compile(&v)
                .map_err(|e| format!("tool '{name}': output-schema: {e}"))?;
            (Some(v), Some(compiled))
        }
        None => (None, None),
    };
    if let Some(p) = &s.permission_subject
        && !(p.is_empty() || p.starts_with('/'))
    {
        return Err(format!(
            "tool '{name}': permission-subject {p:?} is not a JSON pointer (it must start with '/')"
        ));
    }
    Ok(CheckedTool {
        spec: ToolSpec {
            name: s.name,
            title: s.title,
            description: s.description,
            input_schema,
            output_schema,
            hints: s.hints,
            permission_subject: s.permission_subject,
        },
        input,
        output,
    })
}

fn parse_schema(tool: &str, which: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("tool '{tool}': {which} is not valid JSON: {e}"))
}

fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Hints;

    fn spec(name: &str, schema: &str) -> GuestSpec {
        GuestSpec {
            name: name.into(),
            title: None,
            description: "does things".into(),
            input_schema: schema.into(),
            output_schema: None,
            hints: Hints::default(),
            permission_subject: None,
        }
    }

    const OBJ: &str = r#"{"type":"object"}"#;

    #[test]
    fn rejects_bad_names_duplicates_and_schemas() {
        let e = |specs| check_specs(specs).err().unwrap();
        assert!(e(vec![spec("read file!", OBJ)]).contains("not accepted by LLM APIs"));
        assert!(e(vec![spec("a", OBJ), spec("a", OBJ)]).contains("declared twice"));
        assert!(e(vec![spec("a", "{nope")]).contains("not valid JSON"));
        assert!(e(vec![spec("a", r#"{"type":"string"}"#)]).contains("must describe an object"));
        assert!(
            e(vec![spec(
                "a",
                r#"{"type":"object","properties":{"x":{"type":12}}}"#
            )])
            .contains("input-schema")
        );
        assert!(e(vec![]).contains("no tools"));
        let many = (0..300).map(|i| spec(&format!("t{i}"), OBJ)).collect();
        assert!(e(many).contains("at most"));
    }

    #[test]
    fn accepts_a_sound_spec() {
        let tools = check_specs(vec![spec("echo", OBJ)]).unwrap();
        assert_eq!(tools[0].spec.name, "echo");
    }
}
