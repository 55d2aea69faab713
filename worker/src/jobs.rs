//! Job handlers. Each is a plain async function over a job from `grove_common::jobs`; its side
//! effects are keyed so that at-least-once delivery does them once.

use crate::coaching::{Engine, Outcome};
use crate::sms::SmsProvider;
use apalis::prelude::Data;
use grove_common::{
    clock::Clock,
    completion::Completions,
    db::calls::{self, status},
    jobs::CoachingJob,
    queue::JobQueue,
};
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use tracing::Instrument;

/// What a worker needs to run jobs.
pub struct Deps {
    pub db: DatabaseConnection,
    pub completions: Completions,
    /// `None` when no model provider is configured: coaching jobs fail (and the API never sells
    /// them in that state).
    pub engine: Option<Engine>,
    pub sms: Arc<dyn SmsProvider>,
    /// Quiet hours, consent age and follow-up timing read this clock (tests move it).
    pub clock: Arc<dyn Clock>,
    /// For the sweeper and delayed follow-ups.
    pub queue: JobQueue,
    pub public_base_url: String,
    /// Where the SMS provider posts delivery reports (None for the outbox: it has none).
    pub status_callback: Option<String>,
    /// The sweeper's passes, for `/metrics`.
    pub sweeps: Arc<grove_common::jobs::SweepStats>,
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The database is unreachable: let the queue retry the job later.
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
}

pub async fn coaching_job(job: CoachingJob, deps: Data<Arc<Deps>>) -> Result<(), JobError> {
    let span =
        tracing::info_span!("job.coaching", call_id = %job.call_id, request_id = %job.request_id);
    let deps: Arc<Deps> = Arc::clone(&deps);
    run_coaching(job, deps).instrument(span).await
}

async fn run_coaching(job: CoachingJob, deps: Arc<Deps>) -> Result<(), JobError> {
    let Some(call) = calls::load(&deps.db, job.call_id).await? else {
        tracing::warn!("job for an unknown call; dropping it");
        return Ok(());
    };
    // A re-delivered job whose result is already stored does no work: no second model call.
    if call.status == status::COMPLETED || !calls::start_attempt(&deps.db, call.id).await? {
        deps.completions.notify(call.id).await;
        return Ok(());
    }
    let outcome = match &deps.engine {
        Some(engine) => engine.answer(&deps.db, &call).await?,
        None => Outcome::Failed {
            reason: "no model provider configured".into(),
        },
    };
    match outcome {
        Outcome::Completed {
            envelope,
            usage,
            model_calls,
        } => {
            calls::complete(
                &deps.db,
                call.id,
                envelope,
                (usage.input_tokens, usage.output_tokens),
                model_calls,
            )
            .await?;
            tracing::info!(
                model_calls,
                input_tokens = usage.input_tokens,
                output_tokens = usage.output_tokens,
                "coaching call completed"
            );
        }
        Outcome::Failed { reason } => {
            calls::fail(&deps.db, call.id, &reason).await?;
            tracing::warn!(%reason, "coaching call failed");
        }
    }
    deps.completions.notify(call.id).await;
    Ok(())
}
