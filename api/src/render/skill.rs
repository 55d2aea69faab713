//! The skill file an agent client follows end to end (`/skills/{service}-x402/SKILL.md`): a
//! table of contents, then discovery, the sandbox, the call, paying with an official client or
//! by hand, safe retries, the review request and errors. Derived from the catalog.

use super::{
    clients, number_word,
    pages::{EXAMPLE_ACTION_BODY, EXAMPLE_COACH, EXAMPLE_COACHING_BODY},
};
use grove_common::{
    catalog::{self, COACHES, MODES, REVIEW_REQUEST, paths},
    config::Config,
};
use std::fmt::Write;

/// GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

pub fn render(config: &Config) -> String {
    let base = &config.public_base_url;
    let mut modes = String::new();
    for c in COACHES.iter() {
        let list: Vec<String> = c
            .offered_modes()
            .map(|(m, _)| format!("`{}` {}", m.id, m.price()))
            .collect();
        let _ = writeln!(modes, "- `{}` ({}): {}", c.id, c.domain, list.join(", "));
    }
    let call = format!("{base}{}", paths::agent_call(EXAMPLE_COACH));
    let action_call = format!("{base}{}", paths::REVIEW_REQUEST_CALL);
    let (min, max) = catalog::coaching_price_range();
    let action_price = REVIEW_REQUEST.price;
    let (ts_install, ts) = clients::typescript(config.network, &call, EXAMPLE_COACHING_BODY);
    let (py_install, py) = clients::python(config.network, &call, EXAMPLE_COACHING_BODY);
    let sections: Vec<(&str, String)> = vec![
        (
            "1. Discover (free)",
            format!(
                "- `GET {base}{agents}`: coaches, their modes, prices, recommended context, schema paths.
- `GET {base}{actions}`: the review-request action.
- `GET {base}{request_schema}` and `.../response.json`: JSON Schema 2020-12. Validate before you pay.
- `GET {base}{openapi}`, `GET {base}{well_known}`.

Coaches and modes:
{modes}",
                agents = paths::AGENTS,
                actions = paths::ACTIONS,
                request_schema = paths::MODE_REQUEST_SCHEMA,
                openapi = paths::OPENAPI,
                well_known = paths::WELL_KNOWN_X402,
            ),
        ),
        (
            "2. Try it free (sandbox)",
            format!(
                "Send any call with header `{sandbox}: 1` (or `?sandbox=1`). The body gets exactly the checks of a paid call (same statuses, codes and details); when it passes you get a schema-valid sample with `\"sandbox\": true` (for a review request, built from your body: names, tracked link, quiet-hours send time). Nothing is charged, sent or stored.\n",
                sandbox = config.sandbox_header(),
            ),
        ),
        (
            "3. Call a coach",
            format!(
                "`POST {base}{agent_call}` with `content-type: application/json` and
`{{\"mode\": \"<mode>\", \"messages\": [{{\"role\": \"user\", \"content\": \"...\"}}], \"context\": {{...}}}}`.
Give the mode's `recommended_context` fields when you have them: answers with real numbers are sharper and more confident; missing fields are listed in `context_gaps`.
",
                agent_call = paths::AGENT_CALL,
            ),
        ),
        (
            "4. Pay with an official x402 client",
            format!(
                "The official clients run the whole 402 -> sign -> retry flow: they read the requirements, sign a USDC authorization for exactly the amount asked and retry with `PAYMENT-SIGNATURE`. The paying key's account needs {funds}. Keep an `Idempotency-Key` on the request so a retry never buys twice.

TypeScript, npm `@x402/fetch`:

```sh
{ts_install}
```

```ts
{ts}
```

Python, PyPI `x402`:

```sh
{py_install}
```

```python
{py}
```

The same works for the review request: post its body to `{action_call}`, e.g. `{action}`.
",
                action = EXAMPLE_ACTION_BODY,
                funds = super::usdc_on(config.network),
            ),
        ),
        (
            "5. Pay by hand (raw x402, curl)",
            format!(
                "1. The unpaid call returns `402`. Decode the `PAYMENT-REQUIRED` header (base64 JSON, x402 v2) or read the body (x402 v1). Take `accepts[0]`: `scheme` \"exact\", `network` \"{net}\", `asset` {usdc} (USDC), `amount` in atomic units (6 decimals: \"{min_atomic}\" = {min}), `payTo`.
2. Sign an EIP-3009 `TransferWithAuthorization(from, to=payTo, value=amount, validAfter<now, validBefore>=now+60, nonce=32 random bytes)` with EIP-712 domain `{{name: \"{dname}\", version: \"{dver}\", chainId: {chain}, verifyingContract: {usdc}}}`. Write every integer as a plain decimal string without leading zeros (\"180000\", not \"0180000\" or \"0x2bf20\").
3. Retry the identical request with header `PAYMENT-SIGNATURE: base64({{\"x402Version\":2,\"accepted\":<accepts[0] unchanged>,\"payload\":{{\"signature\":\"0x...\",\"authorization\":{{...}}}}}})` (or `X-PAYMENT` with `{{\"x402Version\":1,\"scheme\":\"exact\",\"network\":\"{v1}\",\"payload\":...}}`).
4. A 200 carries the result and `PAYMENT-RESPONSE` (settlement: success, transaction, network, payer).

```sh
curl -si -X POST {call} -H 'content-type: application/json' -d '{body}'
# HTTP/1.1 402 Payment Required, with a payment-required header
curl -si -X POST {call} -H 'content-type: application/json' \\
  -H \"PAYMENT-SIGNATURE: $SIGNED_PAYLOAD_BASE64\" -H 'Idempotency-Key: my-unique-key-1' -d '{body}'
```
",
                net = config.network.caip2(),
                v1 = config.network.v1_name(),
                usdc = config.network.usdc_address(),
                dname = config.network.usdc_domain_name(),
                dver = config.network.usdc_domain_version(),
                chain = config.network.chain_id(),
                body = EXAMPLE_COACHING_BODY,
                min_atomic = min.atomic(),
            ),
        ),
        (
            "6. Retry safely",
            format!(
                "- Send `Idempotency-Key: <unique>` (1-255 printable ASCII) on every paid call. The same key with the same body replays the stored result for 24 h with `Idempotent-Replay: true` and no new charge; without a key, an identical body from the same payer replays for 10 minutes.
- A replay still needs a payment header that proves the payer; nothing is settled for it.
- `409 request_in_progress`: the first attempt is still running; wait `Retry-After` seconds and retry.
- `502 upstream_failed` / `504 still_running`: you were charged once; the body has a `receipt`. Poll `GET {base}{receipt}` or retry the identical request for free.
",
                receipt = paths::RECEIPT,
            ),
        ),
        (
            "7. Review request (SMS)",
            format!(
                "`POST {action_call}`, {action_price}. You must hold the customer's consent (method, time, source). `customer.phone` is a `+1` number (`^\\+1[2-9][0-9]{{2}}[2-9][0-9]{{6}}$`). Refusals (invalid consent, a link in the template, opted out, cooldown) come before any payment. The response is a tracked request (`id` starts with `rr_`); follow it at `links.self`.
"
            ),
        ),
        (
            "8. Errors",
            "Non-402 errors: `{\"error\":{\"code\",\"message\",\"details\":[{\"path\",\"message\",\"code\"}],\"request_id\"}}`. On the review request, a 422 with one problem keeps the code clients know (`validation_failed`, or `consent_invalid` for consent); more than one problem answers `invalid_request`. Every detail carries its own `code` (`consent_invalid`, `consent_in_future`, `consent_too_old`, `send_at_out_of_range`, `phone_not_us`, `invalid_time_zone`, `review_url_invalid`, `link_shortener`, `link_not_allowed`, `lookalike_characters`, `control_characters`, `template_invalid`, `template_too_long`, `validation_failed`): fix every entry before retrying a 422. `503` carries `Retry-After`; `503 model_unavailable` / `sms_unavailable` come instead of a price while the provider that work needs is down, and `503 over_capacity` while the coaching calls ahead would not leave a new one room to finish in time, or the paid calls ahead wait for the database (nothing charged: wait `Retry-After` and ask again; a paid request's repeat is never refused, and a call paid before an outage is finished by the server once the provider is back, its receipt showing the result). A 405 lists the route's methods in `Allow`.\n".to_owned(),
        ),
        (
            "9. As MCP tools (x402 over MCP)",
            super::mcp_guide::skill_section(config),
        ),
    ];
    let mut out = format!(
        "---
name: {svc}-x402
description: Buy growth coaching ({coaches} coaches, {modes} modes, {min}-{max} a call) and SMS review requests ({action_price}) from {svc}, paying per call in {funds} with x402.
---

# {svc}: pay-per-call coaching and review requests over x402

Base URL: {base}. Everything below is JSON over HTTPS; prices are per call. The same calls are MCP tools at {base}{mcp} (section 9).

## Contents
",
        svc = config.service_name,
        mcp = paths::MCP,
        funds = super::usdc_on(config.network),
        coaches = number_word(COACHES.len()),
        modes = number_word(MODES.len()),
    );
    for (heading, _) in &sections {
        let _ = writeln!(out, "- [{heading}](#{})", anchor(heading));
    }
    for (heading, body) in &sections {
        let _ = write!(out, "\n## {heading}\n{body}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::anchor;

    #[test]
    fn anchors_follow_github_headings() {
        assert_eq!(anchor("1. Discover (free)"), "1-discover-free");
        assert_eq!(
            anchor("5. Pay by hand (raw x402, curl)"),
            "5-pay-by-hand-raw-x402-curl"
        );
    }
}
