//! Who an operator is: the bearer token of an admin API request, matched against `ADMIN_TOKENS`
//! in constant time, names the operator the audit table records.

use crate::{error::ApiError, state::AppState};
use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};
use grove_common::config::AdminToken;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The operator a request was authenticated as: the name of the token it presented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator(pub String);

/// The name of the token `presented` is, if any. Both sides are hashed first, so the comparison
/// is of equal lengths and takes the same time whatever the secret's length or its first
/// differing byte; every token is compared, so the time does not say which one matched either.
pub fn operator_of(tokens: &[AdminToken], presented: &str) -> Option<Operator> {
    let presented = Sha256::digest(presented.as_bytes());
    let mut found = None;
    for token in tokens {
        let expected = Sha256::digest(token.secret.expose().as_bytes());
        if bool::from(presented.ct_eq(&expected)) {
            found = Some(Operator(token.name.clone()));
        }
    }
    found
}

/// The admin API's gate: `Authorization: Bearer <token>` naming an operator, who is then in the
/// request's extensions for the handlers (and the audit). 401 otherwise, whatever the path.
pub async fn require_bearer(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    match presented.and_then(|t| operator_of(&state.config.admin.tokens, t)) {
        Some(operator) => {
            request.extensions_mut().insert(operator);
            next.run(request).await
        }
        None => {
            tracing::warn!(
                presented = presented.is_some(),
                "admin request refused: no or unknown operator token"
            );
            ApiError::Unauthorized.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grove_common::config::Secret;

    fn tokens() -> Vec<AdminToken> {
        ["alice", "bob"]
            .iter()
            .map(|n| AdminToken {
                name: (*n).into(),
                secret: Secret::new(format!("{n}-0123456789abcdef")),
            })
            .collect()
    }

    #[test]
    fn a_token_names_its_operator_and_nothing_else_does() {
        let t = tokens();
        assert_eq!(
            operator_of(&t, "bob-0123456789abcdef"),
            Some(Operator("bob".into()))
        );
        for wrong in [
            "",
            "bob",
            "bob-0123456789abcde",
            "bob-0123456789abcdefg",
            "BOB-0123456789ABCDEF",
        ] {
            assert_eq!(operator_of(&t, wrong), None, "{wrong:?}");
        }
        assert_eq!(operator_of(&[], "bob-0123456789abcdef"), None);
    }
}
