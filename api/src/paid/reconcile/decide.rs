//! Deciding an unknown settlement: on chain when an RPC is configured, else (and then) by
//! settling the identical payload again.

use super::{Decision, LOG_LOOKBACK};
use crate::{
    state::AppState,
    x402::{
        facilitator::SettleRequest,
        settle::{
            AuthorizationQuery, AuthorizationState, SentTransaction, SettleOutcome,
            means_nonce_used,
        },
    },
};
use alloy_primitives::{Address, U256};
use grove_common::db::entities::payment;

pub(super) async fn decide(state: &AppState, p: &payment::Model) -> Decision {
    let now = state.clock.wall().timestamp();
    let expired = p.valid_before.is_some_and(|before| now > before);
    let query = query_of(p);
    if let (Some(chain), Some(query)) = (&state.chain, &query) {
        match chain.authorization(query).await {
            Ok(AuthorizationState::Paid { transaction }) => return Decision::Settled(transaction),
            Ok(AuthorizationState::Void { reason }) => return Decision::Unsettled(reason),
            // Unused after it expired: USDC will never accept it now.
            Ok(AuthorizationState::Unused) if expired => {
                return Decision::Unsettled("authorization_expired_unused".into());
            }
            // Not used yet: settling again below may settle it now.
            Ok(AuthorizationState::Unused) => {}
            Err(e) => {
                tracing::warn!(error = %e, payment = %p.id, "authorization unreadable on chain")
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
            match (&state.chain, &query) {
                (Some(chain), Some(query)) => match chain.authorization(query).await {
                    Ok(AuthorizationState::Paid { transaction }) => Decision::Settled(transaction),
                    Ok(AuthorizationState::Void { reason }) => Decision::Unsettled(reason),
                    Ok(AuthorizationState::Unused) => {
                        unknown(format!("re-post refused ({reason}) but unused on chain"))
                    }
                    Err(e) => unknown(e),
                },
                // Without a chain to ask, a used nonce is taken as our transfer (the payer could
                // have canceled instead: BASE_RPC_URL closes that); its transaction is the one
                // named earlier, if any.
                _ => Decision::Settled(sent.map(|s| s.hash).unwrap_or_default()),
            }
        }
        // A refusal of the re-post is no proof about the first attempt: the balance it
        // checks may be low because our transfer went through.
        SettleOutcome::Refused { reason } => unknown(format!("re-post refused: {reason}")),
        SettleOutcome::Unknown { reason, sent } => Decision::Unknown { reason, sent },
    }
}

fn unknown(reason: String) -> Decision {
    Decision::Unknown { reason, sent: None }
}

/// The chain question for a stored payment: its authorizer, nonce and value, paid to the payee
/// it signed for.
pub(crate) fn query_of(p: &payment::Model) -> Option<AuthorizationQuery> {
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
        })
    })();
    if query.is_none() {
        tracing::error!(payment = %p.id, "stored payer, nonce, amount or payee unreadable");
    }
    query
}
