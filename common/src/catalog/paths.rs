//! Every public path, spelled once. A template (`{param}` segments) is what the router registers
//! and what the OpenAPI document lists; the builders fill one in for a link or a message.

/// The action's slug and id as literals, so the paths below can be built at compile time.
macro_rules! review_request_slug {
    () => {
        "review-request"
    };
}
macro_rules! review_request_id {
    () => {
        "review_request"
    };
}
pub(super) use {review_request_id, review_request_slug};

pub const AGENTS: &str = "/api/v1/agents";
pub const ACTIONS: &str = "/api/v1/actions";
pub const AGENT_CALL: &str = "/api/v1/agents/{agent_id}/call";
pub const REVIEW_REQUEST_CALL: &str = concat!("/api/v1/actions/", review_request_slug!(), "/call");
pub const MODE_REQUEST_SCHEMA: &str = "/api/v1/schemas/{mode}/request.json";
pub const MODE_RESPONSE_SCHEMA: &str = "/api/v1/schemas/{mode}/response.json";
pub const REVIEW_REQUEST_REQUEST_SCHEMA: &str = concat!(
    "/api/v1/schemas/actions/",
    review_request_id!(),
    "/request.json"
);
pub const REVIEW_REQUEST_RESPONSE_SCHEMA: &str = concat!(
    "/api/v1/schemas/actions/",
    review_request_id!(),
    "/response.json"
);
pub const OPENAPI: &str = "/api/v1/openapi.json";
pub const WELL_KNOWN_X402: &str = "/.well-known/x402";
pub const AGENTS_GUIDE: &str = "/docs/agents";
pub const ACTIONS_GUIDE: &str = "/docs/actions";
pub const RECEIPT: &str = "/api/v1/receipts/{id}";
pub const REVIEW_REQUEST_STATUS: &str =
    concat!("/api/v1/actions/", review_request_slug!(), "/requests/{id}");
pub const REVIEW_REQUEST_CANCEL: &str = concat!(
    "/api/v1/actions/",
    review_request_slug!(),
    "/requests/{id}/cancel"
);
pub const REVIEW_LINK: &str = "/r/{token}";
pub const SMS_STATUS_WEBHOOK: &str = "/webhooks/sms/status";
pub const SMS_INBOUND_WEBHOOK: &str = "/webhooks/sms/inbound";
pub const METRICS: &str = "/metrics";
/// The queues' counts as JSON, for the worker autoscaler.
pub const QUEUE_METRICS: &str = "/metrics/queues";
pub const HEALTHZ: &str = "/healthz";
pub const READYZ: &str = "/readyz";
/// The MCP endpoint (streamable HTTP, JSON-RPC): not an operation of the OpenAPI document.
pub const MCP: &str = "/mcp";

/// The skill file of a service named `service_name`.
pub fn skill(service_name: &str) -> String {
    format!("/skills/{service_name}-x402/SKILL.md")
}

/// `template` with its one `{param}` segment replaced by `value`.
pub fn fill(template: &str, value: &str) -> String {
    match (template.find('{'), template.find('}')) {
        (Some(open), Some(close)) if open < close => {
            format!("{}{value}{}", &template[..open], &template[close + 1..])
        }
        _ => template.to_owned(),
    }
}

pub fn agent_call(coach: super::CoachId) -> String {
    fill(AGENT_CALL, coach.as_str())
}

pub fn receipt(id: &str) -> String {
    fill(RECEIPT, id)
}

pub fn review_request(id: &str) -> String {
    fill(REVIEW_REQUEST_STATUS, id)
}

pub fn review_request_cancel(id: &str) -> String {
    fill(REVIEW_REQUEST_CANCEL, id)
}

pub fn review_link(token: &str) -> String {
    fill(REVIEW_LINK, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_fill_the_one_parameter() {
        assert_eq!(
            agent_call(super::super::CoachId::Mary),
            "/api/v1/agents/mary/call"
        );
        assert_eq!(receipt("ab12"), "/api/v1/receipts/ab12");
        assert_eq!(
            review_request_cancel("rr_x"),
            "/api/v1/actions/review-request/requests/rr_x/cancel"
        );
        assert_eq!(review_link("tok"), "/r/tok");
        assert_eq!(fill(OPENAPI, "x"), OPENAPI);
    }
}
