//! What follows a settled payment, wherever the settlement was learned (the paid request, a
//! free re-run, reconciliation, recovery): the product records what was bought and names its
//! job, which is pushed. And the repeat of a request whose scope is already held, which never
//! settles anything.

use super::{
    ended::{CallRef, Ended},
    ledger,
    product::Product,
    push,
    wait::{self, Outcome},
};
use crate::{error::ApiError, products, state::AppState};
use grove_common::{
    db::{calls, entities::call},
    jobs::{Job, Started},
    ledger::CallStatus,
};
use sea_orm::DbErr;
use tokio::time::Instant;
use uuid::Uuid;

/// The product records what the payment bought, and its job is pushed; true if the push
/// landed (a failed push is retried in the background). A purchase that cannot be recorded
/// fails its call, so the identical retry (free) records it again.
/// `started`: the run the settlement's transaction started for the in-process worker, which the
/// coaching job carries so the worker does not start another.
pub(crate) async fn after_settled(
    state: &AppState,
    product: &dyn Product,
    call: &call::Model,
    started: Option<Started>,
) -> Result<bool, DbErr> {
    match product.after_settled(state, call).await {
        Ok(mut job) => {
            if let Job::Coaching(coaching) = &mut job {
                coaching.started = started;
            }
            Ok(push::enqueue(state, call.id, job).await)
        }
        Err(e) => {
            tracing::error!(error = %e, call_id = %call.id, kind = %call.kind, "could not record a paid purchase");
            not_recorded(state, call.id).await?;
            Ok(false)
        }
    }
}

/// `after_settled` for a call known only from its record (reconciliation, recovery): the
/// product is read back from the stored body.
pub(crate) async fn after_settled_stored(
    state: &AppState,
    call: &call::Model,
) -> Result<bool, DbErr> {
    match products::from_call(call) {
        Ok(product) => after_settled(state, product.as_ref(), call, None).await,
        Err(e) => {
            tracing::error!(error = %e, call_id = %call.id, kind = %call.kind, "stored call unreadable");
            not_recorded(state, call.id).await?;
            Ok(false)
        }
    }
}

async fn not_recorded(state: &AppState, call_id: Uuid) -> Result<(), DbErr> {
    let why = "could not record the paid request";
    grove_common::ledger::fail(&state.db, call_id, calls::Finisher::Unleased, why).await?;
    state.completions.notify(call_id).await;
    Ok(())
}

/// A repeat of a request whose scope is held by `call_id` (its body is this one's: `product`).
/// It never settles anything: it replays, waits, re-runs a paid failure for free, or answers
/// the 402 its original got.
pub(super) async fn repeat(
    state: &AppState,
    product: &dyn Product,
    call_id: Uuid,
    deadline: Instant,
) -> Result<Ended, ApiError> {
    let call = calls::load(&state.db, call_id)
        .await?
        .ok_or_else(|| ApiError::internal("idempotency record points at no call"))?;
    let waited = match call.status {
        CallStatus::Completed => Outcome::Completed(None),
        CallStatus::Unpaid => Outcome::Unpaid(wait::unpaid_code(call.error.clone())),
        _ => {
            // Paid for and failed: run it again at no charge. The reopen checks the payment in
            // the same statement and lets only one of concurrent retries through. Settling,
            // pending or running calls are waited for; a lost job is the recovery sweep's to
            // push again.
            if call.status == CallStatus::Failed
                && !super::health::left_for_later(state, product)
                && ledger::reopen_failed(&state.db, call_id, state.clock.wall()).await?
            {
                tracing::info!(%call_id, "re-running a failed paid call for free");
                after_settled(state, product, &call, None).await?;
            }
            // The wait holds only what the ending reads of the call, not its stored request.
            let call = CallRef::from(call);
            let waited =
                wait::until_final(&state.db, &state.completions, call_id, deadline).await?;
            return Ok(Ended::new(call, waited, true, None));
        }
    };
    Ok(Ended::new(call.into(), waited, true, None))
}
