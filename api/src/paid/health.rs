//! No price for work that cannot run (issue 30): while the provider a product needs is down
//! (its health gate, `grove_common::health`, is open or half-open), a request that would get a
//! 402 gets `503 model_unavailable` / `sms_unavailable` with `Retry-After` (the next probe)
//! instead, so no agent signs for work we know would fail.
//!
//! Only requests that carry no usable payment are refused here: a payment that verifies goes on
//! to the gate's idempotency, so the repeat of a paid call (its replay, its wait, its free
//! re-run) and the payment that answers a price quoted before the gate opened are never refused.
//! A call paid that way and failed in the outage is re-run once the gate closes (`rerun`).
//!
//! No price either for a coaching call that could not finish within the deadline at the
//! workers' pace (`within_capacity`, issue 31; the estimate is `super::admission`'s), nor for
//! any paid call while the database's writes queue (`writes_keep_up`).

use super::product::Product;
use crate::{error::ApiError, state::AppState};
use grove_common::ledger::CallKind;

/// `Err(ProviderUnavailable)` while `product`'s provider's gate does not admit.
pub(super) fn before_price(state: &AppState, product: &dyn Product) -> Result<(), ApiError> {
    let Some(provider) = product.provider(&state.config) else {
        return Ok(());
    };
    let Some(wait) = state.gates.refusal(&provider) else {
        return Ok(());
    };
    state.metrics.gate_refusal(provider.as_str());
    tracing::info!(%provider, retry_after_s = wait.as_secs(), "not priced: the provider's health gate is open");
    Err(ApiError::ProviderUnavailable {
        provider: provider.kind(),
        retry_after_s: wait.as_secs(),
    })
}

/// A failed coaching call's repeat while the model's gate is open: its re-run would only fail
/// fast, so it is left to `rerun`, which re-runs it once the gate closes (the repeat gets the
/// failure and its receipt at once).
pub(super) fn left_for_later(state: &AppState, product: &dyn Product) -> bool {
    product.kind() == CallKind::Coaching
        && product
            .provider(&state.config)
            .is_some_and(|p| !state.gates.admits(&p))
}

/// `Err(OverCapacity)` when a new `product` call could not finish within the deadline; only
/// coaching calls wait on the model, so only they are measured.
pub(super) fn within_capacity(state: &AppState, product: &dyn Product) -> Result<(), ApiError> {
    if !product.admitted_by_capacity() {
        return Ok(());
    }
    let Err(wait) = state.admission.quote() else {
        return Ok(());
    };
    state.metrics.over_capacity();
    tracing::info!(
        retry_after_s = wait.as_secs(),
        "not priced: the calls ahead would not finish within the deadline"
    );
    Err(ApiError::OverCapacity {
        retry_after_s: wait.as_secs(),
    })
}

/// The part of the deadline a paid call's writes may wait for the database before new calls are
/// refused: the margin admission leaves beyond the model's rounds (`grove_common::load::admit`).
const WRITE_WAIT_SHARE: u32 = 10;

/// `Err(WritesQueued)` while the paid calls' writes queue for the database (on PostgreSQL, the
/// oldest claim or settled outcome waiting for a batch has waited a tenth of the deadline): a
/// new call priced now would wait behind them before its payment, and again after it, so it is
/// refused before a price, as a coaching call past the workers' capacity is. The wait so far is
/// the Retry-After: about as long again drains the queue, at the pace it is going.
pub(super) fn writes_keep_up(state: &AppState) -> Result<(), ApiError> {
    let waited = state.write_wait();
    let deadline = state.config.call_deadline;
    if waited < deadline / WRITE_WAIT_SHARE {
        return Ok(());
    }
    state.metrics.over_capacity();
    let retry_after_s = waited.as_secs_f64().ceil() as u64;
    let retry_after_s = retry_after_s.clamp(1, deadline.as_secs().max(1));
    tracing::warn!(
        waited_ms = waited.as_millis() as u64,
        retry_after_s,
        "not priced: paid calls' writes are queued for the database"
    );
    Err(ApiError::WritesQueued { retry_after_s })
}
