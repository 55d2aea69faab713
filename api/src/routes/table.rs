//! The public operations, listed once: path, method, operationId, summary, tag and whether the
//! call is paid. The router registers exactly these (`routes::router`) and the OpenAPI document
//! describes exactly these (`render::openapi`), so a route cannot exist in one and not the other.

use axum::{
    handler::Handler,
    routing::{MethodFilter, MethodRouter, on},
};
use grove_common::{
    catalog::{REVIEW_REQUEST, paths},
    config::Config,
};
use std::borrow::Cow;

/// One public operation; each has one entry in [`OPERATIONS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    ListAgents,
    ListActions,
    CallAgent,
    RequestReview,
    GetModeRequestSchema,
    GetModeResponseSchema,
    GetReviewRequestRequestSchema,
    GetReviewRequestResponseSchema,
    GetOpenApi,
    GetX402Discovery,
    GetAgentsGuide,
    GetActionsGuide,
    GetSkill,
    GetReceipt,
    GetReviewRequest,
    CancelReviewRequest,
    FollowReviewLink,
    ReceiveSmsStatus,
    ReceiveSmsInbound,
    GetHealth,
    GetReadiness,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    /// As OpenAPI keys a path item's operations.
    pub fn openapi_key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
        }
    }
}

/// A paid operation answers 402 until paid; a free one never asks for payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Free,
    Paid,
}

#[derive(Clone, Copy, Debug)]
enum Route {
    Fixed(&'static str),
    /// Named after the service (`/skills/{service}-x402/SKILL.md`).
    Skill,
}

#[derive(Debug)]
pub struct Operation {
    pub op: Op,
    pub method: Method,
    route: Route,
    pub operation_id: &'static str,
    pub summary: &'static str,
    pub tag: &'static str,
    pub access: Access,
}

impl Operation {
    /// The path template, as routed and as documented.
    pub fn path(&self, config: &Config) -> Cow<'static, str> {
        match self.route {
            Route::Fixed(p) => Cow::Borrowed(p),
            Route::Skill => Cow::Owned(config.skill_path()),
        }
    }

    /// `handler` on this operation's method. Generic over the router's state, so that the table
    /// (which `render::openapi` reads to document the routes) does not import `AppState`, whose
    /// module builds the rendered documents: that was an import circle.
    pub fn on<H, T, S>(&self, handler: H) -> MethodRouter<S>
    where
        H: Handler<T, S>,
        T: 'static,
        S: Clone + Send + Sync + 'static,
    {
        on(self.method.filter(), handler)
    }
}

const fn free(
    op: Op,
    method: Method,
    path: &'static str,
    operation_id: &'static str,
    summary: &'static str,
    tag: &'static str,
) -> Operation {
    Operation {
        op,
        method,
        route: Route::Fixed(path),
        operation_id,
        summary,
        tag,
        access: Access::Free,
    }
}

use Method::{Get, Post};

/// In the order the OpenAPI document lists them.
pub static OPERATIONS: [Operation; 21] = [
    free(
        Op::ListAgents,
        Get,
        paths::AGENTS,
        "listAgents",
        "Coaching catalog: coaches, modes, prices, schemas",
        "catalog",
    ),
    free(
        Op::ListActions,
        Get,
        paths::ACTIONS,
        "listActions",
        "Action catalog",
        "catalog",
    ),
    Operation {
        op: Op::CallAgent,
        method: Post,
        route: Route::Fixed(paths::AGENT_CALL),
        operation_id: "callAgent",
        summary: "Call a coach in one of its modes",
        tag: "paid",
        access: Access::Paid,
    },
    Operation {
        op: Op::RequestReview,
        method: Post,
        route: Route::Fixed(paths::REVIEW_REQUEST_CALL),
        operation_id: "requestReview",
        summary: REVIEW_REQUEST.summary,
        tag: "paid",
        access: Access::Paid,
    },
    free(
        Op::GetModeRequestSchema,
        Get,
        paths::MODE_REQUEST_SCHEMA,
        "getModeRequestSchema",
        "JSON Schema (2020-12) of a mode's request body",
        "schemas",
    ),
    free(
        Op::GetModeResponseSchema,
        Get,
        paths::MODE_RESPONSE_SCHEMA,
        "getModeResponseSchema",
        "JSON Schema (2020-12) of a mode's 200 response",
        "schemas",
    ),
    free(
        Op::GetReviewRequestRequestSchema,
        Get,
        paths::REVIEW_REQUEST_REQUEST_SCHEMA,
        "getReviewRequestRequestSchema",
        "JSON Schema of the review request body",
        "schemas",
    ),
    free(
        Op::GetReviewRequestResponseSchema,
        Get,
        paths::REVIEW_REQUEST_RESPONSE_SCHEMA,
        "getReviewRequestResponseSchema",
        "JSON Schema of the review request response",
        "schemas",
    ),
    free(
        Op::GetOpenApi,
        Get,
        paths::OPENAPI,
        "getOpenApi",
        "This document",
        "discovery",
    ),
    free(
        Op::GetX402Discovery,
        Get,
        paths::WELL_KNOWN_X402,
        "getX402Discovery",
        "x402 discovery: paid resources, ownership proofs, skill",
        "discovery",
    ),
    free(
        Op::GetAgentsGuide,
        Get,
        paths::AGENTS_GUIDE,
        "getAgentsGuide",
        "Guide to the coaching calls (HTML)",
        "docs",
    ),
    free(
        Op::GetActionsGuide,
        Get,
        paths::ACTIONS_GUIDE,
        "getActionsGuide",
        "Guide to the review request action (HTML)",
        "docs",
    ),
    Operation {
        op: Op::GetSkill,
        method: Get,
        route: Route::Skill,
        operation_id: "getSkill",
        summary: "Skill file an agent client can follow end to end",
        tag: "docs",
        access: Access::Free,
    },
    free(
        Op::GetReceipt,
        Get,
        paths::RECEIPT,
        "getReceipt",
        "The stored result of a paid call: {id, kind, status, created_at, payer, amount_usd, network, transaction, result}",
        "paid",
    ),
    free(
        Op::GetReviewRequest,
        Get,
        paths::REVIEW_REQUEST_STATUS,
        "getReviewRequest",
        "A tracked review request: state, masked phone, messages with status history, event log, next action",
        "actions",
    ),
    free(
        Op::CancelReviewRequest,
        Post,
        paths::REVIEW_REQUEST_CANCEL,
        "cancelReviewRequest",
        "Cancel a review request that has not finished",
        "actions",
    ),
    free(
        Op::FollowReviewLink,
        Get,
        paths::REVIEW_LINK,
        "followReviewLink",
        "Tracked review link: records the click and redirects to the business's review page",
        "actions",
    ),
    free(
        Op::ReceiveSmsStatus,
        Post,
        paths::SMS_STATUS_WEBHOOK,
        "receiveSmsStatus",
        "Twilio delivery reports (form post, X-Twilio-Signature verified)",
        "webhooks",
    ),
    free(
        Op::ReceiveSmsInbound,
        Post,
        paths::SMS_INBOUND_WEBHOOK,
        "receiveSmsInbound",
        "Twilio inbound messages: STOP/START/HELP and plain-words opt-outs (form post, X-Twilio-Signature verified)",
        "webhooks",
    ),
    free(
        Op::GetHealth,
        Get,
        paths::HEALTHZ,
        "getHealth",
        "Liveness",
        "operations",
    ),
    free(
        Op::GetReadiness,
        Get,
        paths::READYZ,
        "getReadiness",
        "Readiness of this process: its database and its queue answer (live consumers are listed, not required)",
        "operations",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_operation_is_listed_once_with_a_unique_id_and_route() {
        let config = Config::from_map(&Default::default()).expect("config");
        let mut ops = HashSet::new();
        let mut ids = HashSet::new();
        let mut routes = HashSet::new();
        for o in OPERATIONS.iter() {
            assert!(ops.insert(o.op), "{:?} listed twice", o.op);
            assert!(ids.insert(o.operation_id), "{} twice", o.operation_id);
            assert!(
                routes.insert((o.path(&config), o.method)),
                "{:?} {} twice",
                o.method,
                o.path(&config)
            );
        }
    }
}
