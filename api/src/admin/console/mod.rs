//! The console (`/console` on the admin listener): one server-rendered page, no script and no
//! build step. Today's and the last 30 days' revenue by mode, calls by outcome, latency
//! percentiles, the queues' backlog, the payments needing attention with a resolve form, recent
//! opt-outs (with a form) and the latest audit entries. Operators sign in with their token
//! (`session`); every action goes through the same functions as the admin API, audited alike.

mod page;
mod session;
mod svg;

use super::{Operator, audit, auth, opt_outs, payments, report};
use crate::{error::ApiError, state::AppState};
use axum::{
    Form, Router,
    extract::{Path, Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Response},
    routing::{get, post},
};
use chrono::Duration;
use std::collections::HashMap;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(show))
        .route("/console/login", post(login))
        .route("/console/logout", post(logout))
        .route("/console/payments/{id}/resolve", post(resolve))
        .route("/console/opt-outs", post(opt_out))
}

/// HTML-escapes text for an element or an attribute value.
pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn signed_in(state: &AppState, headers: &HeaderMap) -> Option<Operator> {
    let value = session::read(headers)?;
    session::verify(
        &state.config.admin.tokens,
        value,
        state.clock.wall().timestamp(),
    )
}

/// A form posted from another site's page is refused: its `Origin` names another host than the
/// one it was posted to. (The cookie's `SameSite=Strict` already keeps it from being sent.)
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    origin_host.is_some() && origin_host == host
}

fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Html(body),
    )
        .into_response()
}

/// `GET /console`: the page, or the sign-in form.
async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let Some(operator) = signed_in(&state, &headers) else {
        return html(StatusCode::OK, page::login(None));
    };
    let flash = q.get("done").and_then(|d| page::Flash::done(d));
    dashboard(&state, &operator, flash, StatusCode::OK).await
}

async fn dashboard(
    state: &AppState,
    operator: &Operator,
    flash: Option<page::Flash>,
    status: StatusCode,
) -> Response {
    match gather(state).await {
        Ok(data) => html(status, page::dashboard(operator, flash.as_ref(), &data)),
        Err(e) => e.into_response(),
    }
}

/// Everything the page shows, read at once.
async fn gather(state: &AppState) -> Result<page::Data, ApiError> {
    let now = state.clock.wall();
    let month_start = report::window_start(now, 30);
    let today_start = report::window_start(now, 1);
    let month = report::summary(state, month_start).await?;
    let today = report::summary(state, today_start).await?;
    let queues = state.queue.stats().await.map_err(|e| {
        tracing::warn!(error = %e, "queue counts unavailable for the console");
    });
    let consumers = state.queue.consumers().await.ok().flatten();
    Ok(page::Data {
        now,
        days: (0..30)
            .map(|i| (month_start + Duration::days(i)).date_naive())
            .collect(),
        month,
        today,
        queues,
        consumers,
        attention: payments::needing_attention(state).await?,
        opt_outs: opt_outs::recent(&state.db, 10).await?,
        audit: audit::recent(&state.db, 10).await?,
    })
}

/// `POST /console/login` (form `token`): a cookie naming the token's operator.
async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if !same_origin(&headers) {
        return ApiError::Forbidden.into_response();
    }
    let presented = form.get("token").map(|t| t.trim()).unwrap_or_default();
    let tokens = &state.config.admin.tokens;
    let issued = auth::operator_of(tokens, presented)
        .and_then(|op| session::issue(tokens, &op, state.clock.wall().timestamp()));
    match issued {
        Some(value) => {
            let mut r = see_other("/console");
            if let Ok(v) = HeaderValue::from_str(&session::set_cookie(Some(&value))) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        None => {
            tracing::warn!("console sign-in refused: unknown token");
            html(
                StatusCode::UNAUTHORIZED,
                page::login(Some("That token is not one of ADMIN_TOKENS.")),
            )
        }
    }
}

/// `POST /console/logout`: the cookie is cleared.
async fn logout(headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return ApiError::Forbidden.into_response();
    }
    let mut r = see_other("/console");
    if let Ok(v) = HeaderValue::from_str(&session::set_cookie(None)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// The operator of a console form post, or the answer refusing it.
fn poster(state: &AppState, headers: &HeaderMap) -> Result<Operator, Box<Response>> {
    if !same_origin(headers) {
        return Err(Box::new(ApiError::Forbidden.into_response()));
    }
    signed_in(state, headers).ok_or_else(|| {
        Box::new(html(
            StatusCode::UNAUTHORIZED,
            page::login(Some("Sign in again: your session ended.")),
        ))
    })
}

/// An action's refusal, shown on the page above everything else, with the status it carries.
async fn refused(state: &AppState, operator: &Operator, e: ApiError) -> Response {
    let (status, text) = page::Flash::refusal(&e);
    dashboard(state, operator, Some(text), status).await
}

/// `POST /console/payments/{id}/resolve` (form `outcome`, `transaction`, `reason`).
async fn resolve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let operator = match poster(&state, &headers) {
        Ok(op) => op,
        Err(r) => return *r,
    };
    let field = |k: &str| form.get(k).map(String::as_str);
    let done = match payments::Order::parse(field("outcome"), field("transaction"), field("reason"))
    {
        Ok(order) => payments::resolve(&state, &operator, &id, order).await,
        Err(e) => Err(e),
    };
    match done {
        Ok(_) => see_other("/console?done=resolved#attention"),
        Err(e) => refused(&state, &operator, e).await,
    }
}

/// `POST /console/opt-outs` (form `phone`, `reason`, `action` = `add` | `remove`).
async fn opt_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let operator = match poster(&state, &headers) {
        Ok(op) => op,
        Err(r) => return *r,
    };
    let field = |k: &str| form.get(k).map(String::as_str);
    let remove = field("action") == Some("remove");
    let done = match opt_outs::Order::parse(field("phone"), field("reason")) {
        Ok(order) if remove => opt_outs::remove(&state, &operator, order).await,
        Ok(order) => opt_outs::add(&state, &operator, order).await,
        Err(e) => Err(e),
    };
    match done {
        Ok(_) if remove => see_other("/console?done=opt_out_removed#opt-outs"),
        Ok(_) => see_other("/console?done=opted_out#opt-outs"),
        Err(e) => refused(&state, &operator, e).await,
    }
}
