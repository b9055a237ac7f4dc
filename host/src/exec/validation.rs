//! The validate stage: the input checked against the tool's schema, off the runtime unless surely
//! quick, with safe coercions noted and the schema's defaults filled in.

use std::sync::Arc;

use serde_json::Value;

use super::pipeline::Pipeline;
use super::recorder::Finished;
use super::request::CallRequest;
use super::shape;
use crate::audit::AuditRecord;
use crate::registry::Tool;
use toolhost_call::call::ErrorKind;
use toolhost_gate::gate::defaults;

impl Pipeline {
    /// The validate stage: `input` checked against `tool`'s schema (coercions noted on
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
        let check = self.checks().run(quick, move || {
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
