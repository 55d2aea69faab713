//! Logging and tracing set-up shared by both binaries: pretty or JSON lines by `LOG_FORMAT`,
//! filtered by `RUST_LOG` (default `info`), and OpenTelemetry export over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

use crate::config::{Config, LogFormat};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing_subscriber::{EnvFilter, Layer, fmt, prelude::*};

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
    let fmt_layer = match config.log_format {
        LogFormat::Json => fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .boxed(),
        LogFormat::Pretty => fmt::layer().compact().boxed(),
    };
    let provider =
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
    let otel_layer = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer(service)));
    // try_init: tests start several apps in one process; later calls keep the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt_layer)
        .with(otel_layer)
        .try_init();
    if let Some(endpoint) = &config.otlp_endpoint {
        tracing::info!(%endpoint, "exporting traces over OTLP/HTTP");
    }
    Guard(provider)
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
