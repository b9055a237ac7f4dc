//! OpenTelemetry, off by default and free when off: spans and metrics exported over OTLP/HTTP
//! (protobuf) when `[telemetry] enabled`, configured by that section and the standard `OTEL_*`
//! variables.
//!
//! The front ends open a span per MCP request, named and attributed as the MCP semantic conventions
//! say (`tools/call {tool}`, `mcp.method.name`, `mcp.session.id`, `jsonrpc.request.id`,
//! `gen_ai.tool.name`, `gen_ai.operation.name = execute_tool`, `error.type`), continuing the trace
//! of a `params._meta.traceparent`; the pipeline adds a child span per stage of the call it ran
//! (validate, gate, approval, instantiate, guest, shape, audit), from the stage times it measures
//! anyway. Metrics: `mcp.server.operation.duration`, and toolhost's calls, errors by kind, fuel,
//! peak memory and running calls.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use opentelemetry::metrics::{Counter, Histogram};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

use toolhost_config::config::TelemetryOptions;

/// The instrumentation scope of every span and instrument.
const SCOPE: &str = "toolhost";

static ON: AtomicBool = AtomicBool::new(false);

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot start OpenTelemetry export: {0}")]
pub struct TelemetryError(String);

/// The exporters, until [`Telemetry::shutdown`] flushes them. The daemon's
/// [`Host`](crate::host::Host) owns this value, and so when export starts and ends; the spans and
/// instruments the pipeline and the server record into are reached through OpenTelemetry's
/// process-wide providers (and [`is_on`]), so that the hot path needs no handle.
pub struct Telemetry {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// Whether spans and metrics are being made at all.
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Start exporting as `options` and the `OTEL_*` variables say; `None` when off.
pub fn start(options: &TelemetryOptions) -> Result<Option<Telemetry>, TelemetryError> {
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    if !options.enabled || disabled {
        return Ok(None);
    }
    // The exporters' HTTP client takes the process's default TLS provider: ours, ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fail = |e: &dyn std::fmt::Display| TelemetryError(e.to_string());
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .or_else(|| options.service_name.clone())
        .unwrap_or_else(|| "toolhost".into());
    let resource = Resource::builder()
        .with_service_name(service)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let endpoint = |path: &str| {
        options
            .endpoint
            .as_ref()
            .map(|base| format!("{}{path}", base.trim_end_matches('/')))
    };
    let mut spans = SpanExporter::builder().with_http();
    if let Some(url) = endpoint("/v1/traces") {
        spans = spans.with_endpoint(url);
    }
    let traces = SdkTracerProvider::builder()
        .with_batch_exporter(spans.build().map_err(|e| fail(&e))?)
        .with_resource(resource.clone())
        .build();
    let mut metrics = MetricExporter::builder().with_http();
    if let Some(url) = endpoint("/v1/metrics") {
        metrics = metrics.with_endpoint(url);
    }
    let mut reader = PeriodicReader::builder(metrics.build().map_err(|e| fail(&e))?);
    if let Some(ms) = options.metrics_interval_ms {
        reader = reader.with_interval(Duration::from_millis(ms.max(100)));
    }
    let metrics = SdkMeterProvider::builder()
        .with_reader(reader.build())
        .with_resource(resource)
        .build();
    global::set_tracer_provider(traces.clone());
    global::set_meter_provider(metrics.clone());
    global::set_text_map_propagator(TraceContextPropagator::new());
    ON.store(true, Ordering::Relaxed);
    tracing::info!("OpenTelemetry export on");
    Ok(Some(Telemetry { traces, metrics }))
}

impl Telemetry {
    /// Export what is pending and stop.
    pub fn shutdown(&self) {
        ON.store(false, Ordering::Relaxed);
        if let Err(e) = self.traces.shutdown() {
            tracing::warn!("OpenTelemetry spans: {e}");
        }
        if let Err(e) = self.metrics.shutdown() {
            tracing::warn!("OpenTelemetry metrics: {e}");
        }
    }
}

/// The instruments toolhost records into.
pub(crate) struct Instruments {
    /// `mcp.server.operation.duration`, in seconds.
    pub(crate) operation: Histogram<f64>,
    calls: Counter<u64>,
    errors: Counter<u64>,
    fuel: Histogram<u64>,
    memory: Histogram<u64>,
}

/// The instruments, made on first use (after [`start`], so that they export).
pub(crate) fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let m = global::meter(SCOPE);
        Instruments {
            operation: m
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("Duration of MCP requests handled by the server.")
                .build(),
            calls: m
                .u64_counter("toolhost.calls")
                .with_description("Tool calls finished, by tool.")
                .build(),
            errors: m
                .u64_counter("toolhost.call.errors")
                .with_description("Tool calls that failed, by tool and error kind.")
                .build(),
            fuel: m
                .u64_histogram("toolhost.call.fuel")
                .with_description("Fuel a call's guest consumed.")
                .build(),
            memory: m
                .u64_histogram("toolhost.call.memory")
                .with_unit("By")
                .with_description("Peak linear memory of a call's guest.")
                .build(),
        }
    })
}

/// Report `running()` as `toolhost.calls.running` at each metrics export.
pub fn observe_running(running: impl Fn() -> u64 + Send + Sync + 'static) {
    static GAUGE: OnceLock<opentelemetry::metrics::ObservableGauge<u64>> = OnceLock::new();
    if !is_on() {
        return;
    }
    GAUGE.get_or_init(|| {
        global::meter(SCOPE)
            .u64_observable_gauge("toolhost.calls.running")
            .with_description("Tool calls executing in the sandbox now.")
            .with_callback(move |o| o.observe(running(), &[]))
            .build()
    });
}

/// Count one finished call of `tool`.
pub(crate) fn record_call(tool: &str, error: Option<&str>, fuel: Option<u64>, memory: Option<u64>) {
    let i = instruments();
    let tool = KeyValue::new("gen_ai.tool.name", tool.to_owned());
    i.calls.add(1, std::slice::from_ref(&tool));
    if let Some(kind) = error {
        i.errors.add(
            1,
            &[tool.clone(), KeyValue::new("error.type", kind.to_owned())],
        );
    }
    if let Some(f) = fuel {
        i.fuel.record(f, std::slice::from_ref(&tool));
    }
    if let Some(m) = memory {
        i.memory.record(m, &[tool]);
    }
}

/// `error.type` for a failed call: its kind, or `tool_error` for a tool that reported failure.
pub fn error_type(kind: toolhost_call::call::ErrorKind) -> &'static str {
    match kind {
        toolhost_call::call::ErrorKind::ToolFailed => "tool_error",
        k => k.as_str(),
    }
}

/// The context a W3C `traceparent` (and `tracestate`) continues; the current one without them.
pub fn remote_parent(traceparent: Option<&str>, tracestate: Option<&str>) -> Context {
    let mut carrier = HashMap::new();
    if let Some(p) = traceparent {
        carrier.insert("traceparent".to_owned(), p.to_owned());
    }
    if let Some(s) = tracestate {
        carrier.insert("tracestate".to_owned(), s.to_owned());
    }
    TraceContextPropagator::new().extract(&carrier)
}

/// A server span `name` under `parent`, returned as the context its children go under.
pub fn server_span(name: String, parent: &Context, attributes: Vec<KeyValue>) -> Context {
    let tracer = global::tracer(SCOPE);
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_attributes(attributes)
        .start_with_context(&tracer, parent);
    parent.with_span(span)
}

/// An internal span `name` under `parent`, as a context.
pub fn child_span(name: String, parent: &Context, attributes: Vec<KeyValue>) -> Context {
    let tracer = global::tracer(SCOPE);
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes)
        .start_with_context(&tracer, parent);
    parent.with_span(span)
}

/// End the span of `cx`, with `error.type` when the call failed.
pub fn end_span(cx: &Context, error: Option<&str>) {
    let span = cx.span();
    if let Some(kind) = error {
        span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
        span.set_status(opentelemetry::trace::Status::error(kind.to_owned()));
    }
    span.end();
}

/// A child span of `parent` per stage a call went through (name and time taken, in order), laid
/// end to end from `started`.
pub(crate) fn stage_spans(
    parent: &Context,
    started: SystemTime,
    stages: &[(&'static str, Duration)],
) {
    let tracer = global::tracer(SCOPE);
    let mut at = started;
    for &(name, took) in stages {
        if took.is_zero() {
            continue;
        }
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(at)
            .start_with_context(&tracer, parent);
        at += took;
        span.end_with_timestamp(at);
    }
}
