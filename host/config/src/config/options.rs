//! What the operator chose for the engine and the audit log: plain data, filled in by
//! [`Config`](super::Config) from `[engine]` and `[audit]`, read by the sandbox and the audit writer.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Engine-wide settings. The default compiles every time and allocates instances on demand.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// Reserve an instance pool of this size; `None` allocates each instance on demand.
    pub pool: Option<PoolOptions>,
    /// Descriptors all calls together may hold; `None` derives the budget from the open-files limit.
    pub open_files: Option<usize>,
}

/// How large the pool is. Plain data, filled in by `config` from `[engine]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Component instances alive at once: calls running plus plugins being described. One more fails to
    /// instantiate ("maximum concurrent instance limit"), so size it above `server.max-concurrent-calls`.
    pub instances: u32,
    /// The largest linear memory of one instance, in bytes. Every plugin's memory limit must fit.
    pub memory_bytes: usize,
}

/// What the pipeline should do with a call whose audit record could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Refuse the call (`audit_unavailable`): no unaudited calls. The default, because an audit
    /// log that silently stops recording is worse than a host that stops answering.
    #[default]
    Refuse,
    /// Let the call proceed; the failure is still logged with `tracing::error!`.
    Continue,
}

/// How the audit log behaves; embeddable in the config file (kebab-case keys, all optional).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct AuditOptions {
    /// Store each call's input in its record, not just its hash. By default this is disabled:
    /// inputs may carry secrets or personal data.
    pub include_input: bool,
    /// `fdatasync` after every record, so a record survives a power cut. By default this is
    /// disabled: each record still reaches the kernel before `write` returns.
    pub sync: bool,
    /// What to do with a call when its record cannot be written.
    pub on_failure: OnFailure,
}

/// `[telemetry]`: OpenTelemetry spans and metrics over OTLP/HTTP. Off unless `enabled`; the standard
/// `OTEL_*` variables (endpoint, headers, service name, intervals, `OTEL_SDK_DISABLED`) apply too.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct TelemetryOptions {
    /// Export spans and metrics.
    pub enabled: bool,
    /// The OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are appended); default from
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, else `http://localhost:4318`.
    pub endpoint: Option<String>,
    /// `service.name` of the resource; `OTEL_SERVICE_NAME` wins. Default `toolhost`.
    pub service_name: Option<String>,
    /// How often metrics are exported, in ms. Default 60000 (`OTEL_METRIC_EXPORT_INTERVAL`).
    pub metrics_interval_ms: Option<u64>,
}
