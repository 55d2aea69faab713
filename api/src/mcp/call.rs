//! One tool call: its arguments split into the request body and the tool's own arguments, the
//! same checks as the HTTP route (every problem named, before any charge), then the free sample or
//! the paid call (`pay`).

use super::{
    answer::{self, refusal},
    pay,
    tools::{Target, args},
};
use crate::{
    error::{ApiError, Problem, ProblemKind},
    extract::IdempotencyKey,
    products::{CoachingCall, ReviewPurchase},
    review,
    state::AppState,
};
use grove_common::{
    catalog::{self, Coach, CoachId, Mode},
    requests::{self, CoachingRequest},
    schema::Violation,
};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

/// A call's own arguments, taken out of its body.
struct Steering {
    sandbox: bool,
    key: Option<IdempotencyKey>,
    problems: Vec<Violation>,
}

/// Takes `sandbox` and `idempotency_key` out of `arguments`, noting what is wrong with them.
fn steering(arguments: &mut JsonObject) -> Steering {
    let mut problems = Vec::new();
    let sandbox = match arguments.remove(args::SANDBOX) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => {
            problems.push(Violation::new("/sandbox", "must be a boolean"));
            false
        }
    };
    let key = match arguments.remove(args::IDEMPOTENCY_KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match IdempotencyKey::parse(s.as_bytes()) {
            Ok(key) => Some(key),
            Err(ApiError::InvalidIdempotencyKey(why)) => {
                problems.push(Violation::new("/idempotency_key", why));
                None
            }
            Err(other) => {
                problems.push(Violation::new("/idempotency_key", other.to_string()));
                None
            }
        },
        Some(_) => {
            problems.push(Violation::new("/idempotency_key", "must be a string"));
            None
        }
    };
    Steering {
        sandbox,
        key,
        problems,
    }
}

/// Runs the call of a tool selling `target` with `arguments` and the payment in `_meta`.
pub async fn run(
    state: &AppState,
    tool: &str,
    target: Target,
    arguments: Option<JsonObject>,
    payment: Option<&Value>,
) -> CallToolResult {
    let mut arguments = arguments.unwrap_or_default();
    let steering = steering(&mut arguments);
    let result = match target {
        Target::Coaching(mode) => coach(state, tool, mode, arguments, steering, payment).await,
        Target::ReviewRequest => review(state, tool, arguments, steering, payment).await,
    };
    result.unwrap_or_else(|error| refusal(&error))
}

/// The coach named by `coach` (or the only one offering `mode`), or the problem with it.
fn chosen_coach(mode: &Mode, given: Option<Value>) -> Result<&'static Coach, Violation> {
    let offering: Vec<&'static Coach> = catalog::coaches_offering(mode.id).collect();
    let ids = || {
        offering
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match given {
        None | Some(Value::Null) => match offering.as_slice() {
            [only] => Ok(only),
            _ => Err(Violation::new(
                "/coach",
                format!("is required: one of {}", ids()),
            )),
        },
        Some(Value::String(id)) => CoachId::parse(&id)
            .ok()
            .map(catalog::coach)
            .filter(|c| c.offers(mode.id))
            .ok_or_else(|| {
                Violation::new(
                    "/coach",
                    format!("must be one of the coaches offering {}: {}", mode.id, ids()),
                )
            }),
        Some(_) => Err(Violation::new("/coach", "must be a string")),
    }
}

async fn coach(
    state: &AppState,
    tool: &str,
    mode: &'static Mode,
    mut arguments: JsonObject,
    steering: Steering,
    payment: Option<&Value>,
) -> Result<CallToolResult, ApiError> {
    let mut problems = steering.problems;
    let coach = chosen_coach(mode, arguments.remove(args::COACH))
        .map_err(|v| problems.push(v))
        .ok();
    if arguments.contains_key("mode") {
        problems.push(Violation::new(
            "/mode",
            "is not an argument of this tool: the tool's name is the mode",
        ));
    }
    // The body the HTTP route would get: the mode first, then the arguments left.
    let mut body = JsonObject::new();
    body.insert("mode".into(), Value::from(mode.id.as_str()));
    body.extend(arguments.into_iter().filter(|(k, _)| k != "mode"));
    let body = Value::Object(body);
    problems.extend(state.schemas.mode(mode.id).request.violations(&body));
    let coach = match coach {
        Some(coach) if problems.is_empty() => coach,
        _ => return Err(ApiError::Validation(problems)),
    };

    if steering.sandbox {
        let sample = state
            .published
            .coaching_sample(coach, mode)
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| {
                ApiError::internal(format!("no sandbox sample for {}/{}", coach.id, mode.id))
            })?;
        return Ok(answer::answer(sample, None));
    }
    CoachingCall::on_sale(state)?;
    let request: CoachingRequest =
        requests::parse(body).map_err(|v| ApiError::Validation(vec![v]))?;
    let product = CoachingCall::new(coach, mode, &request).map_err(ApiError::internal)?;
    // As the HTTP route: the product holds the request; the typed copy is not held through the
    // wait on the work.
    drop(request);
    Ok(pay::buy(state, tool, &product, payment, steering.key).await)
}

async fn review(
    state: &AppState,
    tool: &str,
    arguments: JsonObject,
    steering: Steering,
    payment: Option<&Value>,
) -> Result<CallToolResult, ApiError> {
    let body = Value::Object(arguments);
    let now = state.clock.now();
    let base = &state.config.public_base_url;
    // The tool's own arguments' problems join the body's, so one answer names them all.
    let mut problems: Vec<Problem> = steering
        .problems
        .into_iter()
        .map(|violation| Problem {
            kind: ProblemKind::Validation,
            violation,
        })
        .collect();
    problems.extend(review::problems(&state.schemas, &body, now, base));
    if !problems.is_empty() {
        return Err(ApiError::unprocessable(problems));
    }
    // The same checks, in the same order, as the HTTP route and its sandbox.
    let body = review::pre_payment_checks(&state.schemas, &state.db, body, now, base).await?;
    if steering.sandbox {
        let sample = review::sandbox::sample(&body, now, base).map_err(ApiError::Validation)?;
        return Ok(answer::answer(sample, None));
    }
    let product = ReviewPurchase::new(body).map_err(ApiError::internal)?;
    Ok(pay::buy(state, tool, &product, payment, steering.key).await)
}
