//! The model's health probe (`grove_common::health`): while the model's gate is open, one
//! process asks the configured model for a one-word answer, through the same client, endpoint,
//! key and model as a paid call, without retries.
//!
//! Why a real completion and not the free model list (`GET /models`): the list is served by
//! another path of the provider (often cached at its edge) and answers during exactly the
//! failures that fail paid calls (a model overloaded with 529s, 429s on completions, a quota
//! used up). A completion of a few tokens costs a fraction of a cent, and it runs only while the
//! gate is open, once per probe period for the whole deployment.

use super::{LlmError, LlmProvider, transport};
use crate::retry::Failure;
use futures::future::BoxFuture;
use grove_common::health::Probe;
use std::{sync::Arc, time::Duration};

/// What the probe asks. The loopback model of the tests answers it apart from paid calls.
pub const PROBE_PROMPT: &str = "Grove health probe: reply with the single word OK.";
/// Enough for "OK" on any model; reasoning models that spend it all still answer 200.
pub const PROBE_MAX_TOKENS: u32 = 16;
/// One attempt's deadline (the gate's own `PROBE_TIMEOUT` bounds it too).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(8);

/// The verdict on one probe attempt: a 2xx passes. So does a 4xx that shows a working server
/// refusing this small request for its own reasons, since paid calls are shaped differently
/// (they tell the next window); a missing model (404), our credentials (401, 403), the quota
/// and every retryable status (408, 409, 429, 5xx) or transport failure keep the gate open.
pub(super) fn verdict(attempt: Result<String, Failure<LlmError>>) -> Result<(), LlmError> {
    match attempt {
        Ok(_) => Ok(()),
        Err(Failure::Final(LlmError::BadRequest { status, .. })) if status != 404 => Ok(()),
        Err(Failure::Final(e) | Failure::Retry { error: e, .. }) => Err(e),
    }
}

/// One attempt: POST `body` to `url`.
pub(super) async fn attempt(
    to: &transport::Target<'_>,
    body: &serde_json::Value,
) -> Result<(), LlmError> {
    let tokens = u64::from(PROBE_MAX_TOKENS);
    verdict(transport::post_json(to, body, tokens, PROBE_TIMEOUT).await)
}

/// The gate's probe for a model client.
pub struct LlmProbe(pub Arc<dyn LlmProvider>);

impl Probe for LlmProbe {
    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.0.probe().await.map_err(|e| e.to_string()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn final_error(e: LlmError) -> Result<String, Failure<LlmError>> {
        Err(Failure::Final(e))
    }

    #[test]
    fn a_working_server_passes_and_an_unusable_one_does_not() {
        assert!(verdict(Ok("{}".into())).is_ok());
        let bad = |status| LlmError::BadRequest {
            status,
            message: String::new(),
        };
        assert!(
            verdict(final_error(bad(400))).is_ok(),
            "the server answered"
        );
        assert!(verdict(final_error(bad(404))).is_err(), "no such model");
        let auth = LlmError::Auth {
            status: 401,
            message: String::new(),
        };
        assert!(verdict(final_error(auth)).is_err());
        let down = Failure::Retry {
            error: LlmError::Upstream {
                status: None,
                message: "could not connect".into(),
            },
            retry_after: None,
        };
        assert!(verdict(Err(down)).is_err());
    }
}
