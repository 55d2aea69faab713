//! The purchase itself, whatever transport carried it: verify the payment, apply idempotency,
//! reserve and record, let the product take its last check, settle, fulfil, await the worker,
//! and hand back the outcome as data (CONTRACT 3 and 4, in that order). The HTTP adapter
//! (`super::http`) reads the payment from headers and renders a `Delivery` with
//! `PAYMENT-RESPONSE`; an MCP tool call would pass the payment from `_meta["x402/payment"]` and
//! put `Delivery::settlement` in `_meta["x402/payment-response"]`.

use super::{
    admission::Settling,
    ended::{self, CallRef, Delivery, Ended},
    fulfil, health,
    idempotency::{self, Scope},
    ledger::{self, Claim, NewCall, NewPayment, PaidRecord},
    product::{NotSold, Product},
    terms::Terms,
    wait,
};
use crate::{
    error::ApiError,
    extract::IdempotencyKey,
    state::AppState,
    x402::{
        challenge::codes,
        facilitator::SettleRequest,
        payload::PaymentPayload,
        payment::{Expected, VerifiedPayment},
        rejection::PaymentRejection,
        settle::SettleOutcome,
        smart_wallet::{self, WalletCheckError},
    },
};
use grove_common::db::entities::call;
use tokio::time::Instant;
use tracing::Instrument;

/// Seconds a client waits before retrying when the chain could not check its wallet's signature.
const WALLET_CHECK_RETRY_AFTER_S: u64 = 5;

/// Buys `product` with the payment a transport found (`Ok(None)`: none was presented; `Err`: one
/// was, but could not be read). Every refusal is an `ApiError`: a 402 carries its challenge.
pub async fn purchase(
    state: &AppState,
    presented: Result<Option<PaymentPayload>, PaymentRejection>,
    key: Option<IdempotencyKey>,
    product: &dyn Product,
) -> Result<Delivery, ApiError> {
    let Some(pay_to) = state.config.pay_to else {
        return Err(ApiError::PaymentsDisabled);
    };
    let terms = Terms {
        state,
        pay_to,
        product,
    };
    // Its price, path and requirements are read before the settlement; it is dropped before
    // the wait (a refusal after it builds the offer again).
    let offer = terms.offer();
    let expected = Expected {
        network: state.config.network,
        pay_to,
        amount_atomic: offer.price.atomic(),
    };
    let now_unix = state.clock.wall_unix();
    let verified = match presented {
        Ok(Some(p)) => {
            let wallets = state.wallets.as_deref();
            Box::pin(smart_wallet::verify_payload(
                p, &expected, now_unix, wallets,
            ))
            .await
        }
        Ok(None) => {
            health::before_price(state, product)?;
            health::writes_keep_up(state)?;
            health::within_capacity(state, product)?;
            return Err(terms.refuse(codes::PAYMENT_REQUIRED));
        }
        Err(rejection) => Err(rejection.into()),
    };
    let mut payment = match verified {
        Ok(p) => p,
        Err(WalletCheckError::Rejected(rejection)) => {
            health::before_price(state, product)?;
            health::writes_keep_up(state)?;
            health::within_capacity(state, product)?;
            state.metrics.payment_rejected(rejection.reason());
            tracing::info!(reason = rejection.reason(), "payment refused");
            return Err(terms.refuse(&codes::payment_invalid(rejection.reason())));
        }
        // The chain could not be asked about a smart wallet's signature: nothing was reserved
        // or charged, and the same payment stays good.
        Err(WalletCheckError::Unavailable(why)) => {
            tracing::warn!(error = %why, "payment's wallet could not be asked on chain");
            return Err(ApiError::SettlementUnavailable {
                retry_after_s: WALLET_CHECK_RETRY_AFTER_S,
            });
        }
    };
    // The body as a JSON tree, parsed from the product's text for the two keys and the claim,
    // which takes it: not held through the wait.
    let body: serde_json::Value =
        serde_json::from_str(product.stored_body().get()).map_err(ApiError::internal)?;
    // In a block: a local is held in this future until its scope ends, and the canonical body
    // is needed only for these two keys, not through the wait.
    let (scope, request_hash) = {
        let canonical = idempotency::canonical(&body);
        let path = offer.path.as_str();
        let scope = idempotency::scope(
            product.keyless_window(),
            payment.payer,
            path,
            &canonical,
            key.as_ref(),
        );
        (scope, idempotency::request_hash(path, &canonical))
    };
    // Every phase before and after the wait is boxed, and freed when done: the future held while
    // the model thinks is only as large as the wait itself (issue 31: the handler's future was
    // 43 KiB a call in flight).
    Box::pin(payer_within_limit(state, &payment, &scope)).await?;
    let deadline = Instant::now() + state.config.call_deadline;
    let requirements = terms.requirements(&offer, payment.version);
    drop(offer);
    // Takes the payload out of `payment`: from here it travels in the request to settle only,
    // which is dropped once settled.
    let settle_request = SettleRequest::for_payment(&mut payment, requirements);
    let claim = Box::pin(reserve(
        state,
        product,
        &payment,
        &scope,
        &request_hash,
        &settle_request,
        body,
    ))
    .await?;
    let ended = match claim {
        Claim::NonceUsed => return Err(Box::pin(already_used(state, &terms, &payment)).await?),
        Claim::Vacated => {
            return Err(ApiError::internal(format!(
                "idempotency scope vacated under {CLAIM_TRIES} claims in a row"
            )));
        }
        Claim::Existing {
            request_hash: held, ..
        } if held != request_hash => return Err(ApiError::IdempotencyKeyReused),
        Claim::Existing { call_id, .. } => {
            Box::pin(fulfil::repeat(state, product, call_id, deadline)).await?
        }
        Claim::New(call) => {
            // A paid call that waits on the model is ahead of new ones from here until its job
            // is pushed.
            let settling = product
                .admitted_by_capacity()
                .then(|| state.admission.paid());
            let call = *call;
            let request = settle_request;
            settle_and_wait(state, &terms, product, call, request, deadline, settling).await?
        }
    };
    Box::pin(ended::deliver(
        state,
        &terms,
        product.labels().mode,
        &payment,
        ended,
    ))
    .await
}

/// The payer's limit on new paid calls (`crate::limits`). Over it, a request is refused only if
/// it would buy something new: a repeat of a held request, or a payment already reserved (a retry),
/// goes on, since what it is owed was already paid for. Nothing is reserved before a refusal, so
/// the same payment stays good once the wait is over.
async fn payer_within_limit(
    state: &AppState,
    payment: &VerifiedPayment,
    scope: &Scope,
) -> Result<(), ApiError> {
    let payer = format!("{:#x}", payment.payer);
    let Err(wait) = state.limits.check_payer(&payer) else {
        return Ok(());
    };
    let nonce = format!("{:#x}", payment.nonce);
    if ledger::is_known(&state.db, &payer, &nonce, &scope.key, state.clock.wall()).await? {
        return Ok(());
    }
    state.metrics.rate_limited("payer");
    tracing::info!(%payer, "new paid call over the payer's rate limit");
    Err(ApiError::RateLimited {
        retry_after_s: wait,
    })
}

/// How many claims a request makes while its scope is vacated under them.
const CLAIM_TRIES: u32 = 3;

/// Claims the scope, reserves the authorization and records the call (`ledger::claim`); again
/// while the scope is vacated under the claim (`Claim::Vacated`: a refusal released it between
/// the claim's write and its read). The refused authorization is used from then on, so a second
/// vacancy needs another payment refused on the same scope in the same instant; after a third
/// the request is answered 500 (the caller's payment is untouched).
async fn reserve(
    state: &AppState,
    product: &dyn Product,
    payment: &VerifiedPayment,
    scope: &Scope,
    request_hash: &str,
    settle_request: &SettleRequest,
    body: serde_json::Value,
) -> Result<Claim, ApiError> {
    let labels = product.labels();
    // Written as text: serialised once here, not copied into a JSON tree first.
    let settle_json = serde_json::to_string(settle_request).map_err(ApiError::internal)?;
    let mut body = Some(body);
    let mut tries = 1;
    loop {
        let request = match body.take() {
            Some(first) => first,
            // Claiming again: the first try's tree went into its claim.
            None => {
                serde_json::from_str(product.stored_body().get()).map_err(ApiError::internal)?
            }
        };
        let call = NewCall {
            kind: product.kind(),
            agent: labels.agent,
            mode: labels.mode,
            payer: format!("{:#x}", payment.payer),
            request_hash: request_hash.to_owned(),
            request,
            request_id: crate::request_id::current(),
        };
        let pay = NewPayment {
            nonce: format!("{:#x}", payment.nonce),
            amount: payment.amount_atomic.to_string(),
            network: state.config.network.caip2().into(),
            x402_version: i32::from(payment.version),
            settle_request: settle_json.clone(),
            valid_before: i64::try_from(payment.valid_before).unwrap_or(i64::MAX),
        };
        let (window_start, now) = (state.clock.now(), state.clock.wall());
        let span = grove_common::telemetry::db_span(&state.db, "INSERT", "calls");
        let claim = ledger::claim(&state.claims, scope, call, pay, window_start, now)
            .instrument(span)
            .await?;
        if !matches!(claim, Claim::Vacated) || tries == CLAIM_TRIES {
            return Ok(claim);
        }
        tries += 1;
        tracing::info!("idempotency scope vacated under a claim; claiming again");
    }
}

/// An authorization that already paid for another request: the 402 its settlement was refused
/// with when it was (the repeat arrived after the refusal released the scope), else "used".
async fn already_used(
    state: &AppState,
    terms: &Terms<'_>,
    payment: &VerifiedPayment,
) -> Result<ApiError, ApiError> {
    let payer = format!("{:#x}", payment.payer);
    let nonce = format!("{:#x}", payment.nonce);
    let refused = ledger::refusal_of(&state.db, &payer, &nonce).await?;
    Ok(terms.refuse(&match refused {
        Some(reason) => codes::settlement_failed(&reason),
        None => codes::PAYMENT_ALREADY_USED.to_owned(),
    }))
}

/// A new call: the product's last check, settlement, fulfilment, and the wait for the work.
async fn settle_and_wait(
    state: &AppState,
    terms: &Terms<'_>,
    product: &dyn Product,
    call: call::Model,
    settle_request: SettleRequest,
    deadline: Instant,
    settling: Option<Settling<'_>>,
) -> Result<Ended, ApiError> {
    if let Some(NotSold { reason, error }) =
        Box::pin(product.before_settlement(state, call.id)).await?
    {
        let not_sold = SettleOutcome::Refused {
            reason: reason.into(),
        };
        // Boxed, as the phases below: inline, this rare write (5 KiB of future) would size the
        // future of every call that waits.
        Box::pin(ledger::record_outcome(
            &state.db,
            call.id,
            &not_sold,
            state.clock.wall(),
        ))
        .await?;
        return Err(error);
    }
    // Registered before the job is pushed, so a worker that finishes at once still wakes us.
    let waiter = state.completions.waiter(call.id);
    let span = tracing::info_span!(
        "payment.settle",
        otel.kind = "client",
        payment.outcome = tracing::field::Empty,
    );
    let outcome = Box::pin(
        state
            .settler
            .settle(&settle_request)
            .instrument(span.clone()),
    )
    .await;
    // Sent and answered: the payload and requirements are not held through the wait.
    drop(settle_request);
    span.record("payment.outcome", outcome.label());
    state.metrics.settlement(outcome.label());
    // A product whose run this process's worker may start does so in the outcome's own
    // transaction (issue 12: one write transaction fewer per paid call).
    let runner = product.run_with_settlement(state);
    let now = state.clock.wall();
    let span = grove_common::telemetry::db_span(&state.db, "UPDATE", "payments");
    let recorded = Box::pin(
        ledger::record_paid_outcome(&state.outcomes, call.id, &outcome, now, runner)
            .instrument(span),
    )
    .await?;
    if matches!(recorded, PaidRecord::MaybeMoved) {
        tracing::warn!(call_id = %call.id, "an outcome write's answer was lost; acting on the outcome as the call now stands");
    }
    let mut transaction = None;
    let mut pushed = false;
    match &outcome {
        // Decided by another writer first (reconciliation took a stale reservation): this
        // refusal moved nothing; the call's own outcome is awaited.
        SettleOutcome::Refused { reason } if !recorded.acts() => {
            tracing::warn!(call_id = %call.id, %reason, "settlement refused after the call was decided elsewhere");
        }
        // What the sale took before settlement went back in the refusal's own transaction.
        SettleOutcome::Refused { reason } => {
            if outcome.is_operator_fault() {
                tracing::error!(call_id = %call.id, %reason,
                    "settlement not processed through no fault of the payer's (see the reason); the payment was handed back");
            } else {
                tracing::warn!(call_id = %call.id, %reason, "settlement refused");
            }
            // Repeats that waited on this settlement get the same answer.
            state.completions.notify(call.id).await;
            return Err(terms.unpaid(&wait::unpaid_code(refusal_error(&outcome))));
        }
        SettleOutcome::Settled {
            transaction: tx, ..
        } if recorded.acts() => {
            transaction = Some(tx.clone());
            let started = match recorded {
                PaidRecord::Moved { started } => started,
                _ => None,
            };
            pushed = Box::pin(fulfil::after_settled(state, product, &call, started)).await?;
        }
        SettleOutcome::Settled { .. } => {}
        SettleOutcome::Unknown { reason, .. } => {
            // Not a 402: the money may have moved. Reconciliation starts at once; this request
            // waits for its outcome like any repeat would.
            tracing::warn!(call_id = %call.id, %reason, "settlement outcome unknown; reconciling");
            state.reconcile.notify_one();
        }
    }
    // Pushed (or not to be): the queue counts it now.
    drop(settling);
    // The row's stored request is not read again: the wait holds only the call's receipt.
    let call = CallRef::from(call);
    let enqueued = Instant::now();
    // A call just pushed is not final yet: the first look waits for the worker's wake-up.
    let waited = wait::until_final_with(&state.db, waiter, call.id, deadline, !pushed).await?;
    state.metrics.job_latency(enqueued.elapsed());
    Ok(Ended::new(call, waited, false, transaction))
}

/// The error a refused outcome leaves on its call (as `ledger::record_outcome` writes it).
fn refusal_error(outcome: &SettleOutcome) -> Option<String> {
    match outcome {
        SettleOutcome::Refused { reason } if outcome.is_operator_fault() => {
            Some(format!("{}{reason}", codes::SETTLEMENT_UNAVAILABLE))
        }
        SettleOutcome::Refused { reason } => Some(codes::settlement_failed(reason)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::future_size::of4 as size4;

    /// A paid call waiting on its work holds the handler's future, which holds `serve`'s and
    /// `purchase`'s; every phase before and after the wait has a box of its own, freed when
    /// done. A phase awaited inline puts its whole future into every call in flight (a refused
    /// settlement's write alone is 5 KiB; issue 31).
    #[test]
    fn a_paid_call_waiting_on_its_work_holds_only_a_small_future() {
        let purchase = size4(super::purchase);
        let serve = size4(crate::paid::http::serve);
        println!("purchase {purchase} B, serve {serve} B");
        assert!(
            purchase <= 4 * 1024,
            "purchase's future is {purchase} bytes"
        );
        assert!(serve <= 4 * 1024, "serve's future is {serve} bytes");
    }
}
