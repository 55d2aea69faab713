//! The coaching engine against the loopback model server (issue 9, failure handling): one re-ask
//! names schema and rule problems together and shows the model its answer, invalid JSON is
//! quoted back, safe repairs spare a re-ask, a cut-off answer gets one larger retry, one deadline
//! bounds the call, and usage counts every attempt. Each test counts the model calls it caused.

use grove_common::catalog::{CoachId, ModeId};
use grove_common::ledger::CallStatus;
use grove_common::{
    config::{LlmConfig, LlmProviderKind},
    db::{calls, entities::call},
    schema::SchemaRegistry,
};
use grove_tests::{
    TestDb,
    db::{call_row, insert_row},
    llm::{FakeLlm, Reply, caller_body, model_answer},
};
use grove_worker::{
    coaching::{Engine, Outcome},
    llm::{self, RetryPolicy},
};
use sea_orm::{ActiveValue::Set, DatabaseConnection};
use serde_json::{Value, json};
use std::{sync::Arc, time::Duration};

struct Rig {
    _db: TestDb,
    db: DatabaseConnection,
    llm: FakeLlm,
    engine: Engine,
}

async fn rig(call_deadline: Duration) -> Rig {
    let test_db = TestDb::new().await;
    let db = grove_common::db::connect_url(&test_db.url)
        .await
        .expect("database");
    grove_migrations::run(&db).await.expect("migrations");
    let llm = FakeLlm::start().await;
    let config = LlmConfig::new(LlmProviderKind::OpenAi, &llm.openai_base(), None);
    let retry = RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
        request_timeout: Duration::from_secs(10),
    };
    let provider = llm::from_config(&config, retry).expect("client");
    let schemas = Arc::new(SchemaRegistry::load().expect("schemas"));
    let engine = Engine::new(provider, schemas, LlmProviderKind::OpenAi, call_deadline);
    Rig {
        _db: test_db,
        db,
        llm,
        engine,
    }
}

async fn paid_call(db: &DatabaseConnection, coach: &str, mode: &str) -> call::Model {
    let mut row = call_row(CallStatus::Running);
    row.agent = Set(Some(CoachId::parse(coach).expect("a coach")));
    row.mode = Set(Some(ModeId::parse(mode).expect("a mode")));
    row.request = Set(caller_body(mode));
    row.attempts = Set(1);
    let id = insert_row(db, row).await;
    calls::load(db, id).await.expect("load").expect("the call")
}

impl Rig {
    async fn answer(&self, coach: &str, mode: &str) -> (call::Model, Outcome) {
        let call = paid_call(&self.db, coach, mode).await;
        let outcome = self
            .engine
            .answer(&self.db, &call, call.request.clone())
            .await
            .expect("db");
        (call, outcome)
    }
}

fn completed(outcome: Outcome) -> (Value, (u64, u64), u32) {
    match outcome {
        Outcome::Completed {
            envelope,
            usage,
            model_calls,
            ..
        } => (
            envelope,
            (usage.input_tokens, usage.output_tokens),
            model_calls,
        ),
        Outcome::Failed { reason } => panic!("the call failed: {reason}"),
    }
}

fn failed(outcome: Outcome) -> String {
    match outcome {
        Outcome::Failed { reason } => reason,
        Outcome::Completed { .. } => panic!("the call completed"),
    }
}

fn calls_of(n: u64) -> (u64, u64) {
    let (i, o) = FakeLlm::usage_per_call();
    (n * i, n * o)
}

/// The last two turns of a request: what the model is shown, then what it is told.
fn last_turns(body: &Value) -> (Value, Value) {
    let turns = body["messages"].as_array().expect("messages");
    (
        turns[turns.len() - 2].clone(),
        turns[turns.len() - 1].clone(),
    )
}

#[tokio::test]
async fn one_reask_names_schema_and_rule_problems_together_and_shows_the_answer() {
    let rig = rig(Duration::from_secs(20)).await;
    let mut wrong = model_answer("diagnose_growth");
    wrong["thinking"]["confidence"] = json!("certain");
    wrong["deliverable"]["ranked_levers"][0]["lever"] = json!("Something else entirely");
    rig.llm.script([Reply::Answer(wrong.clone()), Reply::Valid]);

    let (_, outcome) = rig.answer("mary", "diagnose_growth").await;

    let (_, usage, model_calls) = completed(outcome);
    assert_eq!(
        (model_calls, usage, rig.llm.received()),
        (2, calls_of(2), 2)
    );
    let (shown, told) = last_turns(&rig.llm.bodies()[1]);
    assert_eq!(shown["role"], "assistant");
    let shown: Value = serde_json::from_str(shown["content"].as_str().unwrap()).unwrap();
    assert_eq!(shown, wrong, "the model sees its own answer");
    let told = told["content"].as_str().unwrap();
    assert!(
        told.contains("/thinking/confidence"),
        "schema problem: {told}"
    );
    assert!(
        told.contains("/deliverable/ranked_levers/0/lever"),
        "rule problem in the same re-ask: {told}"
    );
}

#[tokio::test]
async fn invalid_json_is_re_asked_quoting_what_the_model_wrote() {
    let rig = rig(Duration::from_secs(20)).await;
    rig.llm.script([Reply::NotJson, Reply::Valid]);

    let (_, outcome) = rig.answer("mary", "diagnose_growth").await;

    let (_, usage, model_calls) = completed(outcome);
    assert_eq!(
        (model_calls, usage),
        (2, calls_of(2)),
        "the failed attempt is billed too"
    );
    let (shown, told) = last_turns(&rig.llm.bodies()[1]);
    assert_eq!(
        (shown["role"].as_str(), shown["content"].as_str()),
        (
            Some("assistant"),
            Some("Sure! Here is my advice: focus on sales.")
        )
    );
    let told = told["content"].as_str().unwrap();
    assert!(
        told.starts_with("Your answer above is not valid JSON ("),
        "{told}"
    );
}

#[tokio::test]
async fn safe_repairs_deliver_without_a_reask() {
    let rig = rig(Duration::from_secs(20)).await;
    let mut answer = model_answer("audit_function");
    let invented = json!({"label": "Typical studio revenue", "value": "$27,000", "basis": "30 clients × $900 = $27,000"});
    answer["numbers"]
        .as_array_mut()
        .unwrap()
        .insert(0, invented);
    let extra = answer["actions"][0].clone();
    for _ in 0..2 {
        answer["actions"]
            .as_array_mut()
            .unwrap()
            .push(extra.clone());
    }
    answer["thinking"]["confidence"] = json!("High");
    rig.llm.script([Reply::Answer(answer)]);

    let (_, outcome) = rig.answer("mary", "audit_function").await;

    let (envelope, _, model_calls) = completed(outcome);
    assert_eq!((model_calls, rig.llm.received()), (1, 1), "no re-ask");
    let sample = model_answer("audit_function");
    assert_eq!(
        envelope["numbers"], sample["numbers"],
        "only the untraceable item went"
    );
    assert_eq!(
        envelope["actions"].as_array().unwrap().len(),
        4,
        "trimmed to the cap"
    );
    assert_eq!(
        envelope["thinking"]["confidence"], "high",
        "enum case fixed"
    );
}

#[tokio::test]
async fn a_cut_off_answer_gets_one_larger_retry_asking_for_a_shorter_answer() {
    let rig = rig(Duration::from_secs(20)).await;
    rig.llm.script([Reply::Truncated, Reply::Valid]);

    let (_, outcome) = rig.answer("mary", "diagnose_growth").await;

    let (_, usage, model_calls) = completed(outcome);
    assert_eq!((model_calls, usage), (2, calls_of(2)));
    let bodies = rig.llm.bodies();
    assert_eq!(
        (
            bodies[0]["max_tokens"].as_u64(),
            bodies[1]["max_tokens"].as_u64()
        ),
        (Some(4096), Some(8192))
    );
    let system = bodies[1]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("# Your previous answer was cut off"),
        "{system}"
    );

    // Cut off twice: the call fails, and both billed answers are on record.
    rig.llm.script([Reply::Truncated, Reply::Truncated]);
    let (call, outcome) = rig.answer("mary", "diagnose_growth").await;
    assert_eq!(failed(outcome), "model_output_truncated");
    let rows = calls::model_calls(&rig.db, call.id, 0).await.unwrap();
    let billed: i64 = rows.iter().map(|r| r.input_tokens).sum();
    assert_eq!(billed as u64, calls_of(2).0);
}

#[tokio::test]
async fn a_replayed_run_takes_the_same_path_without_paying_again() {
    let rig = rig(Duration::from_secs(20)).await;
    let call = paid_call(&rig.db, "mary", "diagnose_growth").await;
    // The crashed run had received a cut-off answer.
    calls::record_model_call(
        &rig.db,
        call.id,
        0,
        0,
        json!({"error": "truncated"}),
        (120, 80),
        1,
    )
    .await
    .unwrap();

    // The run that picks the call up again is its second start.
    let call = call::Model {
        attempts: 2,
        ..call
    };
    let outcome = rig
        .engine
        .answer(&rig.db, &call, call.request.clone())
        .await
        .unwrap();

    let (_, usage, model_calls) = completed(outcome);
    assert_eq!(
        (model_calls, usage, rig.llm.received()),
        (2, calls_of(2), 1)
    );
    assert_eq!(rig.llm.bodies()[0]["max_tokens"], 8192);
}

#[tokio::test]
async fn one_deadline_bounds_the_call_below_call_deadline_s() {
    // CALL_DEADLINE_S=2: the engine gets 1.5 s, the model takes 3 s.
    let rig = rig(Duration::from_secs(2)).await;
    rig.llm.script([Reply::Slow(Duration::from_secs(3))]);
    let started = std::time::Instant::now();

    let (_, outcome) = rig.answer("mary", "diagnose_growth").await;

    assert_eq!(failed(outcome), "model_deadline_exceeded");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        rig.llm.received(),
        1,
        "the timed-out attempt is not retried past the deadline"
    );

    // Rate limits asking for a second each: retried while time is left, never past it.
    rig.llm
        .script(vec![Reply::RateLimited { retry_after_s: 1 }; 4]);
    let started = std::time::Instant::now();
    let (_, outcome) = rig.answer("mary", "diagnose_growth").await;
    assert_eq!(failed(outcome), "model_deadline_exceeded");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        rig.llm.received(),
        3,
        "two attempts fitted, the policy allowed four"
    );
}

#[tokio::test]
async fn a_stored_body_that_does_not_read_back_fails_the_call_without_asking_the_model() {
    // The worker reads the stored body into its type once, before any prompt is built: a body
    // the type refuses (here a turn whose role is neither user nor assistant) fails the call
    // with the reason, and no model call is paid for.
    let rig = rig(Duration::from_secs(20)).await;
    let mut call = paid_call(&rig.db, "mary", "diagnose_growth").await;
    call.request["messages"][0]["role"] = json!("system");
    let outcome = rig
        .engine
        .answer(&rig.db, &call, call.request.clone())
        .await
        .expect("db");
    let reason = failed(outcome);
    assert!(
        reason.starts_with("call record's request does not read back"),
        "{reason}"
    );
    assert_eq!(rig.llm.received(), 0);
}
