//! One trace per paid call (issue 28): the `api` and a separate `worker` process export their
//! spans over OTLP/HTTP to a loopback receiver; the api's request, its settlement and the
//! worker's job and model call share one trace id, a caller's `traceparent` is continued, and
//! the api's JSON log lines carry the trace id.

use grove_tests::{
    api_process::ApiProcess,
    llm::caller_body,
    otlp::{OtlpReceiver, ReceivedSpan},
    paid::{Options, REDIS_URL, namespace, spawn_paid},
    x402::PayOptions,
};

const PATH: &str = "/api/v1/agents/mary/call";
/// The caller's own trace and span (W3C trace context, sampled).
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// The api's server span of a request (named `METHOD route`, as the conventions name it).
fn is_request(span: &ReceivedSpan) -> bool {
    span.attribute("http.request.method").is_some()
}

fn of_trace(spans: &[ReceivedSpan], trace: &str) -> Vec<ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.trace_id == trace)
        .cloned()
        .collect()
}

#[tokio::test]
async fn one_paid_call_is_one_trace_across_the_api_and_the_worker() {
    let otlp = OtlpReceiver::start().await;
    let rig = spawn_paid(Options {
        extra_env: vec![
            ("REDIS_URL".into(), REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), namespace()),
        ],
        ..Default::default()
    })
    .await;
    let export = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint.as_str()),
        // The batch exporter's pause between exports (the SDK's own variable), so spans
        // arrive while the test waits rather than after 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let mut env: Vec<(String, String)> = rig.env.clone().into_iter().collect();
    env.extend(export.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env.push(("RUST_LOG".into(), "info,grove_http=debug".into()));
    let api = ApiProcess::start(&env).await;
    // Spans are kept at `info` whatever the log filter (the test processes log at `warn`).
    let mut worker = rig.start_worker_process_with(&export);

    // A call carrying the caller's trace context.
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let response = rig
        .app
        .client
        .post(format!("{}{PATH}", api.url))
        .header("content-type", "application/json")
        .header("payment-signature", payment)
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .body(body.to_string())
        .send()
        .await
        .expect("the api answers");
    assert_eq!(response.status(), 200, "{}", api.log());

    // And another call (another question: the same one would be a replay) without: the api
    // starts the trace, the worker continues it.
    let mut body = caller_body("diagnose_growth");
    let question = format!("{} We sell online only.", body["messages"][0]["content"]);
    body["messages"][0]["content"] = question.into();
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let response = rig
        .app
        .client
        .post(format!("{}{PATH}", api.url))
        .header("content-type", "application/json")
        .header("payment-signature", payment)
        .body(body.to_string())
        .send()
        .await
        .expect("the api answers");
    assert_eq!(response.status(), 200);

    let complete = |trace: &str| {
        let spans = of_trace(&otlp.spans(), trace);
        spans
            .iter()
            .any(|s| s.service == "grove-api" && is_request(s))
            && spans
                .iter()
                .any(|s| s.service == "grove-worker" && s.name == "job.coaching")
            && spans.iter().any(|s| s.name == "llm.complete")
    };
    let summary = || {
        otlp.spans()
            .iter()
            .map(|s| {
                format!(
                    "{} {} {} <- {}",
                    s.service, s.name, s.trace_id, s.parent_span_id
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Bounded like `wait_until`, with what did arrive in the message.
    let wait_for = async |trace: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !complete(trace) {
            assert!(
                std::time::Instant::now() < deadline,
                "both processes' spans of trace {trace} never came:\n{}",
                summary()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    wait_for(CALLER_TRACE).await;
    let spans = of_trace(&otlp.spans(), CALLER_TRACE);
    let request = spans
        .iter()
        .find(|s| s.service == "grove-api" && is_request(s))
        .expect("the api's request span");
    assert_eq!(
        request.parent_span_id, CALLER_SPAN,
        "the request is a child of the caller's span"
    );
    assert_eq!(request.name, "POST /api/v1/agents/{agent_id}/call");
    assert_eq!(request.attribute("http.request.method"), Some("POST"));
    assert_eq!(
        request.attribute("http.route"),
        Some("/api/v1/agents/{agent_id}/call")
    );
    assert_eq!(request.attribute("url.path"), Some(PATH));
    assert_eq!(request.attribute("http.response.status_code"), Some("200"));
    let settle = spans
        .iter()
        .find(|s| s.name == "payment.settle")
        .expect("the settlement is a span of the trace");
    assert_eq!(settle.attribute("payment.outcome"), Some("settled"));
    assert!(
        spans
            .iter()
            .any(|s| s.attribute("db.collection.name") == Some("payments")
                && s.attribute("db.operation.name") == Some("UPDATE")),
        "the settlement's write is a database span: {spans:#?}"
    );
    let job = spans
        .iter()
        .find(|s| s.service == "grove-worker" && s.name == "job.coaching")
        .expect("the worker's job span");
    assert!(
        spans.iter().any(|s| s.span_id == job.parent_span_id),
        "the job continues a span of the api's: {spans:#?}"
    );
    let model = spans
        .iter()
        .find(|s| s.name == "llm.complete")
        .expect("the model call");
    assert_eq!(model.service, "grove-worker");
    assert_eq!(model.attribute("gen_ai.system"), Some("openai"));

    // The second call: its own trace, shared by both processes.
    let second_request = || {
        otlp.spans()
            .into_iter()
            .filter(|s| is_request(s) && s.trace_id != CALLER_TRACE)
            .filter(|s| s.attribute("http.route") == Some("/api/v1/agents/{agent_id}/call"))
            .find(|s| s.attribute("http.response.status_code") == Some("200"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let second = loop {
        if let Some(span) = second_request() {
            break span.trace_id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the second call's request span never came:\n{}",
            summary()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    wait_for(&second).await;
    assert!(
        of_trace(&otlp.spans(), &second)
            .iter()
            .all(|s| s.parent_span_id.is_empty() == is_request(s)),
        "one root: the api's request span"
    );

    // The api's JSON log lines name the trace.
    let logged = api.log().lines().any(|line| {
        serde_json::from_str::<serde_json::Value>(line)
            .is_ok_and(|v| v["trace_id"] == CALLER_TRACE && v["span_id"].is_string())
    });
    assert!(
        logged,
        "no log line carries the caller's trace id:\n{}",
        api.log()
    );
    let _ = worker.kill();
    let _ = worker.wait();
}
