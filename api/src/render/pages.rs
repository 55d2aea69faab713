//! The human guides (`/docs/agents`, `/docs/actions`: plain HTML, no JavaScript) and the skill
//! file an agent client follows (`/skills/{service}-x402/SKILL.md`), derived from the catalog.

use grove_common::{
    catalog::{COACHES, MODES, REVIEW_REQUEST},
    config::Config,
    x402,
};
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}\
         pre{{background:#f4f4f4;padding:.75rem;overflow-x:auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}}</style>\
         </head><body>\n<h1>{t}</h1>\n{body}\n</body></html>\n",
        t = esc(title)
    )
}

fn payment_flow(config: &Config, url: &str, body: &str) -> String {
    let base = &config.public_base_url;
    format!(
        "<h2 id=\"pay\">Paying: 402, sign, retry</h2>\n\
<ol><li>Send the request without payment. You get <code>402</code>: the requirements are base64 JSON in the \
<code>PAYMENT-REQUIRED</code> header (x402 v2) and plain JSON in the body (x402 v1).</li>\n\
<li>Sign a USDC <code>TransferWithAuthorization</code> (EIP-3009) for exactly <code>amount</code> atomic units to \
<code>payTo</code>, under the EIP-712 domain <code>{{name: \"{name}\", version: \"{version}\", chainId: {chain}, verifyingContract: {usdc}}}</code>.</li>\n\
<li>Retry the identical request with the payment in <code>PAYMENT-SIGNATURE</code> (v2) or <code>X-PAYMENT</code> (v1). \
The 200 carries <code>PAYMENT-RESPONSE</code> (or <code>X-PAYMENT-RESPONSE</code>) with the settlement.</li>\n\
<li>Retrying the same request (same payer and body, or the same <code>Idempotency-Key</code>) replays the stored result \
with <code>Idempotent-Replay: true</code> and charges nothing.</li></ol>\n\
<pre>curl -si -X POST {base}{url} \\\n  -H 'content-type: application/json' \\\n  -d '{body}'\n\
# HTTP/1.1 402 Payment Required\n# payment-required: eyJ4NDAyVmVyc2lvbiI6Mi...\n\n\
echo \"$PAYMENT_REQUIRED\" | base64 -d | jq .accepts[0]   # amount, payTo, asset, network\n\n\
curl -si -X POST {base}{url} \\\n  -H 'content-type: application/json' \\\n  -H \"PAYMENT-SIGNATURE: $SIGNED_PAYLOAD_BASE64\" \\\n  -H 'Idempotency-Key: my-unique-key-1' \\\n  -d '{body}'</pre>\n",
        name = x402::USDC_DOMAIN_NAME,
        version = x402::USDC_DOMAIN_VERSION,
        chain = x402::CHAIN_ID,
        usdc = x402::USDC_ADDRESS,
        body = esc(body),
    )
}

const EXAMPLE_COACHING_BODY: &str = r#"{"mode":"diagnose_growth","messages":[{"role":"user","content":"We run a 4-person bookkeeping firm. 30 leads a month, we close 5. How do we grow?"}],"context":{"metrics":{"leads_per_month":30,"close_rate_pct":16.7}}}"#;

pub fn agents_guide(config: &Config) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<p>{svc} sells pay-per-call growth coaching to AI agents. Post a conversation and optional business context \
to a coach in one of its modes; the answer is a strict JSON envelope (reply, one-constraint diagnosis, numbers, \
actions, caveats and a typed deliverable). Machine-readable: <a href=\"/api/v1/agents\">catalog</a>, \
<a href=\"/api/v1/openapi.json\">OpenAPI</a>, <a href=\"{skill}\">skill file</a>.</p>",
        svc = esc(&config.service_name),
        skill = esc(&config.skill_path()),
    );
    b.push_str(
        "<h2>Coaches</h2>\n<table><tr><th>coach</th><th>domain</th><th>modes (price)</th></tr>\n",
    );
    for c in COACHES.iter() {
        let modes: Vec<String> = c
            .offered_modes()
            .map(|(m, cm)| format!("<b>{}</b> ({}): {}", m.id, m.price(), esc(cm.summary)))
            .collect();
        let _ = writeln!(
            b,
            "<tr><td><b>{}</b> <code>{}</code><br>{}</td><td>{}</td><td>{}</td></tr>",
            esc(c.name),
            c.id,
            esc(c.tagline),
            esc(c.domain),
            modes.join("<br>")
        );
    }
    b.push_str("</table>\n<h2>Modes</h2>\n<table><tr><th>mode</th><th>tier</th><th>price</th><th>recommended context</th><th>schemas</th></tr>\n");
    for m in MODES.iter() {
        let _ = writeln!(
            b,
            "<tr><td><code>{id}</code><br>{s}</td><td>{t}</td><td>{p}</td><td>{rc}</td><td><a href=\"{rq}\">request</a> · <a href=\"{rs}\">response</a></td></tr>",
            id = m.id,
            s = esc(m.summary),
            t = m.tier.as_str(),
            p = m.price(),
            rc = m.recommended_context.join(", "),
            rq = m.request_schema_path(),
            rs = m.response_schema_path()
        );
    }
    b.push_str("</table>\n");
    let _ = write!(
        b,
        "<h2 id=\"sandbox\">Sandbox (free)</h2>\n<p>Add <code>{h}: 1</code> (or <code>?sandbox=1</code>) to any call. \
The request is validated as usual; the answer is a fixed, schema-valid sample for the mode with <code>sandbox: true</code>, \
zero usage and the receipt <code>{{\"id\":\"sandbox\"}}</code>. No model runs and nothing is charged.</p>\n\
<pre>curl -s -X POST {base}/api/v1/agents/mary/call \\\n  -H 'content-type: application/json' -H '{h}: 1' \\\n  -d '{body}'</pre>\n",
        h = esc(&config.sandbox_header()),
        base = config.public_base_url,
        body = esc(EXAMPLE_COACHING_BODY),
    );
    b.push_str(&payment_flow(
        config,
        "/api/v1/agents/mary/call",
        EXAMPLE_COACHING_BODY,
    ));
    b.push_str(ERRORS_HTML);
    page(&format!("{}: coaching calls", config.service_name), &b)
}

const EXAMPLE_ACTION_BODY: &str = r#"{"business":{"name":"Harbor Physio","review_url":"https://g.page/r/harbor-physio/review","timezone":"America/New_York"},"customer":{"phone":"+13055550142","first_name":"Dana"},"consent":{"method":"web_form_checkbox","captured_at":"2026-10-02T15:04:05-04:00","source":"Intake form, SMS consent checkbox"}}"#;

pub fn actions_guide(config: &Config) -> String {
    let a = &REVIEW_REQUEST;
    let mut b = String::new();
    let _ = write!(
        b,
        "<p><b>{name}</b> ({price}): {summary}</p>\n\
<p>Endpoint <code>POST {base}{path}</code>; schemas: <a href=\"{rq}\">request</a>, <a href=\"{rs}\">response</a>; \
catalog: <a href=\"/api/v1/actions\">/api/v1/actions</a>.</p>\n\
<h2>Rules</h2><ul>\
<li>Consent is required: method, capture time (not in the future, not older than 18 months) and source. \
Requests without valid consent, to opted-out phones, or inside the cooldown you set are refused <em>before</em> any payment.</li>\
<li>Messages go out only between 08:00 and 21:00 in the recipient's local time (narrower where state rules require); \
outside that window the send waits for the next opening.</li>\
<li>Every message names the business and ends with an opt-out sentence; replies STOP, UNSUBSCRIBE and the like end all \
pending requests to that phone.</li>\
<li>One follow-up at most, skipped when the link was clicked, the request cancelled, or the phone opted out.</li></ul>\n\
<h2 id=\"sandbox\">Sandbox (free)</h2>\n<p>Add <code>{h}: 1</code> (or <code>?sandbox=1</code>): the request is validated and a \
sample tracked request with <code>sandbox: true</code> comes back. No SMS, no payment, nothing stored.</p>\n\
<pre>curl -s -X POST {base}{path} \\\n  -H 'content-type: application/json' -H '{h}: 1' \\\n  -d '{body}'</pre>\n",
        name = esc(a.name),
        price = a.price,
        summary = esc(a.summary),
        base = config.public_base_url,
        path = a.call_path(),
        rq = a.request_schema_path(),
        rs = a.response_schema_path(),
        h = esc(&config.sandbox_header()),
        body = esc(EXAMPLE_ACTION_BODY),
    );
    b.push_str(&payment_flow(config, &a.call_path(), EXAMPLE_ACTION_BODY));
    b.push_str(ERRORS_HTML);
    page(
        &format!("{}: review request action", config.service_name),
        &b,
    )
}

const ERRORS_HTML: &str = "<h2>Errors</h2>\n<p>Every error except 402 has the body \
<code>{\"error\":{\"code\",\"message\",\"details\":[{\"path\",\"message\"}],\"request_id\"}}</code>; \
<code>details</code> lists every problem with a JSON pointer. 400 invalid_json, 404 unknown_agent / not_found, \
413 payload_too_large (over 2 MiB), 415 unsupported_media_type, 422 validation_failed / mode_not_offered / \
invalid_idempotency_key / idempotency_key_reused, 409 request_in_progress, 503 unavailable / payments_disabled \
(nothing charged), 502 upstream_failed and 504 still_running (with a receipt; a retry is free).</p>\n";

pub fn skill(config: &Config) -> String {
    let base = &config.public_base_url;
    let mut modes = String::new();
    for c in COACHES.iter() {
        let list: Vec<String> = c
            .offered_modes()
            .map(|(m, _)| format!("`{}` {}", m.id, m.price()))
            .collect();
        let _ = writeln!(modes, "- `{}` ({}): {}", c.id, c.domain, list.join(", "));
    }
    format!(
        r#"---
name: {svc}-x402
description: Buy growth coaching (seven coaches, sixteen modes, $0.18-$0.45 a call) and SMS review requests ($0.12) from {svc}, paying per call in USDC on Base with x402.
---

# {svc}: pay-per-call coaching and review requests over x402

Base URL: {base}. Everything below is JSON over HTTPS; prices are per call.

## 1. Discover (free)
- `GET {base}/api/v1/agents`: coaches, their modes, prices, recommended context, schema paths.
- `GET {base}/api/v1/actions`: the review-request action.
- `GET {base}/api/v1/schemas/{{mode}}/request.json` and `.../response.json`: JSON Schema 2020-12. Validate before you pay.
- `GET {base}/api/v1/openapi.json`, `GET {base}/.well-known/x402`.

Coaches and modes:
{modes}
## 2. Try it free (sandbox)
Send any call with header `{sandbox}: 1` (or `?sandbox=1`). You get a fixed schema-valid sample with `"sandbox": true`. Nothing is charged.

## 3. Call a coach
`POST {base}/api/v1/agents/{{agent_id}}/call` with `content-type: application/json` and
`{{"mode": "<mode>", "messages": [{{"role": "user", "content": "..."}}], "context": {{...}}}}`.
Give the mode's `recommended_context` fields when you have them: answers with real numbers are sharper and more confident; missing fields are listed in `context_gaps`.

## 4. Pay with x402
1. The unpaid call returns `402`. Decode the `PAYMENT-REQUIRED` header (base64 JSON, x402 v2) or read the body (x402 v1). Take `accepts[0]`: `scheme` "exact", `network` "{net}", `asset` {usdc} (USDC), `amount` in atomic units (6 decimals: "180000" = $0.18), `payTo`.
2. Sign an EIP-3009 `TransferWithAuthorization(from, to=payTo, value=amount, validAfter<now, validBefore>=now+60, nonce=32 random bytes)` with EIP-712 domain `{{name: "{dname}", version: "{dver}", chainId: {chain}, verifyingContract: {usdc}}}`. Write every integer as a plain decimal string without leading zeros ("180000", not "0180000" or "0x2bf20").
3. Retry the identical request with header `PAYMENT-SIGNATURE: base64({{"x402Version":2,"accepted":<accepts[0] unchanged>,"payload":{{"signature":"0x...","authorization":{{...}}}}}})` (or `X-PAYMENT` with `{{"x402Version":1,"scheme":"exact","network":"base","payload":...}}`).
4. A 200 carries the result and `PAYMENT-RESPONSE` (settlement: success, transaction, network, payer).

## 5. Retry safely
- Send `Idempotency-Key: <unique>` (1-255 printable ASCII) on every paid call. The same key with the same body replays the stored result for 24 h with `Idempotent-Replay: true` and no new charge; without a key, an identical body from the same payer replays for 10 minutes.
- A replay still needs a payment header that proves the payer; nothing is settled for it.
- `409 request_in_progress`: the first attempt is still running; wait `Retry-After` seconds and retry.
- `502 upstream_failed` / `504 still_running`: you were charged once; the body has a `receipt`. Poll `GET {base}/api/v1/receipts/{{id}}` or retry the identical request for free.

## 6. Review request (SMS)
`POST {base}/api/v1/actions/review-request/call`, $0.12. You must hold the customer's consent (method, time, source). Refusals (no consent, opted out, cooldown) come before any payment. The response is a tracked request (`id` starts with `rr_`); follow it at `links.self`.

## 7. Errors
Non-402 errors: `{{"error":{{"code","message","details":[{{"path","message"}}],"request_id"}}}}`. Fix every `details` entry before retrying a 422.
"#,
        svc = config.service_name,
        sandbox = config.sandbox_header(),
        net = x402::NETWORK_V2,
        usdc = x402::USDC_ADDRESS,
        dname = x402::USDC_DOMAIN_NAME,
        dver = x402::USDC_DOMAIN_VERSION,
        chain = x402::CHAIN_ID,
    )
}
