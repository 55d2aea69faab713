//! A paid request, once its body is valid: verify the payment, apply idempotency, reserve and
//! record, settle, enqueue, await the worker, answer (CONTRACT 3 and 4, in that order).

pub mod idempotency;
mod ledger;
mod respond;
mod wait;

use crate::{
    error::ApiError,
    extract::IdempotencyKey,
    state::AppState,
    x402::{
        challenge::{self, Challenge, Offer, codes},
        facilitator::SettleRequest,
        payment::{self, Expected, VerifiedPayment},
    },
};
use axum::{http::HeaderMap, response::Response};
use grove_common::{
    db::{
        calls::{self, status},
        reviews,
    },
    jobs::{CoachingJob, ReviewJob, ReviewStep},
};
use idempotency::Kind;
use ledger::{Claim, NewCall, NewPayment};
use respond::Answer;
use serde_json::Value;
use tokio::time::Instant;
use uuid::Uuid;

/// What is being bought.
pub struct Purchase<'a> {
    pub kind: Kind,
    pub agent: Option<&'static str>,
    pub mode: Option<&'static str>,
    pub body: &'a Value,
    pub offer: Offer<'a>,
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(e.to_string())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

pub async fn serve(
    state: &AppState,
    headers: &HeaderMap,
    key: Option<IdempotencyKey>,
    purchase: Purchase<'_>,
) -> Result<Response, ApiError> {
    let Some(pay_to) = state.config.pay_to else {
        return Err(ApiError::PaymentsDisabled);
    };
    let pay_to_text = pay_to.to_checksum(None);
    let challenge = |error: &str| -> Challenge {
        challenge::build(&state.config, &pay_to_text, &purchase.offer, error)
    };
    let refuse = |error: &str| ApiError::PaymentRequired(Box::new(challenge(error)));

    let expected = Expected {
        pay_to,
        amount_atomic: purchase.offer.price.atomic(),
    };
    let payment = match payment::verify(headers, &expected, unix_now()) {
        Ok(Some(p)) => p,
        Ok(None) => return Err(refuse(codes::PAYMENT_REQUIRED)),
        Err(rejection) => {
            state.metrics.payment_rejected(rejection.reason());
            tracing::info!(reason = rejection.reason(), "payment refused");
            return Err(refuse(&codes::payment_invalid(rejection.reason())));
        }
    };
    let canonical = idempotency::canonical(purchase.body);
    let path = purchase.offer.path.clone();
    let scope = idempotency::scope(
        purchase.kind,
        payment.payer,
        &path,
        &canonical,
        key.as_ref(),
    );
    let request_hash = idempotency::request_hash(&path, &canonical);
    let deadline = Instant::now() + state.config.call_deadline;

    let claim = ledger::claim(
        &state.db,
        &scope,
        NewCall {
            kind: purchase.kind.as_str(),
            agent: purchase.agent.map(str::to_owned),
            mode: purchase.mode.map(str::to_owned),
            payer: format!("{:#x}", payment.payer),
            request_hash: request_hash.clone(),
            request: purchase.body.clone(),
            request_id: crate::request_id::current(),
        },
        NewPayment {
            nonce: format!("{:#x}", payment.nonce),
            amount: payment.amount_atomic.to_string(),
            network: grove_common::x402::NETWORK_V2.into(),
            x402_version: i32::from(payment.version),
        },
        state.clock.now(),
    )
    .await
    .map_err(internal)?;

    let answer = match claim {
        Claim::NonceUsed => return Err(refuse(codes::PAYMENT_ALREADY_USED)),
        Claim::Existing {
            request_hash: held, ..
        } if held != request_hash => return Err(ApiError::IdempotencyKeyReused),
        Claim::Existing { call_id, .. } => repeat(state, call_id, deadline).await?,
        Claim::New(call) => {
            let requirements = challenge(codes::PAYMENT_REQUIRED).requirements_for(payment.version);
            if let Err(reason) = settle(state, call.id, &payment, requirements).await {
                ledger::release_unpaid(&state.db, &scope.key, call.id, &reason)
                    .await
                    .map_err(internal)?;
                return Err(refuse(&codes::settlement_failed(&reason)));
            }
            if purchase.kind == Kind::ReviewRequest {
                let payer = format!("{:#x}", payment.payer);
                if let Err(e) = crate::review::plan::create(
                    &state.db,
                    call.id,
                    &payer,
                    purchase.body,
                    state.clock.now(),
                )
                .await
                {
                    // Paid for but not recorded: fail the call so the identical retry (free)
                    // creates it again.
                    tracing::error!(error = %e, call_id = %call.id, "could not record a paid review request");
                    calls::fail(&state.db, call.id, "could not record the review request")
                        .await
                        .map_err(internal)?;
                }
            }
            let enqueued = Instant::now();
            enqueue(state, call.id).await;
            let outcome = wait::until_final(&state.db, &state.completions, call.id, deadline)
                .await
                .map_err(internal)?;
            state.metrics.job_latency(enqueued.elapsed());
            Answer::from_wait(call.id, outcome, false)
        }
    };
    respond::render(state, &payment, answer).await
}

/// Settles through the facilitator; Err carries the reason for the 402.
async fn settle(
    state: &AppState,
    call_id: Uuid,
    payment: &VerifiedPayment,
    requirements: Value,
) -> Result<(), String> {
    let request = SettleRequest {
        x402_version: payment.version,
        payment_payload: payment.payload.clone(),
        payment_requirements: requirements,
    };
    let outcome = state.facilitator.settle(&request).await;
    let (status_text, tx, error) = match &outcome {
        Ok(r) if r.success && state.config.settles_locally() => ("unsettled", None, None),
        Ok(r) if r.success => ("settled", Some(r.transaction.clone()), None),
        Ok(r) => (
            "failed",
            None,
            Some(
                r.error_reason
                    .clone()
                    .unwrap_or_else(|| "settlement_refused".into()),
            ),
        ),
        Err(e) => ("failed", None, Some(e.reason().to_owned())),
    };
    state.metrics.settlement(status_text);
    if let Err(e) =
        ledger::record_settlement(&state.db, call_id, status_text, tx, error.clone()).await
    {
        tracing::error!(error = %e, %call_id, "could not record settlement");
    }
    match error {
        None => Ok(()),
        Some(reason) => {
            tracing::warn!(%call_id, %reason, "settlement failed");
            Err(reason)
        }
    }
}

/// Pushes the call's job. A failed push leaves the call pending; the repeat path re-pushes stale
/// calls, the review sweeper finds due requests, and the caller gets 504 with its receipt, so
/// nothing paid for is lost.
async fn enqueue(state: &AppState, call_id: Uuid) {
    let request_id = crate::request_id::current();
    let pushed = match calls::load(&state.db, call_id).await {
        Ok(Some(call)) if call.kind == Kind::ReviewRequest.as_str() => {
            match reviews::by_call(&state.db, call_id).await {
                Ok(Some(req)) => state
                    .queue
                    .push_review(
                        ReviewJob {
                            review_id: req.id,
                            step: ReviewStep::Send,
                            request_id,
                        },
                        None,
                    )
                    .await
                    .map_err(|e| e.to_string()),
                Ok(None) => Err("no review request recorded for the call".into()),
                Err(e) => Err(e.to_string()),
            }
        }
        Ok(Some(_)) => state
            .queue
            .push(CoachingJob {
                call_id,
                request_id,
            })
            .await
            .map_err(|e| e.to_string()),
        Ok(None) => Err("no such call".into()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = pushed {
        tracing::error!(error = %e, %call_id, "could not enqueue a settled call");
    }
}

/// A repeat of a request whose scope is held by `call_id`.
async fn repeat(state: &AppState, call_id: Uuid, deadline: Instant) -> Result<Answer, ApiError> {
    let call = calls::load(&state.db, call_id)
        .await
        .map_err(internal)?
        .ok_or_else(|| internal("idempotency record points at no call"))?;
    match call.status.as_str() {
        status::COMPLETED => Ok(Answer::Replay(call_id)),
        status::FAILED => {
            // Paid for and failed: run it again at no charge. Only one concurrent retry re-enqueues.
            if ledger::reopen_failed(&state.db, call_id)
                .await
                .map_err(internal)?
            {
                let unrecorded_review = call.kind == Kind::ReviewRequest.as_str()
                    && reviews::by_call(&state.db, call_id)
                        .await
                        .map_err(internal)?
                        .is_none();
                if unrecorded_review {
                    crate::review::plan::create(
                        &state.db,
                        call_id,
                        &call.payer,
                        &call.request,
                        state.clock.now(),
                    )
                    .await
                    .map_err(internal)?;
                }
                tracing::info!(%call_id, "re-running a failed paid call for free");
                enqueue(state, call_id).await;
            }
            let outcome = wait::until_final(&state.db, &state.completions, call_id, deadline)
                .await
                .map_err(internal)?;
            Ok(Answer::from_wait(call_id, outcome, false))
        }
        _ => {
            // Still pending or running. If it has been quiet far longer than any deadline, its job
            // was lost (a restart of the embedded queue); push it again.
            let stale = chrono::Utc::now() - call.updated_at
                > chrono::Duration::from_std(state.config.call_deadline * 2).unwrap_or_default();
            if stale {
                enqueue(state, call_id).await;
            }
            let outcome = wait::until_final(&state.db, &state.completions, call_id, deadline)
                .await
                .map_err(internal)?;
            Ok(Answer::from_wait(call_id, outcome, true))
        }
    }
}
