//! A paid request, once its body is valid: verify the payment, apply idempotency, reserve and
//! record, settle, enqueue, await the worker, answer (CONTRACT 3 and 4, in that order).

pub mod idempotency;
mod ledger;
pub mod push;
pub mod reconcile;
mod respond;
mod wait;

use crate::{
    error::ApiError,
    extract::IdempotencyKey,
    state::AppState,
    x402::{
        challenge::{self, Challenge, Offer, codes},
        facilitator::SettleRequest,
        payment::{self, Expected},
        settle::SettleOutcome,
    },
};
use axum::{http::HeaderMap, response::Response};
use grove_common::db::{
    calls::{self, status},
    entities::call,
    phone_marks::{self, Sale},
};
use idempotency::Kind;
use ledger::{Claim, NewCall, NewPayment};
use respond::Answer;
use sea_orm::DbErr;
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
    /// A text to this phone (E.164), sold only if none was sold in the last `days` (0: no
    /// cooldown asked). Taken atomically before settlement.
    pub phone: Option<(String, i64)>,
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

    let requirements = challenge(codes::PAYMENT_REQUIRED).requirements_for(payment.version);
    let settle_request = SettleRequest::for_payment(&payment, requirements);
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
            settle_request: serde_json::to_value(&settle_request).map_err(internal)?,
            valid_before: i64::try_from(payment.valid_before).unwrap_or(i64::MAX),
        },
        state.clock.now(),
    )
    .await
    .map_err(internal)?;

    let answer = match claim {
        Claim::NonceUsed => {
            let refused = ledger::refusal_of(
                &state.db,
                &format!("{:#x}", payment.payer),
                &format!("{:#x}", payment.nonce),
            )
            .await
            .map_err(internal)?;
            return Err(refuse(&match refused {
                Some(reason) => codes::settlement_failed(&reason),
                None => codes::PAYMENT_ALREADY_USED.to_owned(),
            }));
        }
        Claim::Existing {
            request_hash: held, ..
        } if held != request_hash => return Err(ApiError::IdempotencyKeyReused),
        Claim::Existing { call_id, .. } => repeat(state, call_id, deadline).await?,
        Claim::New(call) => {
            if let Some((phone, days)) = &purchase.phone {
                // Since the pre-payment checks another request to this phone may have been sold
                // inside the cooldown, or the phone may have opted out: then this one is not
                // sold, and nothing is settled.
                let refusal = match phone_marks::take_for_sale(
                    &state.db,
                    phone,
                    call.id,
                    state.clock.now(),
                    *days,
                )
                .await
                .map_err(internal)?
                {
                    Sale::Marked => None,
                    Sale::CooldownActive => {
                        Some(("cooldown_active", ApiError::CooldownActive { days: *days }))
                    }
                    Sale::OptedOut => Some(("recipient_opted_out", ApiError::RecipientOptedOut)),
                };
                if let Some((reason, error)) = refusal {
                    let not_sold = SettleOutcome::Refused {
                        reason: reason.into(),
                    };
                    ledger::record_outcome(&state.db, call.id, &not_sold, chrono::Utc::now())
                        .await
                        .map_err(internal)?;
                    return Err(error);
                }
            }
            let outcome = state.settler.settle(&settle_request).await;
            state.metrics.settlement(outcome.label());
            let moved = ledger::record_outcome(&state.db, call.id, &outcome, chrono::Utc::now())
                .await
                .map_err(internal)?;
            match &outcome {
                SettleOutcome::Refused { reason } => {
                    if outcome.is_operator_fault() {
                        tracing::error!(call_id = %call.id, %reason,
                            "settlement not processed: the facilitator refused our credentials; the payment was handed back");
                    } else {
                        tracing::warn!(call_id = %call.id, %reason, "settlement refused");
                    }
                    if purchase.phone.is_some() {
                        phone_marks::give_back(&state.db, call.id)
                            .await
                            .map_err(internal)?;
                    }
                    // Repeats that waited on this settlement get the same answer.
                    state.completions.notify(call.id).await;
                    return Err(unpaid(&refuse, &wait::unpaid_code(moved_error(&outcome))));
                }
                SettleOutcome::Settled { .. } if moved => {
                    after_settled(state, &call).await.map_err(internal)?;
                }
                SettleOutcome::Settled { .. } => {}
                SettleOutcome::Unknown { reason, .. } => {
                    // Not a 402: the money may have moved. Reconciliation starts at once; this
                    // request waits for its outcome like any repeat would.
                    tracing::warn!(call_id = %call.id, %reason, "settlement outcome unknown; reconciling");
                    state.reconcile.notify_one();
                }
            }
            let enqueued = Instant::now();
            let outcome = wait::until_final(&state.db, &state.completions, call.id, deadline)
                .await
                .map_err(internal)?;
            state.metrics.job_latency(enqueued.elapsed());
            Answer::from_wait(call.id, outcome, false)
        }
    };
    match answer {
        Answer::Unpaid(code) => Err(unpaid(&refuse, &code)),
        answer => respond::render(state, &payment, answer).await,
    }
}

/// Seconds a `settlement_unavailable` answer asks the client to wait: an operator must act.
const UNAVAILABLE_RETRY_AFTER_S: u64 = 60;

/// The answer of an unpaid call: the 402 its settlement was refused with, or a 503 when nothing
/// was processed through no fault of the payer's.
fn unpaid(refuse: &dyn Fn(&str) -> ApiError, code: &str) -> ApiError {
    if code.starts_with(codes::SETTLEMENT_UNAVAILABLE) {
        ApiError::SettlementUnavailable {
            retry_after_s: UNAVAILABLE_RETRY_AFTER_S,
        }
    } else {
        refuse(code)
    }
}

/// The error a refused outcome leaves on its call (as `ledger::record_outcome` writes it).
fn moved_error(outcome: &SettleOutcome) -> Option<String> {
    match outcome {
        SettleOutcome::Refused { reason } if outcome.is_operator_fault() => {
            Some(format!("{}{reason}", codes::SETTLEMENT_UNAVAILABLE))
        }
        SettleOutcome::Refused { reason } => Some(codes::settlement_failed(reason)),
        _ => None,
    }
}

/// What follows a settled payment: a review request gets its plan recorded, then the call's job
/// is pushed. The paid request, a free re-run and reconciliation all come through here.
pub(crate) async fn after_settled(state: &AppState, call: &call::Model) -> Result<(), DbErr> {
    if call.kind == Kind::ReviewRequest.as_str() {
        let planned = crate::review::plan::create(
            &state.db,
            call.id,
            &call.payer,
            &call.request,
            state.clock.now(),
        )
        .await;
        if let Err(e) = planned {
            // Paid for but not recorded: fail the call so the identical retry (free) creates it
            // again.
            tracing::error!(error = %e, call_id = %call.id, "could not record a paid review request");
            calls::fail(
                &state.db,
                call.id,
                calls::Finisher::Unleased,
                "could not record the review request",
            )
            .await?;
            state.completions.notify(call.id).await;
            return Ok(());
        }
    }
    push::enqueue(state, call.id, &call.kind).await;
    Ok(())
}

/// A repeat of a request whose scope is held by `call_id`. It never settles anything: it replays,
/// waits, re-runs a paid failure for free, or answers the 402 its original got.
async fn repeat(state: &AppState, call_id: Uuid, deadline: Instant) -> Result<Answer, ApiError> {
    let call = calls::load(&state.db, call_id)
        .await
        .map_err(internal)?
        .ok_or_else(|| internal("idempotency record points at no call"))?;
    match call.status.as_str() {
        status::COMPLETED => return Ok(Answer::Replay(call_id)),
        status::UNPAID => return Ok(Answer::Unpaid(wait::unpaid_code(call.error.clone()))),
        _ => {}
    }
    // Paid for and failed: run it again at no charge. The reopen checks the payment in the same
    // statement and lets only one of concurrent retries through. Settling, pending or running
    // calls are waited for; a lost job is the recovery sweep's to push again.
    if call.status == status::FAILED
        && ledger::reopen_failed(&state.db, call_id)
            .await
            .map_err(internal)?
    {
        tracing::info!(%call_id, "re-running a failed paid call for free");
        after_settled(state, &call).await.map_err(internal)?;
    }
    let outcome = wait::until_final(&state.db, &state.completions, call_id, deadline)
        .await
        .map_err(internal)?;
    Ok(Answer::from_wait(call_id, outcome, true))
}
