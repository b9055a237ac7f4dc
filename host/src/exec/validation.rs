//! The validate stage: the input checked against the tool's schema, off the runtime unless surely
//! quick, with safe coercions noted and the schema's defaults filled in.

use std::sync::Arc;

use serde_json::Value;

use super::checks::Checks;
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape;
use crate::audit::AuditRecord;
use crate::registry::Tool;
use toolhost_call::call::ErrorKind;
use toolhost_gate::gate::defaults;

/// The validate stage, over the daemon's pool for slow checks.
pub(super) struct Validate<'a> {
    pub(super) checks: &'a Checks,
}

impl Validate<'_> {
    /// `input` checked against `tool`'s schema (coercions noted on
    /// `record`), with the schema's defaults filled in, since the gate judges and the tool gets
    /// what the tool would use.
    pub(super) async fn validate(
        &self,
        tool: &Arc<Tool>,
        input: Value,
        req: &CallRequest,
        record: &mut AuditRecord,
    ) -> Result<Value, Finished> {
        let fail =
            |kind: ErrorKind, content: String| Finished::failed(&record.call_id, kind, content);
        // Schemas the cache vouched for compile here if the warm-up has not reached them yet.
        let quick = tool
            .schemas
            .ready()
            .is_some_and(|s| s.input.is_quick(&input));
        let (checked, limits) = (tool.clone(), tool.plugin.policy.input);
        let check = self.checks.run(quick, move || {
            let schemas = checked.schemas.get(&checked.spec).map_err(str::to_owned)?;
            Ok::<_, String>(schemas.input.check(&checked.spec.name, input, &limits))
        });
        let validated = tokio::select! {
            checked = check => match checked {
                Ok(Ok(Ok(v))) => v,
                Ok(Ok(Err(e))) => return Err(fail(ErrorKind::InvalidInput, e.to_string())),
                Ok(Err(broken)) => return Err(fail(
                    ErrorKind::Internal,
                    format!("The schemas of '{}' did not compile: {broken}", tool.spec.name),
                )),
                Err(u) => {
                    let what = format!("the input of '{}'", tool.spec.name);
                    return Err(fail(u.kind(), u.message(&what)));
                }
            },
            () = req.cancel.cancelled() => {
                return Err(fail(ErrorKind::Cancelled, shape::cancelled(&req.tool)));
            }
        };
        record.coercions = validated
            .coercions
            .iter()
            .map(ToString::to_string)
            .collect();
        let mut input = validated.input;
        for pointer in defaults::fill(&tool.spec.input_schema, &mut input) {
            record
                .coercions
                .push(format!("{pointer}: the schema's default filled in"));
        }
        Ok(input)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::exec::fixture::Fixture;

    async fn validate(fixture: &Fixture, input: Value) -> (Result<Value, Finished>, AuditRecord) {
        let tool = fixture.tool();
        let req = CallRequest {
            tool: tool.spec.name.clone(),
            ..CallRequest::default()
        };
        let mut record = fixture
            .services
            .audit
            .begin("call-1", "test", &req.tool, &input);
        let stage = Validate {
            checks: &fixture.services.checks,
        };
        let validated = stage.validate(&tool, input, &req, &mut record).await;
        (validated, record)
    }

    #[tokio::test]
    async fn a_safe_coercion_is_made_and_noted() {
        let fixture = Fixture::open("").await;
        let (validated, record) = validate(&fixture, json!({ "x": "21" })).await;
        assert_eq!(validated.ok().unwrap(), json!({ "x": 21 }));
        assert_eq!(record.coercions.len(), 1, "{:?}", record.coercions);
        assert!(
            record.coercions[0].starts_with("/x"),
            "{:?}",
            record.coercions
        );
    }

    #[tokio::test]
    async fn every_violation_is_listed_by_its_path() {
        let fixture = Fixture::open("").await;
        for (input, path) in [
            (json!({ "x": "twenty" }), "- /x:"),
            (json!({ "x": -1 }), "- /x:"),
            (json!({}), "x"),
            (json!([1]), "object"),
        ] {
            let (validated, _) = validate(&fixture, input.clone()).await;
            let Err(finished) = validated else {
                panic!("{input} passed");
            };
            assert_eq!(finished.outcome.error_kind(), Some(ErrorKind::InvalidInput));
            assert!(
                finished.outcome.content.contains(path),
                "{input}: {}",
                finished.outcome.content
            );
        }
    }
}
