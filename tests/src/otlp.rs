//! A loopback OTLP/HTTP receiver: what the binaries export to `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`POST /v1/traces`, protobuf `ExportTraceServiceRequest`), decoded and kept for a test to
//! read.

use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing::post};
use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::any_value::Value as AnyValue,
};
use prost::Message;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// One received span, ids in lowercase hex as W3C `traceparent` writes them.
#[derive(Clone, Debug)]
pub struct ReceivedSpan {
    /// The exporting process's `service.name` resource attribute.
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    /// String, integer and boolean attributes, rendered as text.
    pub attributes: Vec<(String, String)>,
}

impl ReceivedSpan {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

pub struct OtlpReceiver {
    /// The endpoint to configure (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: String,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    _stop: oneshot::Sender<()>,
}

impl OtlpReceiver {
    pub async fn start() -> Self {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/traces", post(export))
            .with_state(Arc::clone(&spans));
        let (endpoint, stop) = crate::serve_loopback(app).await;
        Self {
            endpoint,
            spans,
            _stop: stop,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

async fn export(
    State(spans): State<Arc<Mutex<Vec<ReceivedSpan>>>>,
    body: Bytes,
) -> Result<Vec<u8>, StatusCode> {
    let request = ExportTraceServiceRequest::decode(body).map_err(|_| StatusCode::BAD_REQUEST)?;
    let mut received = Vec::new();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?))
            .unwrap_or_default();
        for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
            received.push(ReceivedSpan {
                service: service.clone(),
                name: span.name,
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent_span_id: hex(&span.parent_span_id),
                attributes: span
                    .attributes
                    .iter()
                    .filter_map(|kv| {
                        let value = text(kv.value.as_ref()?.value.as_ref()?)?;
                        Some((kv.key.clone(), value))
                    })
                    .collect(),
            });
        }
    }
    spans
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(received);
    Ok(ExportTraceServiceResponse::default().encode_to_vec())
}

fn text(value: &AnyValue) -> Option<String> {
    match value {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        AnyValue::BoolValue(b) => Some(b.to_string()),
        AnyValue::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
