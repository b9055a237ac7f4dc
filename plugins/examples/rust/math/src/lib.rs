//! The `math` example plugin: a calculator (`calc`) and summary statistics (`stats`).

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::json;
use toolhost::plugin::types::ToolHints;

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Pow => "^",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CalcInput {
    op: Op,
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatsInput {
    numbers: Vec<f64>,
}

fn parse<'a, T: Deserialize<'a>>(tool: &str, input: &'a str) -> Result<T, ToolError> {
    serde_json::from_str(input)
        .map_err(|e| ToolError::InvalidInput(format!("invalid input for '{tool}': {e}")))
}

fn calc(input: &str) -> Result<ToolOutput, ToolError> {
    let CalcInput { op, a, b } = parse("calc", input)?;
    let result = match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => {
            if b == 0.0 {
                return Err(ToolError::Failed(format!(
                    "division by zero: cannot compute {a} / {b}; 'b' must not be 0 for op 'div'"
                )));
            }
            a / b
        }
        Op::Pow => a.powf(b),
    };
    if !result.is_finite() {
        return Err(ToolError::Failed(format!(
            "{a} {} {b} has no finite result ({result}); the result must be a finite number",
            op.symbol()
        )));
    }
    Ok(ToolOutput {
        content: format!("{a} {} {b} = {result}", op.symbol()),
        structured: Some(json!({ "result": result }).to_string()),
    })
}

fn stats(input: &str) -> Result<ToolOutput, ToolError> {
    let StatsInput { numbers } = parse("stats", input)?;
    if numbers.is_empty() {
        return Err(ToolError::InvalidInput(
            "'numbers' must contain at least one number".into(),
        ));
    }
    let count = numbers.len();
    let sum: f64 = numbers.iter().sum();
    let mean = sum / count as f64;
    let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !sum.is_finite() {
        return Err(ToolError::Failed(
            "the sum of 'numbers' overflows; the numbers are too large".into(),
        ));
    }
    Ok(ToolOutput {
        content: format!("count = {count}, sum = {sum}, mean = {mean}, min = {min}, max = {max}"),
        structured: Some(
            json!({ "count": count, "sum": sum, "mean": mean, "min": min, "max": max }).to_string(),
        ),
    })
}

struct Math;

impl Guest for Math {
    fn describe() -> Vec<ToolSpec> {
        let calc_input = json!({
            "type": "object",
            "properties": {
                "op": {
                    "type": "string",
                    "enum": ["add", "sub", "mul", "div", "pow"],
                    "description": "The operation: add (a + b), sub (a - b), mul (a * b), div (a / b) or pow (a raised to the power b)."
                },
                "a": { "type": "number", "description": "The left operand." },
                "b": { "type": "number", "description": "The right operand." }
            },
            "required": ["op", "a", "b"],
            "additionalProperties": false
        });
        let calc_output = json!({
            "type": "object",
            "properties": {
                "result": { "type": "number", "description": "The result of the operation." }
            },
            "required": ["result"],
            "additionalProperties": false
        });
        let stats_input = json!({
            "type": "object",
            "properties": {
                "numbers": {
                    "type": "array",
                    "items": { "type": "number" },
                    "minItems": 1,
                    "description": "The numbers to summarise (at least one)."
                }
            },
            "required": ["numbers"],
            "additionalProperties": false
        });
        let stats_output = json!({
            "type": "object",
            "properties": {
                "count": { "type": "integer", "description": "How many numbers were given." },
                "sum": { "type": "number", "description": "The sum of the numbers." },
                "mean": { "type": "number", "description": "The arithmetic mean." },
                "min": { "type": "number", "description": "The smallest number." },
                "max": { "type": "number", "description": "The largest number." }
            },
            "required": ["count", "sum", "mean", "min", "max"],
            "additionalProperties": false
        });
        vec![
            ToolSpec {
                name: "calc".into(),
                title: Some("Calculator".into()),
                description: "Apply one arithmetic operation (add, sub, mul, div, pow) to two \
                              numbers and return the result. Use it instead of doing arithmetic \
                              in your head."
                    .into(),
                input_schema: calc_input.to_string(),
                output_schema: Some(calc_output.to_string()),
                hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
                permission_subject: None,
            },
            ToolSpec {
                name: "stats".into(),
                title: Some("Summary statistics".into()),
                description:
                    "Compute the count, sum, mean, minimum and maximum of a list of numbers.".into(),
                input_schema: stats_input.to_string(),
                output_schema: Some(stats_output.to_string()),
                hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
                permission_subject: None,
            },
        ]
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        match name.as_str() {
            "calc" => calc(&input),
            "stats" => stats(&input),
            _ => Err(ToolError::InvalidInput(format!(
                "unknown tool '{name}'; this plugin provides 'calc' and 'stats'"
            ))),
        }
    }
}

export!(Math);
