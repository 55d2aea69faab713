//! `/metrics` as an operator's Prometheus reads it (issue 28): HTTP requests by route template
//! and status, label values escaped, model and SMS series from the worker, and alert rules that
//! name only series the api and the worker actually show.

use grove_common::metrics::catalog;
use grove_tests::{
    llm::caller_body,
    paid::{Options, PaidApp, REDIS_URL, namespace, spawn_paid},
    wait_until,
};
use std::collections::BTreeSet;

const PATH: &str = "/api/v1/agents/mary/call";
const RULES: &str = "../deploy/kubernetes/components/alerts/grove.rules.yaml";

/// The value of the sample written exactly as `series` (name and labels) in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The metric names of every sample line in `text` (`_bucket`, `_sum` and `_count` folded
/// into their histogram's name).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(|name| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|base| text.contains(&format!("# TYPE {base} histogram")))
                .unwrap_or(name)
                .to_owned()
        })
        .collect()
}

async fn text(app: &PaidApp, url: String) -> String {
    let r = app.app.client.get(url).send().await.expect("reachable");
    assert_eq!(r.status(), 200);
    r.text().await.expect("text")
}

#[tokio::test]
async fn requests_are_counted_by_route_template_and_status_never_by_raw_path() {
    let rig = spawn_paid(Options::default()).await;
    for id in ["rc_one", "rc_two"] {
        assert_eq!(
            rig.app
                .get(&format!("/api/v1/receipts/{id}"))
                .await
                .status(),
            404
        );
    }
    assert_eq!(rig.app.get("/no/such/page").await.status(), 404);
    let metrics = rig.app.metrics().await;
    assert_eq!(
        value(
            &metrics,
            r#"grove_http_requests_total{method="GET",route="/api/v1/receipts/{id}",status="404"}"#
        ),
        Some(2.0),
        "{metrics}"
    );
    assert!(!metrics.contains("rc_one"), "a path's value is no label");
    assert_eq!(
        value(
            &metrics,
            r#"grove_http_requests_total{method="GET",route="unmatched",status="404"}"#
        ),
        Some(1.0)
    );
    assert!(
        value(
            &metrics,
            r#"grove_http_request_duration_seconds_count{method="GET",route="/api/v1/receipts/{id}"}"#
        ) == Some(2.0),
        "{metrics}"
    );
    assert!(value(&metrics, "process_resident_memory_bytes").is_some_and(|b| b > 0.0));
    assert!(value(&metrics, "process_start_time_seconds").is_some_and(|t| t > 1.0e9));
}

/// A model name is the operator's text, and it names the model's health gate: a quote in it
/// must not break the exposition (Prometheus would reject the whole scrape).
#[tokio::test]
async fn a_label_value_with_a_quote_is_escaped() {
    let rig = spawn_paid(Options {
        extra_env: vec![("LLM_MODEL".into(), r#"gpt "mini" \ beta"#.into())],
        ..Default::default()
    })
    .await;
    let metrics = rig.app.metrics().await;
    assert_eq!(
        value(
            &metrics,
            r#"grove_provider_gate_open{provider="model:gpt \"mini\" \\ beta"}"#
        ),
        Some(0.0),
        "{metrics}"
    );
}

/// One paid call through Redis and a separate worker process: the api shows the money and the
/// queues, the worker the model call; every series an alert rule names is among them.
#[tokio::test]
async fn alert_rules_name_only_series_that_metrics_shows() {
    let rig = spawn_paid(Options {
        extra_env: vec![
            ("REDIS_URL".into(), REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), namespace()),
        ],
        ..Default::default()
    })
    .await;
    let health = format!("127.0.0.1:{}", grove_tests::free_port());
    let mut worker = rig.start_worker_process_with(&[("WORKER_HEALTH_ADDR", &health)]);
    let worker_metrics = format!("http://{health}/metrics");
    let response = rig
        .pay_and_call(PATH, &caller_body("diagnose_growth"), None)
        .await;
    assert_eq!(response.status(), 200);
    let api = rig.app.metrics().await;
    wait_until("the worker to answer", async || {
        let url = worker_metrics.clone();
        rig.app.client.get(url).send().await.is_ok()
    })
    .await;
    let worker_text = text(&rig, worker_metrics).await;
    let _ = worker.kill();
    let _ = worker.wait();
    assert_eq!(
        value(
            &worker_text,
            r#"grove_model_calls_total{provider="openai",outcome="ok"}"#
        ),
        Some(1.0),
        "{worker_text}"
    );
    assert!(
        value(
            &worker_text,
            r#"grove_model_tokens_total{provider="openai",direction="input"}"#
        )
        .is_some_and(|n| n > 0.0),
        "{worker_text}"
    );
    assert_eq!(
        value(&api, r#"grove_settlements_total{result="settled"}"#),
        Some(1.0)
    );
    assert_eq!(value(&api, "grove_payments_set_aside"), Some(0.0), "{api}");

    let shown: BTreeSet<String> = sample_names(&api)
        .into_iter()
        .chain(sample_names(&worker_text))
        .collect();
    let rules = std::fs::read_to_string(RULES).expect("the rules file");
    let docs = yaml_rust2::YamlLoader::load_from_str(&rules).expect("the rules parse as YAML");
    let groups = docs[0]["groups"].as_vec().expect("rule groups");
    let mut checked = 0;
    for rule in groups
        .iter()
        .flat_map(|g| g["rules"].as_vec().expect("rules"))
    {
        let name = rule["alert"].as_str().expect("every rule is an alert");
        let expr = rule["expr"].as_str().expect("every alert has an expr");
        for field in ["for", "labels", "annotations"] {
            assert!(!rule[field].is_badvalue(), "{name} has no {field}");
        }
        for metric in metric_names(expr) {
            assert!(
                shown.contains(&metric),
                "{name} names {metric}, which /metrics does not show: {shown:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "the rules name series ({checked})");
}

/// The series names in a PromQL expression: Grove's and the process's.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = ["grove_", "process_"]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

#[test]
fn every_series_is_documented_with_its_type() {
    let docs = std::fs::read_to_string("../docs/operations.md").expect("docs");
    for s in catalog::ALL {
        let kind = format!("{:?}", s.kind).to_lowercase();
        let row = format!("| `{}` | {kind} |", s.name);
        assert!(docs.contains(&row), "docs/operations.md lacks {row}");
    }
}
