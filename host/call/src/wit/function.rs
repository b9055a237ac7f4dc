//! One exported function as a tool: its input and output schemas, its arguments read from a call's
//! input, and its return value turned into what the model is shown.

use serde_json::{Value, json};

use super::json::{TypeMismatch, WitValue, arguments_from_json, to_json};
use super::ty::{WitType, object_schema};

/// A function a component exports, with types that all have a JSON form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The exported interface (`docs:text/words@0.1.0`, or a plain name for an inline one); `None`
    /// for a function the component's world exports directly.
    pub interface: Option<String>,
    /// The function's name, as WIT spells it (kebab case).
    pub function: String,
    /// Parameters by name, in order.
    pub params: Vec<(String, WitType)>,
    /// The return type, if any.
    pub result: Option<WitType>,
}

/// An export that cannot be a tool, and why (shown by `list` and `inspect`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// Where it is: `interface#function`, or the function alone.
    pub export: String,
    /// Why it is not served.
    pub reason: String,
}

/// `interface#function`, or the function alone for one the world exports directly.
pub fn export_path(interface: Option<&str>, function: &str) -> String {
    match interface {
        Some(i) => format!("{i}#{function}"),
        None => function.to_owned(),
    }
}

/// What a finished call gives the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The function returned: text for the model and, when it returned a value, that value as the
    /// structured output.
    Done {
        /// Text for the model.
        content: String,
        /// Matches [`Export::output_schema`].
        structured: Option<Value>,
    },
    /// The function returned `result::err`: the error value, rendered for a model.
    Failed(String),
}

/// The key of a structured output that is not itself a record.
const RESULT_KEY: &str = "result";

impl Export {
    /// `interface#function`, or the function alone: how the export is named in messages and how the
    /// sandbox finds it.
    pub fn path(&self) -> String {
        export_path(self.interface.as_deref(), &self.function)
    }

    /// The input object: one property per parameter; `option` ones may be omitted.
    pub fn input_schema(&self) -> Value {
        object_schema(self.params.iter().map(|(n, t)| (n.as_str(), t)))
    }

    /// The value a successful call returns: the `ok` side of a `result`, or the return type.
    fn success(&self) -> Option<&WitType> {
        match &self.result {
            Some(WitType::Result { ok, .. }) => ok.as_deref(),
            other => other.as_ref(),
        }
    }

    /// The structured output: a record as itself, any other value as `{"result": value}` (MCP
    /// structured content is an object). `None` when a success carries no value.
    pub fn output_schema(&self) -> Option<Value> {
        Some(match self.success()? {
            record @ WitType::Record(_) => record.schema(),
            other => json!({
                "type": "object",
                "properties": {RESULT_KEY: other.schema()},
                "required": [RESULT_KEY],
                "additionalProperties": false,
            }),
        })
    }

    /// The call's arguments, read exactly from its (already schema-checked) input object.
    pub fn arguments(&self, input: &Value) -> Result<Vec<WitValue>, Vec<String>> {
        arguments_from_json(&self.params, input)
    }

    /// What the model is shown for the function's return value: a `result::err` is a failure
    /// whose text is the error value (a string as is, an enum case by name, anything else as JSON).
    pub fn answer(&self, returned: Option<&WitValue>) -> Result<Answer, TypeMismatch> {
        let (ty, value) = match (&self.result, returned) {
            (Some(WitType::Result { ok, err }), Some(WitValue::Result(r))) => match r {
                Ok(v) => (ok.as_deref(), v.as_deref()),
                Err(v) => {
                    let text = match (err.as_deref(), v.as_deref()) {
                        (Some(t), Some(v)) => rendered(t, v)?,
                        _ => "the function returned an error without details".to_owned(),
                    };
                    return Ok(Answer::Failed(text));
                }
            },
            (ty, value) => (ty.as_ref(), value),
        };
        let (Some(ty), Some(value)) = (ty, value) else {
            return Ok(Answer::Done {
                content: "done".into(),
                structured: None,
            });
        };
        let json = to_json(ty, value)?;
        let content = rendered(ty, value)?;
        let structured = match ty {
            WitType::Record(_) => json,
            _ => json!({RESULT_KEY: json}),
        };
        Ok(Answer::Done {
            content,
            structured: Some(structured),
        })
    }
}

/// A value as text for a model: a string or enum case as is, anything else as compact JSON.
fn rendered(ty: &WitType, value: &WitValue) -> Result<String, TypeMismatch> {
    Ok(match (ty, value) {
        (WitType::String, WitValue::String(s)) | (WitType::Enum(_), WitValue::Enum(s)) => s.clone(),
        _ => to_json(ty, value)?.to_string(),
    })
}
