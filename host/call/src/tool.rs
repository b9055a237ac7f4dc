//! What a tool is, as the host sees it: a validated spec and its behaviour hints.
//! Pure data; knows nothing of wasmtime or of the wire formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Behaviour hints a plugin declares per tool; concurrency and permission defaults derive from them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    /// The tool does not change its environment.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling it twice with the same input has no further effect.
    pub idempotent: bool,
    /// The tool talks to an open world (the network), not only to granted files.
    pub open_world: bool,
}

impl Hints {
    /// Whether the tool only reads: `read_only` and not `destructive`. A tool that claims both is
    /// treated as destructive (a contradiction is resolved towards caution) by the gate, the batch
    /// planner and the MCP listing alike.
    pub fn is_read_only(self) -> bool {
        self.read_only && !self.destructive
    }
}

/// One tool, as checked by the registry when its plugin was loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Matches `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// Human-readable name.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
    /// JSON Schema of the structured output, when the tool returns one.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub hints: Hints,
    /// JSON pointer into the input whose value permission rules match.
    pub permission_subject: Option<String>,
}

/// Whether `name` is acceptable to every LLM API: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_api_safe_names() {
        assert!(is_valid_name("read_file"));
        assert!(is_valid_name("a-B_9"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("read file"));
        assert!(!is_valid_name("read.file"));
        assert!(!is_valid_name(&"x".repeat(65)));
        assert!(!is_valid_name("é"));
    }

    #[test]
    fn read_only_and_destructive_together_are_not_read_only() {
        let read_only = Hints {
            read_only: true,
            ..Hints::default()
        };
        assert!(read_only.is_read_only());
        let both = Hints {
            destructive: true,
            ..read_only
        };
        assert!(!both.is_read_only());
        assert!(!Hints::default().is_read_only());
    }
}
