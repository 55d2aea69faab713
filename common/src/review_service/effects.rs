//! What the owner of a request answers an event with: where the request now stands, and what
//! the caller is to do next (what the owner writes itself, such as the phone's cooldown mark
//! given back when a request ends with nothing texted, is not among them). The service decides; the caller (a job, a webhook, a route) acts.

use super::MessageKind;
use crate::{db::entities::review_message, jobs::ReviewStep, review::ReviewStatus};
use chrono::{DateTime, Utc};
use std::time::Duration;
use uuid::Uuid;

/// The answer to one event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    /// The request's state after the event (`None`: no such request).
    pub status: Option<ReviewStatus>,
    /// Whether the event changed anything; a duplicate, late or lost one does not.
    pub changed: bool,
    /// Send a message now.
    pub send: Option<SendOrder>,
    /// Ask the provider what became of a message whose send's outcome is unknown.
    pub look_up: Option<LookUp>,
    /// Push this job for this instant (the fast path; the sweeper catches it otherwise).
    pub schedule: Option<(ReviewStep, DateTime<Utc>)>,
}

impl Effects {
    pub(super) fn at(status: ReviewStatus) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }
}

/// Send one message. With `claimed`, the row of an earlier try the provider did not take is
/// already back at `attempting` for this run (send its stored text); without, write the
/// attempt first (`db::reviews::begin_attempt`).
#[derive(Clone, Debug, PartialEq)]
pub struct SendOrder {
    pub kind: MessageKind,
    /// The provider must drop the message if it cannot deliver within this (the window's end).
    pub validity: Duration,
    pub claimed: Option<review_message::Model>,
}

/// Find out whether a message went: the messages the provider sent to `to` since `since`, one
/// of them with exactly this `body`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookUp {
    pub message: Uuid,
    pub to: String,
    pub body: String,
    pub since: DateTime<Utc>,
}
