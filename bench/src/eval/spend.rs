//! What each answer of the corpus costs in model calls, measured on the engine a paid call runs
//! ([`Engine::answer`]: judge, safe repairs, one re-ask listing every problem, the retry of a
//! cut-off answer), against a scripted model and an in-memory SQLite database.
//!
//! The script: the model's first answer is the corpus answer (clean or defective); every later
//! answer (a re-ask) is the clean answer written for the same caller. So a clean answer costs 1
//! call, a defect a safe repair fixes costs 1, a defect that needs a re-ask costs 2, and a run
//! that still fails uses every call the engine allows
//! ([`MAX_MODEL_CALLS`](grove_worker::coaching::MAX_MODEL_CALLS)).

use async_trait::async_trait;
use grove_common::catalog::{CoachId, ModeId};
use grove_common::config::LlmProviderKind;
use grove_common::db::{calls, entities::call};
use grove_common::requests::CoachingRequest;
use grove_common::schema::SchemaRegistry;
use grove_worker::coaching::{Engine, Outcome};
use grove_worker::llm::{LlmError, LlmProvider, LlmRequest, LlmResponse, Usage};
use sea_orm::{ActiveValue::Set, DatabaseConnection, EntityTrait};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{
    Arc, Mutex,
    atomic::{AtomicUsize, Ordering},
};
use std::time::Duration;
use uuid::Uuid;

/// A model that gives scripted answers in turn, then the fallback for every further call.
#[derive(Default)]
struct Scripted {
    script: Mutex<(VecDeque<Value>, Value)>,
    calls: AtomicUsize,
}

impl Scripted {
    fn load(&self, first: Value, then: Value) {
        if let Ok(mut s) = self.script.lock() {
            *s = (VecDeque::from([first]), then);
        }
        self.calls.store(0, Ordering::SeqCst);
    }
}

#[async_trait]
impl LlmProvider for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    async fn complete(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let json = self
            .script
            .lock()
            .map(|mut s| s.0.pop_front().unwrap_or_else(|| s.1.clone()))
            .unwrap_or_default();
        Ok(LlmResponse {
            json,
            usage: Usage::default(),
            attempts: 1,
        })
    }
}

/// The engine, its database and the model it is wired to.
pub struct Rig {
    db: DatabaseConnection,
    model: Arc<Scripted>,
    engine: Engine,
}

/// What one answer cost on the engine.
pub struct Spent {
    pub model_calls: usize,
    /// The engine delivered an answer (after repairs or a re-ask) rather than failing the call.
    pub delivered: bool,
}

impl Rig {
    pub async fn new(schemas: Arc<SchemaRegistry>) -> Result<Self, String> {
        let db = grove_common::db::connect_url("sqlite::memory:")
            .await
            .map_err(|e| format!("in-memory database: {e}"))?;
        grove_migrations::run(&db)
            .await
            .map_err(|e| format!("migrations: {e}"))?;
        let model = Arc::new(Scripted::default());
        let provider: Arc<dyn LlmProvider> = model.clone();
        // A deadline no scripted run comes near: the eval measures calls, not time.
        let engine = Engine::new(
            provider,
            schemas,
            LlmProviderKind::OpenAi,
            Duration::from_secs(60),
        );
        Ok(Self { db, model, engine })
    }

    /// Runs one paid call whose model first answers `first`, then `clean` on every re-ask.
    pub async fn spend(
        &self,
        coach: CoachId,
        mode: ModeId,
        request: &CoachingRequest,
        first: Value,
        clean: Value,
    ) -> Result<Spent, String> {
        self.model.load(first, clean);
        let call = paid_call(&self.db, coach, mode, request).await?;
        let outcome = self
            .engine
            .answer(&self.db, &call, call.request.clone())
            .await
            .map_err(|e| format!("engine: {e}"))?;
        Ok(Spent {
            model_calls: self.model.calls.load(Ordering::SeqCst),
            delivered: matches!(outcome, Outcome::Completed { .. }),
        })
    }
}

/// A call row as the API stores it once the payment settled: running, first run.
async fn paid_call(
    db: &DatabaseConnection,
    coach: CoachId,
    mode: ModeId,
    request: &CoachingRequest,
) -> Result<call::Model, String> {
    // Stored as the API stores it: the body's JSON, read back into the type by the engine.
    let request = serde_json::to_value(request).map_err(|e| format!("request: {e}"))?;
    let id = Uuid::now_v7();
    let now = chrono::Utc::now();
    call::Entity::insert(call::ActiveModel {
        id: Set(id),
        kind: Set(grove_common::ledger::CallKind::Coaching),
        agent: Set(Some(coach)),
        mode: Set(Some(mode)),
        payer: Set("0x00000000000000000000000000000000000000ee".into()),
        request_hash: Set(format!("eval-{id}")),
        request: Set(request),
        status: Set(grove_common::ledger::CallStatus::Running),
        attempts: Set(1),
        runs: Set(0),
        error: Set(None),
        receipt_id: Set(format!("rcpt_{}", id.simple())),
        request_id: Set("eval".into()),
        created_at: Set(now),
        updated_at: Set(now),
        completed_at: Set(None),
    })
    .exec(db)
    .await
    .map_err(|e| format!("call row: {e}"))?;
    calls::load(db, id)
        .await
        .map_err(|e| format!("call row: {e}"))?
        .ok_or_else(|| "call row vanished".to_owned())
}
