//! What the gate decides for a tool before any input is known: `toolhost list`'s answer to "will
//! this tool run, ask or be refused?". It runs [`Permissions::decide`] itself, the function every
//! call goes through, so the listing cannot drift from the pipeline.

use serde_json::{Map, Value};
use toolhost_call::tool::ToolSpec;

use super::{Permissions, ScopedRule};
use crate::gate::Decision;

/// The gate's decision for a tool, as far as it is known without an input.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The decision for a call that no rule with a pattern matches; for a tool that declares no
    /// permission subject, the decision for every call.
    pub decision: Decision,
    /// The rules with a pattern that name the tool (`deny write_file(./secret/**)`): they decide
    /// instead for the inputs they match. Empty for a tool without a permission subject, whose
    /// patterned rules are already in `decision` (an unjudgeable subject fails closed).
    pub except: Vec<String>,
}

impl Permissions {
    /// What the gate decides for `tool` before its input is known (see [`Preview`]).
    pub fn preview(&self, tool: &ToolSpec) -> Preview {
        let empty = Value::Object(Map::new());
        if tool.permission_subject.is_none() {
            return Preview {
                decision: self.decide(tool, &empty),
                except: Vec::new(),
            };
        }
        let depends = |r: &ScopedRule| r.rule.has_pattern() && r.rule.matches_tool(&tool.name);
        let except = self
            .rules
            .iter()
            .filter(|r| depends(r))
            .map(|r| format!("{} `{}`", r.kind, r.rule.as_str()))
            .collect();
        let without = Self {
            rules: self.rules.iter().filter(|r| !depends(r)).cloned().collect(),
            ..self.clone()
        };
        Preview {
            decision: without.decide(tool, &empty),
            except,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{Mode, PermissionConfig};
    use toolhost_call::tool::Hints;

    fn tool(name: &str, read_only: bool, subject: Option<&str>) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            title: None,
            description: "d".to_owned(),
            input_schema: serde_json::json!({ "type": "object" }),
            output_schema: None,
            hints: Hints {
                read_only,
                ..Hints::default()
            },
            permission_subject: subject.map(str::to_owned),
        }
    }

    fn rules(mode: Mode, deny: &[&str]) -> Permissions {
        Permissions::new(
            &PermissionConfig {
                mode: Some(mode),
                deny: deny.iter().map(|s| (*s).to_owned()).collect(),
                ..PermissionConfig::default()
            },
            None,
        )
        .unwrap()
    }

    #[test]
    fn previews_the_mode_and_lists_the_rules_that_depend_on_the_input() {
        let p = rules(Mode::Default, &["write_file(./secret/**)"]);
        let write = p.preview(&tool("write_file", false, Some("/path")));
        assert!(matches!(write.decision, Decision::Ask { .. }), "{write:?}");
        assert_eq!(write.except, ["deny `write_file(./secret/**)`"]);
        let read = p.preview(&tool("read_file", true, Some("/path")));
        assert!(matches!(read.decision, Decision::Allow { .. }), "{read:?}");
        assert!(read.except.is_empty());

        let plan = rules(Mode::Plan, &["echo"]);
        let echo = plan.preview(&tool("echo", true, None));
        assert!(matches!(echo.decision, Decision::Deny { .. }), "{echo:?}");
        let other = plan.preview(&tool("write", false, None));
        assert!(matches!(other.decision, Decision::Deny { .. }), "{other:?}");
    }
}
