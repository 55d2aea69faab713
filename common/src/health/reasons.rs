//! The failure reasons a coaching call stores (`calls.error`) when its model could not serve it:
//! the worker writes them, and the api re-runs such a call, free, once the model's gate has
//! closed again. A call that failed for its own sake (answers that kept failing validation, a
//! refusal, a request the model rejected) is not among them: its client's identical retry is
//! free, and an automatic re-run would only pay for the same failure again.

/// `model_unavailable:<status>`, `model_unavailable:network` (5xx, 429, 408, 409 or a transport
/// failure after the retries), or `model_unavailable:gate_open` (not tried: the gate was open).
pub const UNAVAILABLE: &str = "model_unavailable";
/// The model did not answer within the call's deadline.
pub const DEADLINE: &str = "model_deadline_exceeded";
/// The provider account is out of quota or credit.
pub const QUOTA: &str = "model_quota_exhausted";
/// `model_auth_failed:<status>`: the provider refused our key.
pub const AUTH: &str = "model_auth_failed";
/// The configured model does not exist at the provider.
pub const MODEL_MISSING: &str = "model_rejected_request:404";
/// Not tried: the model's gate was open when the run came to ask it.
pub const GATE_OPEN: &str = "model_unavailable:gate_open";

/// Whether a failed call's stored reason says its model could not serve it.
pub fn is_outage(reason: &str) -> bool {
    let prefixed = |code: &str| {
        reason
            .strip_prefix(code)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
    };
    prefixed(UNAVAILABLE)
        || prefixed(DEADLINE)
        || prefixed(QUOTA)
        || prefixed(AUTH)
        || reason == MODEL_MISSING
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_told_from_failures_of_the_call_itself() {
        for outage in [
            "model_unavailable:503",
            "model_unavailable:network",
            GATE_OPEN,
            DEADLINE,
            QUOTA,
            "model_auth_failed:401",
            MODEL_MISSING,
        ] {
            assert!(is_outage(outage), "{outage}");
        }
        for own in [
            "model answer still invalid after 3 attempts: the answer was not valid JSON",
            "model_refused",
            "model_output_truncated",
            "model_rejected_request:400",
            "model_unavailable_soon",
            "could not record the paid request",
        ] {
            assert!(!is_outage(own), "{own}");
        }
    }
}
