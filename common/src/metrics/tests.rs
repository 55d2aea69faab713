use super::{Metrics, catalog};
use std::time::Duration;

/// The value of the series written exactly as `series` (name and labels) in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_label_value_with_quotes_backslashes_and_newlines_is_escaped() {
    let m = Metrics::new();
    m.count(
        catalog::GATE_REFUSALS,
        &[("provider", "model:gpt \"mini\"\nnext")],
        2,
    );
    let text = m.render();
    assert_eq!(
        value(
            &text,
            r#"grove_gate_refusals_total{provider="model:gpt \"mini\"\nnext"}"#
        ),
        Some(2.0),
        "{text}"
    );
    // Nothing else on any line breaks the format: every sample line is `name{...} value`.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            line.rsplit_once(' ')
                .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
            "{line}"
        );
    }
}

#[test]
fn http_requests_are_counted_by_route_and_status_with_a_latency_histogram() {
    let m = Metrics::new();
    m.http_request("GET", "/receipts/{id}", 200, Duration::from_millis(3));
    m.http_request("GET", "/receipts/{id}", 200, Duration::from_millis(40));
    m.http_request("GET", "/receipts/{id}", 404, Duration::from_millis(2));
    let text = m.render();
    let requests = |status| {
        value(
            &text,
            &format!(
                r#"grove_http_requests_total{{method="GET",route="/receipts/{{id}}",status="{status}"}}"#
            ),
        )
    };
    assert_eq!(requests(200), Some(2.0), "{text}");
    assert_eq!(requests(404), Some(1.0));
    let bucket = |le| {
        value(
            &text,
            &format!(
                r#"grove_http_request_duration_seconds_bucket{{method="GET",route="/receipts/{{id}}",le="{le}"}}"#
            ),
        )
    };
    assert_eq!(bucket("0.005"), Some(2.0), "{text}");
    assert_eq!(bucket("0.05"), Some(3.0));
    assert!(text.contains("# TYPE grove_http_request_duration_seconds histogram"));
}

#[test]
fn every_catalogued_series_has_its_help_and_type_once_recorded() {
    let m = Metrics::new();
    let text = m.render();
    assert!(
        text.contains("# TYPE process_start_time_seconds gauge"),
        "{text}"
    );
    let names: std::collections::HashSet<_> = catalog::ALL.iter().map(|s| s.name).collect();
    assert_eq!(names.len(), catalog::ALL.len(), "a name is listed twice");
}
