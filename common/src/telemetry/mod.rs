//! Logging and tracing set-up shared by both binaries: pretty or JSON lines by `LOG_FORMAT`,
//! filtered by `RUST_LOG` (default `info`), and OpenTelemetry export over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! Every span has an OpenTelemetry context whether or not it is exported, so that one paid
//! call is one trace across processes: the api continues a caller's W3C `traceparent`, a job
//! carries the trace in its `trace` field ([`traceparent`]), and the worker continues it
//! ([`continue_trace`]). JSON log lines carry the `trace_id` and `span_id` of their span.

mod ids;

use crate::config::{Config, LogFormat};
use opentelemetry::{
    Context,
    propagation::TextMapPropagator,
    trace::{TraceContextExt, TracerProvider as _},
};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use std::collections::HashMap;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{EnvFilter, Layer, fmt, prelude::*};

/// A client span for one database statement, with OpenTelemetry's database attribute names:
/// `operation` (`INSERT`, `UPDATE`...) on `collection` (the table), in the system `db` speaks.
pub fn db_span(
    db: &impl sea_orm::ConnectionTrait,
    operation: &'static str,
    collection: &'static str,
) -> tracing::Span {
    let system = match db.get_database_backend() {
        sea_orm::DatabaseBackend::Postgres => "postgresql",
        sea_orm::DatabaseBackend::Sqlite => "sqlite",
        _ => "other_sql",
    };
    tracing::info_span!(
        "db",
        otel.name = %format!("{operation} {collection}"),
        otel.kind = "client",
        db.system.name = system,
        db.operation.name = operation,
        db.collection.name = collection,
    )
}

/// The W3C header (and job field) that carries a trace across processes.
pub const TRACEPARENT: &str = "traceparent";

/// The W3C `traceparent` of the current span (what a job carries so the worker continues the
/// trace); None outside any span or without the OpenTelemetry layer.
pub fn traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// The remote parent that a W3C `traceparent` names (an empty context when it is absent or
/// malformed: a bad header starts a new trace, it is never an error).
pub fn remote_parent(traceparent: Option<&str>) -> Context {
    let mut carrier = HashMap::new();
    if let Some(value) = traceparent {
        carrier.insert(TRACEPARENT.to_owned(), value.to_owned());
    }
    TraceContextPropagator::new().extract(&carrier)
}

/// Makes `span` (just created, before anything is logged in it) a child of the trace that
/// `traceparent` names. Without one, `span` starts its own trace.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>) {
    let parent = remote_parent(traceparent);
    if parent.span().span_context().is_valid() {
        // Fails only without the OpenTelemetry layer (a test's own subscriber): nothing to join.
        let _ = span.set_parent(parent);
    }
}

/// Flushes and stops the trace exporter when dropped (at process exit).
#[must_use = "keep the guard alive until the process exits, or spans are lost"]
pub struct Guard(Option<SdkTracerProvider>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("telemetry: could not flush spans: {e}");
        }
    }
}

/// Caps the one dependency whose spans carry a secret (see `init`).
const NO_RPC_URL: &str = "alloy_transport_http=info";

/// Installs the global subscriber for a binary named `service`.
pub fn init(config: &Config, service: &'static str) -> Guard {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info"))
        // alloy's HTTP transport opens a debug span naming the RPC URL, which carries the
        // `BASE_RPC_URL` API key: never enabled, whatever RUST_LOG asks.
        .add_directive(NO_RPC_URL.parse().expect("a valid directive"));
    // Traces keep every `info` span whatever RUST_LOG says: quieter logs must not cut a paid
    // call's trace (nor hide its trace id from the job that carries it).
    let trace_filter =
        EnvFilter::new("info").add_directive(NO_RPC_URL.parse().expect("a valid directive"));
    let fmt_layer = match config.log_format {
        LogFormat::Json => fmt::layer()
            .json()
            .event_format(ids::WithTraceIds(
                fmt::format()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true),
            ))
            .boxed(),
        LogFormat::Pretty => fmt::layer().compact().boxed(),
    };
    let exported =
        config
            .otlp_endpoint
            .as_deref()
            .and_then(|endpoint| match exporter(endpoint, service) {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("telemetry: OpenTelemetry export disabled: {e}");
                    None
                }
            });
    // Without an exporter, spans still get trace ids (for the logs and the jobs), and go
    // nowhere.
    let provider = exported.clone().unwrap_or_else(|| {
        SdkTracerProvider::builder()
            .with_resource(Resource::builder().with_service_name(service).build())
            .build()
    });
    // Nothing here reads OpenTelemetry's current context (trace ids come from the span itself,
    // `OpenTelemetrySpanExt::context`), so entering a span does not attach one: that attach, and
    // the busy/idle clock reads, ran on every poll of every instrumented future of a paid call.
    // Busy/idle times and each span's thread and source location are only worth their cost (a
    // clock read per enter and exit, five attributes per span) when spans are exported.
    let otel_layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(service))
        .with_context_activation(false)
        .with_tracked_inactivity(exported.is_some())
        .with_threads(exported.is_some())
        .with_location(exported.is_some());
    // try_init: tests start several apps in one process; later calls keep the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(fmt_layer.with_filter(filter))
        .with(otel_layer.with_filter(trace_filter))
        .try_init();
    if let Some(endpoint) = &config.otlp_endpoint {
        tracing::info!(%endpoint, "exporting traces over OTLP/HTTP");
    }
    Guard(exported)
}

/// The batch exporter runs on its own thread, so it uses the blocking HTTP client.
fn exporter(
    endpoint: &str,
    service: &'static str,
) -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    use opentelemetry_otlp::WithExportConfig;
    crate::http_client::install_tls();
    let traces = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(traces)
        .build()?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service).build())
        .build())
}
