//! Payments that need an operator, and an operator's resolution of one.
//!
//! Needing attention: every payment whose settlement's outcome is unknown, those still being
//! reconciled on schedule and those set aside (no chain could decide them: `next_check_at` is
//! empty), and reorged ones (shown, not resolved here). A resolution walks four steps: read the operator's order (every problem listed), load
//! the payment, confirm the outcome on chain when one is configured (refused, and nothing
//! changed, when the chain says otherwise), then hand it to reconciliation's own writer
//! (`reconcile::conclude`), which moves the payment, the call and its scope exactly as a
//! reconciled outcome would. Every resolution asked for, refused or done, is audited.

use super::{Operator, audit};
use crate::{
    error::ApiError,
    paid::reconcile::{self, Decision},
    state::AppState,
    x402::settle::AuthorizationState,
};
use chrono::{DateTime, SecondsFormat, Utc};
use grove_common::{
    db::{
        calls,
        entities::{call, payment},
    },
    ledger::{Left, PaymentStatus},
    money::UsdcAmount,
    schema::Violation,
};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::{Value, json};
use std::collections::HashMap;
use uuid::Uuid;

/// A settled payment whose transfer left the chain after its call delivered (a reorg): the reorg
/// watch owns it and settles it again when the transfer is mined again; it is listed so that an
/// operator sees it.
const REORGED: PaymentStatus = PaymentStatus::Reorged;

/// The payment states an operator may have to look at; only `unknown` ones are resolved here.
pub const ATTENTION: [PaymentStatus; 2] = [PaymentStatus::Unknown, REORGED];

/// At most this many are listed (oldest first): more than that is an incident, not a list.
const LISTED: u64 = 500;

/// The payments needing attention, oldest first, each with its call when it can be read.
pub async fn needing_attention(
    state: &AppState,
) -> Result<Vec<(payment::Model, Option<call::Model>)>, DbErr> {
    let payments = payment::Entity::find()
        .filter(payment::Column::Status.is_in(ATTENTION))
        .order_by_asc(payment::Column::CreatedAt)
        .limit(LISTED)
        .all(&state.db)
        .await?;
    let ids: Vec<Uuid> = payments.iter().map(|p| p.call_id).collect();
    let mut calls: HashMap<Uuid, call::Model> = call::Entity::find()
        .filter(call::Column::Id.is_in(ids))
        .all(&state.db)
        .await?
        .into_iter()
        .map(|c| (c.id, c))
        .collect();
    Ok(payments
        .into_iter()
        .map(|p| {
            let c = calls.remove(&p.call_id);
            (p, c)
        })
        .collect())
}

/// Why a payment is listed: `set_aside` (waits for an operator), `reconciling` (checked again on
/// schedule), or its state.
pub fn attention(p: &payment::Model) -> &'static str {
    match p.status {
        PaymentStatus::Unknown if p.next_check_at.is_none() => "set_aside",
        PaymentStatus::Unknown => "reconciling",
        REORGED => "reorged",
        _ => "decided",
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub fn amount_usd(p: &payment::Model) -> Option<String> {
    p.amount
        .parse::<u64>()
        .ok()
        .map(|a| UsdcAmount::from_atomic(a).decimal_usd())
}

/// A payment as the admin API shows it.
pub fn view(p: &payment::Model, c: Option<&call::Model>) -> Value {
    json!({
        "id": p.id,
        "call_id": p.call_id,
        "receipt_id": c.map(|c| c.receipt_id.clone()),
        "kind": c.map(|c| c.kind),
        "mode": c.and_then(|c| c.mode),
        "call_status": c.map(|c| c.status),
        "payer": p.payer,
        "amount_usd": amount_usd(p),
        "network": p.network,
        "status": p.status,
        "attention": attention(p),
        "transaction": p.transaction,
        "followed_transaction": p.sent_tx,
        "error": p.error,
        "checks": p.checks,
        "next_check_at": p.next_check_at.map(rfc3339),
        "valid_before": p.valid_before.and_then(|s| DateTime::<Utc>::from_timestamp(s, 0)).map(rfc3339),
        "created_at": rfc3339(p.created_at),
        "updated_at": rfc3339(p.updated_at),
    })
}

/// What the audit keeps of a payment, before and after.
fn snapshot(p: &payment::Model, c: Option<&call::Model>) -> Value {
    json!({
        "status": p.status,
        "transaction": p.transaction,
        "error": p.error,
        "call_status": c.map(|c| c.status),
    })
}

/// The outcome an operator says the payment had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// The transfer happened, in this transaction (0x and 64 hex digits).
    Settled { transaction: String },
    /// It did not and never will.
    Unsettled,
}

/// An operator's order: the outcome, and why they know it.
#[derive(Clone, Debug)]
pub struct Order {
    pub resolution: Resolution,
    pub reason: String,
}

/// The longest reason kept.
const MAX_REASON: usize = 500;

impl Order {
    /// Reads an order from its three fields (JSON or the console's form), naming every problem.
    pub fn parse(
        outcome: Option<&str>,
        transaction: Option<&str>,
        reason: Option<&str>,
    ) -> Result<Self, ApiError> {
        let mut problems = Vec::new();
        let transaction = transaction.map(str::trim).filter(|t| !t.is_empty());
        let resolution = match outcome.map(str::trim) {
            Some("settled") => match transaction {
                Some(t) if is_tx_hash(t) => Some(Resolution::Settled {
                    transaction: t.to_ascii_lowercase(),
                }),
                Some(_) => {
                    problems.push(Violation::new(
                        "/transaction",
                        "must be a transaction hash: 0x and 64 hex digits",
                    ));
                    None
                }
                None => {
                    problems.push(Violation::new(
                        "/transaction",
                        "is required when the outcome is settled: the transaction that moved the money",
                    ));
                    None
                }
            },
            Some("unsettled") => {
                if transaction.is_some() {
                    problems.push(Violation::new(
                        "/transaction",
                        "only a settled outcome names a transaction",
                    ));
                }
                Some(Resolution::Unsettled)
            }
            Some(_) => {
                problems.push(Violation::new("/outcome", "must be settled or unsettled"));
                None
            }
            None => {
                problems.push(Violation::new(
                    "/outcome",
                    "is required: settled or unsettled",
                ));
                None
            }
        };
        let reason = reason.map(str::trim).unwrap_or_default();
        if reason.is_empty() {
            problems.push(Violation::new(
                "/reason",
                "is required: how you know (it goes into the audit)",
            ));
        } else if reason.chars().count() > MAX_REASON {
            problems.push(Violation::new(
                "/reason",
                format!("must be at most {MAX_REASON} characters"),
            ));
        }
        match resolution {
            Some(resolution) if problems.is_empty() => Ok(Self {
                resolution,
                reason: reason.to_owned(),
            }),
            _ => Err(ApiError::Validation(problems)),
        }
    }
}

fn is_tx_hash(t: &str) -> bool {
    t.len() == 66
        && (t.starts_with("0x") || t.starts_with("0X"))
        && t[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Resolves payment `id` as `order` says, for `operator`: the payment and its call afterwards,
/// and who confirmed the outcome (`chain`, or `operator` when no chain is configured).
pub async fn resolve(
    state: &AppState,
    operator: &Operator,
    id: &str,
    order: Order,
) -> Result<Value, ApiError> {
    let id = Uuid::parse_str(id).map_err(|_| ApiError::NotFound)?;
    let p = payment::Entity::find_by_id(id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::NotFound)?;
    let c = calls::load(&state.db, p.call_id).await?;
    let before = snapshot(&p, c.as_ref());
    let entry = |after: Value| audit::Entry {
        operator,
        action: "payment.resolve",
        subject: id.to_string(),
        reason: Some(order.reason.clone()),
        before: Some(before.clone()),
        after: Some(after),
    };
    let decided = match confirm(state, &p, &order).await {
        Ok(decided) => decided,
        Err(refusal) => {
            let mut asked = json!({"refused": refusal.to_string(), "outcome": asked(&order)});
            if let ApiError::ChainDisagrees(_) = refusal {
                asked["confirmed_by"] = json!("chain");
            }
            entry(asked).write(&state.db, state.clock.wall()).await?;
            return Err(refusal);
        }
    };
    let (decision, confirmed_by) = decided;
    let now = state.clock.wall();
    // The audit row goes in the ledger's transaction that records the outcome, so a decision
    // is never without its record; its `after` is what that write left, as the ledger tells.
    let audit = Box::new(|left: &Left| {
        let mut resolved = snapshot(&p, c.as_ref());
        resolved["confirmed_by"] = json!(confirmed_by);
        resolved["status"] = json!(left.payment);
        resolved["transaction"] = json!(left.transaction);
        resolved["error"] = json!(left.error);
        resolved["call_status"] = json!(left.call);
        entry(resolved).row(now)
    });
    let moved =
        reconcile::conclude_audited(state, p.call_id, &decision, "operator", now, Some(audit))
            .await?;
    let p = payment::Entity::find_by_id(id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::NotFound)?;
    let c = calls::load(&state.db, p.call_id).await?;
    if !moved {
        // Reconciliation decided it between our read and our write: nothing of ours was
        // written, and the audit says so.
        let refusal =
            ApiError::NotResolvable(format!("the payment was decided meanwhile ({})", p.status));
        entry(json!({"refused": refusal.to_string(), "outcome": asked(&order)}))
            .write(&state.db, now)
            .await?;
        return Err(refusal);
    }
    tracing::info!(payment = %id, operator = %operator.0, status = %p.status, confirmed_by, "payment resolved by an operator");
    Ok(json!({
        "payment": view(&p, c.as_ref()),
        "confirmed_by": confirmed_by,
    }))
}

fn asked(order: &Order) -> Value {
    match &order.resolution {
        Resolution::Settled { transaction } => {
            json!({"outcome": "settled", "transaction": transaction})
        }
        Resolution::Unsettled => json!({"outcome": "unsettled"}),
    }
}

/// The outcome to write, once confirmed: by the chain when one is configured (its word over the
/// operator's), else on the operator's word. A payment no longer unknown is not resolvable.
async fn confirm(
    state: &AppState,
    p: &payment::Model,
    order: &Order,
) -> Result<(Decision, &'static str), ApiError> {
    if p.status == REORGED {
        return Err(ApiError::NotResolvable(
            "a reorged payment is the reorg watch's: it settles again by itself once its transfer is mined again".into(),
        ));
    }
    if p.status != PaymentStatus::Unknown {
        return Err(ApiError::NotResolvable(format!(
            "the payment is {}, not waiting for an operator",
            p.status
        )));
    }
    let Some(chain) = &state.chain else {
        let decision = match &order.resolution {
            Resolution::Settled { transaction } => Decision::Settled(transaction.clone()),
            Resolution::Unsettled => Decision::Unsettled("resolved_unsettled_by_operator".into()),
        };
        return Ok((decision, "operator"));
    };
    let query = reconcile::query_of(state, p).ok_or_else(|| {
        ApiError::NotResolvable(
            "the payment's payer, nonce, amount or payee is unreadable, so the chain cannot confirm it"
                .into(),
        )
    })?;
    let seen = chain.authorization(&query).await.map_err(|e| {
        tracing::warn!(error = %e, payment = %p.id, "chain unreadable for an operator's resolution");
        ApiError::Unavailable("the chain could not be read, so nothing was changed: try again")
    })?;
    let disagrees = |s: String| Err(ApiError::ChainDisagrees(s));
    match (&order.resolution, seen) {
        (Resolution::Settled { transaction }, AuthorizationState::Paid { transaction: paid })
            if paid.eq_ignore_ascii_case(transaction) =>
        {
            Ok((Decision::Settled(paid), "chain"))
        }
        (Resolution::Settled { transaction }, AuthorizationState::Paid { transaction: paid }) => {
            disagrees(format!(
                "the authorization paid us in {paid}, not in {transaction}"
            ))
        }
        (Resolution::Settled { .. }, AuthorizationState::Void { reason }) => disagrees(format!(
            "the authorization can never pay ({reason})"
        )),
        (Resolution::Settled { .. }, AuthorizationState::Unused) => {
            disagrees("the authorization has not been used on chain".into())
        }
        (Resolution::Unsettled, AuthorizationState::Void { reason }) => {
            Ok((Decision::Unsettled(reason), "chain"))
        }
        // Expiry is the chain's word (its `safe` block stamped past validBefore comes back as
        // Void), never our clock's: until then the authorization may yet be settled.
        (Resolution::Unsettled, AuthorizationState::Unused) => disagrees(
            "the authorization is unused and the chain's safe block is not yet past its validBefore, so it may yet be settled: resolve it later".into(),
        ),
        (_, AuthorizationState::NotFinal { reason }) => disagrees(format!(
            "the chain's answer is not final yet ({reason}): try again in a few minutes"
        )),
        (Resolution::Unsettled, AuthorizationState::Paid { transaction }) => {
            disagrees(format!("the authorization paid us in {transaction}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(e: ApiError) -> Vec<String> {
        match e {
            ApiError::Validation(v) => v.into_iter().map(|v| v.path).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_order_names_every_problem() {
        let tx = format!("0x{}", "ab".repeat(32));
        let o = Order::parse(
            Some("settled"),
            Some(&tx.to_uppercase().replace("0X", "0x")),
            Some(" customer's bank statement "),
        )
        .expect("valid");
        assert_eq!(o.resolution, Resolution::Settled { transaction: tx });
        assert_eq!(o.reason, "customer's bank statement");
        assert_eq!(
            problems(Order::parse(None, None, None).expect_err("empty")),
            ["/outcome", "/reason"]
        );
        assert_eq!(
            problems(Order::parse(Some("settled"), Some("0x12"), Some("r")).expect_err("short")),
            ["/transaction"]
        );
        assert_eq!(
            problems(Order::parse(Some("settled"), None, Some("")).expect_err("no tx")),
            ["/transaction", "/reason"]
        );
        assert_eq!(
            problems(
                Order::parse(
                    Some("unsettled"),
                    Some(&format!("0x{}", "00".repeat(32))),
                    Some("r")
                )
                .expect_err("tx on unsettled")
            ),
            ["/transaction"]
        );
        assert_eq!(
            problems(Order::parse(Some("refund"), None, Some("r")).expect_err("bad outcome")),
            ["/outcome"]
        );
        assert_eq!(
            problems(
                Order::parse(Some("unsettled"), None, Some(&"x".repeat(501))).expect_err("long")
            ),
            ["/reason"]
        );
    }
}
