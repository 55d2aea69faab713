//! Deciding an unknown settlement: on chain when an RPC is configured, else (and then) by
//! settling the identical payload again. Nothing here reads our clock to decide: expiry is the
//! chain's time at a `safe` block (`x402::chain::lookup`), and a used nonce is a payment only
//! when the chain shows our transfer.

use super::{Decision, LOG_LOOKBACK};
use crate::{
    state::AppState,
    x402::{
        facilitator::SettleRequest,
        settle::{
            AuthorizationQuery, AuthorizationReader, AuthorizationState, SentTransaction,
            SettleOutcome, means_nonce_used,
        },
    },
};
use alloy_primitives::{Address, U256};
use grove_common::db::entities::payment;

pub(super) async fn decide(state: &AppState, p: &payment::Model) -> Decision {
    let mut doubt = None;
    let decision = decide_with(state, p, &mut doubt).await;
    // An operator reading the payment sees why the chain did not decide it, too.
    match (decision, doubt) {
        (Decision::Unknown { reason, sent }, Some(doubt)) => Decision::Unknown {
            reason: format!("{reason}; on chain: {doubt}"),
            sent,
        },
        (decision, _) => decision,
    }
}

async fn decide_with(state: &AppState, p: &payment::Model, doubt: &mut Option<String>) -> Decision {
    let query = query_of(state, p);
    if let (Some(chain), Some(query)) = (&state.chain, &query) {
        match chain.authorization(query).await {
            Ok(AuthorizationState::Paid { transaction }) => return Decision::Settled(transaction),
            // Canceled, used elsewhere, or unused at a `safe` block past `validBefore`: the
            // chain's own time decides expiry, never our clock.
            Ok(AuthorizationState::Void { reason }) => return Decision::Unsettled(reason),
            // Used at the head, not yet deep enough: nothing to re-post, ask again later.
            Ok(AuthorizationState::NotFinal { reason }) => return unknown(reason),
            // Not used yet: settling again below may settle it now.
            Ok(AuthorizationState::Unused) => {}
            // The endpoint lags or failed: we do not know. The re-post below may still settle it;
            // no refusal is decided from it.
            Err(e) => {
                tracing::warn!(error = %e, payment = %p.id, "authorization unreadable on chain");
                *doubt = Some(e);
            }
        }
    }
    let Some(request) = p
        .settle_request
        .clone()
        .and_then(|v| serde_json::from_value::<SettleRequest>(v).ok())
    else {
        return unknown("no settle request stored to re-post".into());
    };
    let sent = p.sent_tx.clone().map(|hash| SentTransaction {
        hash,
        raw: p.sent_tx_raw.clone(),
    });
    match state.settler.settle_again(&request, sent.as_ref()).await {
        SettleOutcome::Settled { transaction, .. } => Decision::Settled(transaction),
        // Used or canceled: only the chain tells which.
        SettleOutcome::Refused { reason } if means_nonce_used(&reason) => {
            nonce_used(state.chain.as_deref(), query.as_ref(), &reason).await
        }
        // A refusal of the re-post is no proof about the first attempt: the balance it
        // checks may be low because our transfer went through.
        SettleOutcome::Refused { reason } => unknown(format!("re-post refused: {reason}")),
        SettleOutcome::Unknown { reason, sent } => Decision::Unknown { reason, sent },
    }
}

/// A "nonce already used" answer: our transfer, a cancellation, or another authorization's use
/// of the nonce. Only the chain tells; without one it stays unknown (production always has one).
async fn nonce_used(
    chain: Option<&dyn AuthorizationReader>,
    query: Option<&AuthorizationQuery>,
    reason: &str,
) -> Decision {
    let (Some(chain), Some(query)) = (chain, query) else {
        return unknown(format!(
            "re-post refused ({reason}); without BASE_RPC_URL a used nonce cannot be told from a cancellation"
        ));
    };
    match chain.authorization(query).await {
        Ok(AuthorizationState::Paid { transaction }) => Decision::Settled(transaction),
        Ok(AuthorizationState::Void { reason }) => Decision::Unsettled(reason),
        Ok(AuthorizationState::NotFinal { reason }) => unknown(reason),
        Ok(AuthorizationState::Unused) => {
            unknown(format!("re-post refused ({reason}) but unused on chain"))
        }
        Err(e) => unknown(e),
    }
}

fn unknown(reason: String) -> Decision {
    Decision::Unknown { reason, sent: None }
}

/// The chain question for a stored payment: its authorizer, nonce and value, paid to the payee
/// it signed for.
pub(crate) fn query_of(state: &AppState, p: &payment::Model) -> Option<AuthorizationQuery> {
    let to = p
        .settle_request
        .as_ref()
        .and_then(|r| r.pointer("/paymentPayload/payload/authorization/to"))
        .and_then(serde_json::Value::as_str)
        .and_then(|to| to.parse::<Address>().ok());
    let query = (|| {
        Some(AuthorizationQuery {
            authorizer: p.payer.parse().ok()?,
            nonce: p.nonce.parse().ok()?,
            to: to?,
            value: U256::from_str_radix(&p.amount, 10).ok()?,
            since: u64::try_from((p.created_at - LOG_LOOKBACK).timestamp()).unwrap_or(0),
            // A payment recorded without one is never decided expired.
            valid_before: p
                .valid_before
                .map_or(u64::MAX, |s| u64::try_from(s).unwrap_or(0)),
            asked_at: state.clock.wall_unix(),
        })
    })();
    if query.is_none() {
        tracing::error!(payment = %p.id, "stored payer, nonce, amount or payee unreadable");
    }
    query
}
