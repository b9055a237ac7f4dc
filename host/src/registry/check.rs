//! Checks a plugin's declared tool specs before any of them is served: names, schemas, hints, subjects.

use serde_json::Value;

use super::rejection::DeclarationError;
use super::schemas::Compiled;
use crate::sandbox::GuestSpec;
use toolhost_call::tool::{ToolSpec, is_valid_name};

/// Most tools one plugin may declare; more is a bug or an attack on the tool list.
pub(crate) const MAX_TOOLS_PER_PLUGIN: usize = 256;
/// Longest description accepted, in bytes: several screens of text, more than any model needs.
const MAX_DESCRIPTION: usize = 8192;
/// Longest title accepted, in bytes: a title is a short label for people.
const MAX_TITLE: usize = 256;
/// Longest permission subject accepted, in bytes: a JSON pointer to one field.
const MAX_SUBJECT: usize = 256;
/// Largest input or output schema text accepted, in bytes. The largest schemas of real tools
/// (generated from OpenAPI descriptions) are 10-20 KiB; 64 KiB leaves room for them and keeps one
/// tool's entry in `tools/list` small.
const MAX_SCHEMA: usize = 64 * 1024;
/// Largest `describe` answer accepted, all tools' names, titles, descriptions and schemas summed:
/// it is what `tools/list` serves for this plugin, on every listing, to every client.
pub(crate) const MAX_DESCRIBE: usize = 1024 * 1024;

/// A spec that passed every check, with its compiled validators.
pub(crate) struct CheckedTool {
    pub(crate) spec: ToolSpec,
    /// `None` when the schemas were not compiled ([`Compile::Deferred`]).
    pub(crate) compiled: Option<Compiled>,
}

/// Whether a description's schemas are compiled (and their cost bounded) as part of the check.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compile {
    /// The plugin has just described itself: a schema that does not compile rejects it.
    Now,
    /// The sealed describe cache holds the description, which passed this check, compilation
    /// included, before it was cached: the schemas are only parsed here, and compile on first use.
    Deferred,
}

/// Check every spec; the first problem rejects the whole plugin with a message naming the tool.
pub(crate) fn check_specs(
    specs: Vec<GuestSpec>,
    compile: Compile,
) -> Result<Vec<CheckedTool>, DeclarationError> {
    check_all(specs, compile).map_err(DeclarationError)
}

fn check_all(specs: Vec<GuestSpec>, compile: Compile) -> Result<Vec<CheckedTool>, String> {
    if specs.is_empty() {
        return Err("describe returned no tools".into());
    }
    if specs.len() > MAX_TOOLS_PER_PLUGIN {
        return Err(format!(
            "describe returned {} tools; a plugin may declare at most {MAX_TOOLS_PER_PLUGIN}",
            specs.len()
        ));
    }
    let total: usize = specs.iter().map(declared_bytes).sum();
    if total > MAX_DESCRIBE {
        return Err(format!(
            "describe returned {total} bytes of names, titles, descriptions and schemas; \
             a plugin may declare at most {MAX_DESCRIBE}"
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
        out.push(check_one(s, compile)?);
    }
    Ok(out)
}

/// Whether a schema of `s` is larger than any tool's may be, and how.
pub(crate) fn oversized(s: &GuestSpec) -> Option<String> {
    [
        ("input-schema", Some(&s.input_schema)),
        ("output-schema", s.output_schema.as_ref()),
    ]
    .into_iter()
    .find_map(|(which, text)| {
        let len = text?.len();
        (len > MAX_SCHEMA).then(|| format!("{which} is {len} bytes; the limit is {MAX_SCHEMA}"))
    })
}

fn check_one(s: GuestSpec, compile: Compile) -> Result<CheckedTool, String> {
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
    if let Some(title) = &s.title
        && title.len() > MAX_TITLE
    {
        return Err(format!(
            "tool '{name}': the title is {} bytes; the limit is {MAX_TITLE}",
            title.len()
        ));
    }
    if let Some(why) = oversized(&s) {
        return Err(format!("tool '{name}': {why}"));
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
    let output_schema = s
        .output_schema
        .as_deref()
        .map(|text| parse_schema(name, "output-schema", text))
        .transpose()?;
    if let Some(p) = &s.permission_subject {
        if p.len() > MAX_SUBJECT {
            return Err(format!(
                "tool '{name}': permission-subject is {} bytes; the limit is {MAX_SUBJECT}",
                p.len()
            ));
        }
        if !(p.is_empty() || p.starts_with('/')) {
            return Err(format!(
                "tool '{name}': permission-subject {p:?} is not a JSON pointer (it must start with '/')"
            ));
        }
    }
    let spec = ToolSpec {
        name: s.name,
        title: s.title,
        description: s.description,
        input_schema,
        output_schema,
        hints: s.hints,
        permission_subject: s.permission_subject,
    };
    let compiled = match compile {
        Compile::Now => {
            Some(Compiled::of(&spec).map_err(|e| format!("tool '{}': {e}", spec.name))?)
        }
        Compile::Deferred => None,
    };
    Ok(CheckedTool { spec, compiled })
}

/// The bytes of text a spec declares.
fn declared_bytes(s: &GuestSpec) -> usize {
    let optional = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    s.name.len()
        + optional(&s.title)
        + s.description.len()
        + s.input_schema.len()
        + optional(&s.output_schema)
        + optional(&s.permission_subject)
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
    use toolhost_call::tool::Hints;

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
        let e = |specs| check_specs(specs, Compile::Now).err().unwrap().0;
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
    fn refuses_oversized_declarations() {
        let e = |s| check_specs(vec![s], Compile::Now).err().unwrap().0;
        let big = format!(
            r#"{{"type":"object","description":"{}"}}"#,
            "x".repeat(MAX_SCHEMA)
        );
        assert_eq!(
            e(spec("a", &big)),
            format!(
                "tool 'a': input-schema is {} bytes; the limit is 65536",
                big.len()
            )
        );
        let output = GuestSpec {
            output_schema: Some(big.clone()),
            ..spec("a", OBJ)
        };
        assert!(e(output).starts_with("tool 'a': output-schema is "));
        let title = GuestSpec {
            title: Some("t".repeat(MAX_TITLE + 1)),
            ..spec("a", OBJ)
        };
        assert_eq!(
            e(title),
            "tool 'a': the title is 257 bytes; the limit is 256"
        );
        let description = GuestSpec {
            description: "d".repeat(MAX_DESCRIPTION + 1),
            ..spec("a", OBJ)
        };
        assert!(e(description).contains("the description exceeds 8192 bytes"));
        let subject = GuestSpec {
            permission_subject: Some(format!("/{}", "p".repeat(MAX_SUBJECT))),
            ..spec("a", OBJ)
        };
        assert!(e(subject).contains("permission-subject is 257 bytes"));
        // Each within its own limit, together past the plugin's.
        let schema = format!(
            r#"{{"type":"object","description":"{}"}}"#,
            "x".repeat(60_000)
        );
        let many: Vec<GuestSpec> = (0..20).map(|i| spec(&format!("t{i}"), &schema)).collect();
        let err = check_specs(many, Compile::Now).err().unwrap().0;
        assert!(err.starts_with("describe returned 12"), "{err}");
        assert!(
            err.ends_with("a plugin may declare at most 1048576"),
            "{err}"
        );
    }

    #[test]
    fn refuses_explosive_schemas_naming_tool_and_place() {
        let mut defs = serde_json::Map::new();
        for i in 0..20 {
            let next = serde_json::json!({"$ref": format!("#/$defs/a{}", i + 1)});
            defs.insert(
                format!("a{i}"),
                serde_json::json!({"anyOf": [next, next, next]}),
            );
        }
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"q": {"not": {"$ref": "#/$defs/a0"}}},
            "$defs": defs,
        })
        .to_string();
        let err = check_specs(vec![spec("explode", &schema)], Compile::Now)
            .err()
            .unwrap()
            .0;
        assert!(
            err.starts_with("tool 'explode': input-schema: validating one value could take"),
            "{err}"
        );
        assert!(err.contains("the subschema at /$defs/a"), "{err}");
        let output = GuestSpec {
            output_schema: Some(
                r##"{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##.into(),
            ),
            ..spec("loop", OBJ)
        };
        let err = check_specs(vec![output], Compile::Now).err().unwrap().0;
        assert!(
            err.starts_with("tool 'loop': output-schema: the references"),
            "{err}"
        );
        assert!(err.contains("recurse forever"), "{err}");
    }

    #[test]
    fn accepts_a_sound_spec() {
        let tools = check_specs(vec![spec("echo", OBJ)], Compile::Now).unwrap();
        assert_eq!(tools[0].spec.name, "echo");
    }
}
