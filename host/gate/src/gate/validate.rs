//! JSON Schema checks of tool inputs and outputs: schemas compiled once at plugin load, inputs
//! bounded, validated with every violation reported at once, and safely coerced when that fixes them.
//! Never fetches anything: a `$ref` must point inside the schema.

use std::fmt;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ReferencingError, ValidationError, Validator};
use serde_json::Value;

use super::coerce::{self, Coercion, Targets};
use super::cost::{self, CostError};
use super::limits::InputLimits;
use super::violation::{describe, display_path};

/// Why a tool's schema cannot be used; the message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A `$ref` (or `$schema`) names a document outside the schema, which toolhost never fetches.
    #[error(
        "reference to {uri:?} leaves the schema; toolhost does not fetch schemas, so put the \
         referenced schema under \"$defs\" and refer to it as \"#/$defs/...\""
    )]
    ExternalRef {
        /// The resolved URI of the document.
        uri: String,
    },
    /// `$schema` names a draft that toolhost does not know.
    #[error(
        "\"$schema\" names the unknown meta-schema {uri:?}; use \"https://json-schema.org/draft/2020-12/schema\" \
         (or draft 2019-09, 7, 6 or 4), or leave \"$schema\" out for 2020-12"
    )]
    UnknownDraft {
        /// The `$schema` value.
        uri: String,
    },
    /// Validating against the schema could cost too much (or recurse forever).
    #[error(transparent)]
    TooCostly(#[from] CostError),
    /// The schema is not a valid JSON Schema, or a reference inside it does not resolve.
    #[error("{message} (at {location})")]
    Invalid {
        /// A JSON pointer into the schema (`/` for its root).
        location: String,
        /// What is wrong there.
        message: String,
    },
}

impl SchemaError {
    fn from_build(error: &ValidationError<'_>) -> Self {
        match error.kind() {
            ValidationErrorKind::Referencing(ReferencingError::Unretrievable { uri, .. }) => {
                return Self::ExternalRef { uri: uri.clone() };
            }
            ValidationErrorKind::Referencing(ReferencingError::UnknownSpecification {
                specification,
            }) => {
                return Self::UnknownDraft {
                    uri: specification.clone(),
                };
            }
            _ => {}
        }
        Self::Invalid {
            location: display_path(error.instance_path().as_str()).to_owned(),
            message: error.to_string(),
        }
    }
}

/// An input the tool must not receive, with every problem found; shown to the model as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InvalidInput {
    tool: String,
    problems: Vec<String>,
}

impl InvalidInput {
    /// The plugin's own `invalid-input` error, worded like the host's so front ends show both alike.
    pub fn from_plugin(tool: &str, message: &str) -> Self {
        Self {
            tool: tool.to_owned(),
            problems: vec![message.trim().to_owned()],
        }
    }

    /// The tool the input was for.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// One line per violation, e.g. `/count: "x" is not of type "integer"`.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for InvalidInput {
    /// ```text
    /// Invalid input for tool 'read_file':
    /// - /: "path" is a required property
    /// - /limit: "x" is not of type "integer"
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Invalid input for tool '{}':", self.tool)?;
        write_list(f, &self.problems)
    }
}

/// A tool's structured output that does not match its output schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InvalidOutput {
    problems: Vec<String>,
}

impl InvalidOutput {
    /// One line per violation.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for InvalidOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("The structured output does not match the tool's output schema:")?;
        write_list(f, &self.problems)
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, problems: &[String]) -> fmt::Result {
    for problem in problems {
        // A plugin's message may span lines; keep them inside its item.
        write!(f, "\n- {}", problem.replace('\n', "\n  "))?;
    }
    Ok(())
}

/// An input that passed validation, possibly after safe coercions.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The input to give the tool.
    pub input: Value,
    /// What was coerced, in order; empty when the input was valid as given.
    pub coercions: Vec<Coercion>,
}

/// A tool's input schema, compiled once when its plugin loads.
#[derive(Debug)]
pub struct InputValidator {
    validator: Validator,
    cost: u64,
    /// For a generic plugin's tool, the function whose arguments the input must convert to exactly:
    /// the schema cannot say everything (a 64-bit bound, a float that stands for an integer).
    exact: Option<toolhost_call::wit::Export>,
}

impl InputValidator {
    /// Compile `schema`: draft 2020-12 unless its `$schema` names another draft; every `$ref`
    /// must resolve inside the schema, and one value must never need more than
    /// [`MAX_EVALUATIONS`](super::MAX_EVALUATIONS) subschema evaluations.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        // Bounded first: the validator's own compile follows references too.
        let cost = cost::estimate(schema)?;
        Ok(Self {
            validator: compile(schema)?,
            cost,
            exact: None,
        })
    }

    /// Also require that an input converts exactly to `export`'s arguments.
    pub fn exactly(self, export: toolhost_call::wit::Export) -> Self {
        Self {
            exact: Some(export),
            ..self
        }
    }

    /// Whether checking `input` (coercions included) is surely quick enough to run on the
    /// caller's thread: the schema's cost bound times the input's size stays under
    /// [`INLINE_EVALUATIONS`](super::INLINE_EVALUATIONS).
    pub fn is_quick(&self, input: &Value) -> bool {
        cost::is_quick(self.cost, input)
    }

    /// Check `input` for a call of `tool`: bound it by `limits`, validate it, and when it is
    /// invalid try the safe coercions documented in [`Coercion`]; the coerced input is accepted
    /// only if it validates. Otherwise every violation of the input as given is reported.
    pub fn check(
        &self,
        tool: &str,
        input: Value,
        limits: &InputLimits,
    ) -> Result<Validated, InvalidInput> {
        let invalid = |problems| InvalidInput {
            tool: tool.to_owned(),
            problems,
        };
        let problems = limits.problems(&input);
        if !problems.is_empty() {
            return Err(invalid(problems));
        }
        // Most inputs are valid: `is_valid` stops at the first error and builds none, so every
        // error is collected only for an input that fails it (at most twice the work, then).
        let mut targets = Targets::default();
        let problems = if self.validator.is_valid(&input) {
            Vec::new()
        } else {
            describe(self.validator.iter_errors(&input), |e| targets.note(e))
        };
        let validated = if problems.is_empty() {
            Validated {
                input,
                coercions: Vec::new(),
            }
        } else {
            match coerce::repair(&self.validator, &input, targets, limits) {
                Some((input, coercions)) => Validated { input, coercions },
                None => return Err(invalid(problems)),
            }
        };
        match self.exact.as_ref().map(|e| e.arguments(&validated.input)) {
            Some(Err(problems)) => Err(invalid(problems)),
            _ => Ok(validated),
        }
    }
}

/// A tool's output schema, compiled once when its plugin loads. Outputs are never coerced.
#[derive(Debug)]
pub struct OutputValidator {
    validator: Validator,
    cost: u64,
}

impl OutputValidator {
    /// Compile `schema` as [`InputValidator::compile`] does.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        // Bounded first: the validator's own compile follows references too.
        let cost = cost::estimate(schema)?;
        Ok(Self {
            validator: compile(schema)?,
            cost,
        })
    }

    /// Whether checking `output` is surely quick enough to run on the caller's thread.
    pub fn is_quick(&self, output: &Value) -> bool {
        cost::is_quick(self.cost, output)
    }

    /// Check a tool's structured output, listing every violation.
    pub fn check(&self, output: &Value) -> Result<(), InvalidOutput> {
        if self.validator.is_valid(output) {
            return Ok(());
        }
        let problems = describe(self.validator.iter_errors(output), |_| {});
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidOutput { problems })
        }
    }
}

/// Refuses every retrieval, so that a schema never makes the host read a file or the network.
struct NoRetrieval;

impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri} is outside the schema and toolhost does not fetch schemas").into())
    }
}

fn compile(schema: &Value) -> Result<Validator, SchemaError> {
    jsonschema::options()
        .with_retriever(NoRetrieval)
        .build(schema)
        .map_err(|e| SchemaError::from_build(&e))
}

#[cfg(test)]
mod tests;
