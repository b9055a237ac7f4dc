//! A tool's compiled schemas. A description a plugin has just given is compiled while it loads, so
//! that a bad schema rejects the plugin. One read back from the sealed describe cache passed that
//! same check (with this toolhost version) before it was cached, so a restart lists its tools
//! without compiling anything: its schemas compile on first use, or in the warm-up that follows
//! the load, off the path to the first `tools/list`.

use std::sync::OnceLock;

use toolhost_call::tool::ToolSpec;
use toolhost_gate::gate::{InputValidator, OutputValidator, SchemaError};

/// The validators of one tool's input and output.
pub(crate) struct Compiled {
    pub(crate) input: InputValidator,
    pub(crate) output: Option<OutputValidator>,
}

impl Compiled {
    /// Compile `spec`'s schemas; the error names the schema.
    pub(crate) fn of(spec: &ToolSpec) -> Result<Self, String> {
        let input = InputValidator::compile(&spec.input_schema)
            .map_err(|e: SchemaError| format!("input-schema: {e}"))?;
        let output = spec
            .output_schema
            .as_ref()
            .map(|s| OutputValidator::compile(s).map_err(|e| format!("output-schema: {e}")))
            .transpose()?;
        Ok(Self { input, output })
    }
}

/// A tool's validators, compiled now or on first use.
pub(crate) struct Schemas(OnceLock<Result<Compiled, String>>);

impl Schemas {
    /// Validators compiled already.
    pub(crate) fn compiled(compiled: Compiled) -> Self {
        Self(OnceLock::from(Ok(compiled)))
    }

    /// Validators to compile from the spec when first needed: for a contract plugin's tool whose
    /// description the cache vouches for (a generic plugin's input also converts exactly to its
    /// function, which is known only once it is compiled).
    pub(crate) fn deferred() -> Self {
        Self(OnceLock::new())
    }

    /// The validators if they are compiled already, without compiling them.
    pub(crate) fn ready(&self) -> Option<&Compiled> {
        self.0.get().and_then(|c| c.as_ref().ok())
    }

    /// The validators of `spec`, compiled now if they were not. CPU work on plugin-declared
    /// schemas (bounded by the checks the description passed): call it off the async runtime.
    pub(crate) fn get(&self, spec: &ToolSpec) -> Result<&Compiled, &str> {
        self.0
            .get_or_init(|| Compiled::of(spec))
            .as_ref()
            .map_err(String::as_str)
    }
}
