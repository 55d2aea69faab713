//! The human guides (`/docs/agents`, `/docs/actions`: plain HTML, no JavaScript) and the skill
//! file an agent client follows (`/skills/{service}-x402/SKILL.md`), derived from the catalog.

use super::clients;
use grove_common::{
    catalog::{COACHES, CoachId, MODES, REVIEW_REQUEST, paths},
    config::Config,
};
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Styles that read from a 400 px phone up: code wraps instead of running off the screen, and
/// below 40rem each table row becomes a stacked card whose cells carry their column's name.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:1.5rem auto;padding:0 1rem;\
line-height:1.5;overflow-wrap:break-word}h1{font-size:1.6rem;line-height:1.25}\
code{overflow-wrap:anywhere}pre{background:#f4f4f4;padding:.75rem;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85rem}\
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}\
nav ol{padding-left:1.25rem}\
@media (max-width:40rem){table,tbody,tr,td{display:block}tr:first-child{display:none}\
tr{border:1px solid #ccc;margin-bottom:.75rem}td{border:0;border-top:1px solid #eee}\
td[data-label]::before{content:attr(data-label);display:block;font-size:.8rem;color:#555}}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}</style>\
         </head><body>\n<h1>{t}</h1>\n{body}\n</body></html>\n",
        t = esc(title)
    )
}

/// The table of contents: `(anchor, heading)` in page order.
fn contents(sections: &[(&str, &str)]) -> String {
    let mut b =
        String::from("<nav aria-label=\"Contents\"><h2 id=\"contents\">Contents</h2><ol>\n");
    for (id, title) in sections {
        let _ = writeln!(b, "<li><a href=\"#{id}\">{}</a></li>", esc(title));
    }
    b.push_str("</ol></nav>\n");
    b
}

/// A table cell labelled with its column, for the stacked layout on narrow screens.
fn td(label: &str, html: &str) -> String {
    format!("<td data-label=\"{label}\">{html}</td>")
}

/// Paying with the official clients: TypeScript and Python, same request as the curl flow.
fn official_clients(config: &Config, url: &str, body: &str) -> String {
    let full = format!("{}{url}", config.public_base_url);
    let (ts_install, ts) = clients::typescript(config.network, &full, body);
    let (py_install, py) = clients::python(config.network, &full, body);
    format!(
        "<h2 id=\"clients\">Paying with an official x402 client</h2>\n\
<p>The x402 clients do the whole 402 → sign → retry flow for you: they read the requirements, sign a USDC \
authorization on {network} for exactly the amount asked and retry with <code>PAYMENT-SIGNATURE</code>. Send an \
<code>Idempotency-Key</code> so a retry never buys twice. The raw flow is <a href=\"#pay\">below</a>.</p>\n\
<h3>TypeScript: npm <code>@x402/fetch</code></h3>\n<pre>{ts_install}</pre>\n<pre>{ts}</pre>\n\
<h3>Python: PyPI <code>x402</code></h3>\n<pre>{py_install}</pre>\n<pre>{py}</pre>\n",
        network = esc(config.network.display_name()),
        ts_install = esc(ts_install),
        ts = esc(&ts),
        py_install = esc(py_install),
        py = esc(&py),
    )
}

fn payment_flow(config: &Config, url: &str, body: &str) -> String {
    let base = &config.public_base_url;
    format!(
        "<h2 id=\"pay\">Paying by hand: 402, sign, retry</h2>\n\
<ol><li>Send the request without payment. You get <code>402</code>: the requirements are base64 JSON in the \
<code>PAYMENT-REQUIRED</code> header (x402 v2) and plain JSON in the body (x402 v1).</li>\n\
<li>Sign a {funds} <code>TransferWithAuthorization</code> (EIP-3009) for exactly <code>amount</code> atomic units to \
<code>payTo</code> (<code>network</code> <code>{caip2}</code>, <code>asset</code> {usdc}), under the EIP-712 domain <code>{{name: \"{name}\", version: \"{version}\", chainId: {chain}, verifyingContract: {usdc}}}</code>.</li>\n\
<li>Retry the identical request with the payment in <code>PAYMENT-SIGNATURE</code> (v2) or <code>X-PAYMENT</code> (v1). \
The 200 carries <code>PAYMENT-RESPONSE</code> (or <code>X-PAYMENT-RESPONSE</code>) with the settlement.</li>\n\
<li>Retrying the same request (same payer and body, or the same <code>Idempotency-Key</code>) replays the stored result \
with <code>Idempotent-Replay: true</code> and charges nothing.</li></ol>\n\
<pre>curl -si -X POST {base}{url} \\\n  -H 'content-type: application/json' \\\n  -d '{body}'\n\
# HTTP/1.1 402 Payment Required\n# payment-required: eyJ4NDAyVmVyc2lvbiI6Mi...\n\n\
echo \"$PAYMENT_REQUIRED\" | base64 -d | jq .accepts[0]   # amount, payTo, asset, network\n\n\
curl -si -X POST {base}{url} \\\n  -H 'content-type: application/json' \\\n  -H \"PAYMENT-SIGNATURE: $SIGNED_PAYLOAD_BASE64\" \\\n  -H 'Idempotency-Key: my-unique-key-1' \\\n  -d '{body}'</pre>\n",
        funds = esc(&super::usdc_on(config.network)),
        caip2 = config.network.caip2(),
        name = config.network.usdc_domain_name(),
        version = config.network.usdc_domain_version(),
        chain = config.network.chain_id(),
        usdc = config.network.usdc_address(),
        body = esc(body),
    )
}

pub(super) const EXAMPLE_COACHING_BODY: &str = r#"{"mode":"diagnose_growth","messages":[{"role":"user","content":"Revenue has been flat for six months. Clients pay $500 a month on average."}],"context":{"company":{"what_they_sell":"Monthly bookkeeping for small firms"},"metrics":{"monthly_revenue_usd":42000,"leads_per_month":20,"close_rate_pct":45}}}"#;

/// The coach the guides' examples call (its mode in the example body is one it offers).
pub(super) const EXAMPLE_COACH: CoachId = CoachId::Mary;

pub fn agents_guide(config: &Config) -> String {
    let example_call = paths::agent_call(EXAMPLE_COACH);
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<p>{svc} sells pay-per-call growth coaching to AI agents. Post a conversation and optional business context \
to a coach in one of its modes; the answer is a strict JSON envelope (reply, one-constraint diagnosis, numbers, \
actions, caveats and a typed deliverable). Machine-readable: <a href=\"{catalog}\">catalog</a>, \
<a href=\"{openapi}\">OpenAPI</a>, <a href=\"{skill}\">skill file</a>.</p>",
        svc = esc(&config.service_name),
        catalog = paths::AGENTS,
        openapi = paths::OPENAPI,
        skill = esc(&config.skill_path()),
    );
    b.push_str(&contents(&[
        ("coaches", "Coaches"),
        ("modes", "Modes"),
        ("sandbox", "Sandbox (free)"),
        ("clients", "Paying with an official x402 client"),
        ("pay", "Paying by hand: 402, sign, retry"),
        ("mcp", "As MCP tools"),
        ("errors", "Errors"),
    ]));
    b.push_str(
        "<h2 id=\"coaches\">Coaches</h2>\n<table><tr><th>coach</th><th>domain</th><th>modes (price)</th></tr>\n",
    );
    for c in COACHES.iter() {
        let modes: Vec<String> = c
            .offered_modes()
            .map(|(m, cm)| format!("<b>{}</b> ({}): {}", m.id, m.price(), esc(cm.summary)))
            .collect();
        let _ = writeln!(
            b,
            "<tr>{}{}{}</tr>",
            td(
                "coach",
                &format!(
                    "<b>{}</b> <code>{}</code><br>{}",
                    esc(c.name),
                    c.id,
                    esc(c.tagline)
                )
            ),
            td("domain", &esc(c.domain)),
            td("modes (price)", &modes.join("<br>")),
        );
    }
    b.push_str("</table>\n<h2 id=\"modes\">Modes</h2>\n<table><tr><th>mode</th><th>tier</th><th>price</th><th>recommended context</th><th>schemas</th></tr>\n");
    for m in MODES.iter() {
        let _ = writeln!(
            b,
            "<tr>{}{}{}{}{}</tr>",
            td(
                "mode",
                &format!("<code>{}</code><br>{}", m.id, esc(m.summary))
            ),
            td("tier", m.tier.as_str()),
            td("price", &m.price().to_string()),
            td("recommended context", &m.recommended_context.join(", ")),
            td(
                "schemas",
                &format!(
                    "<a href=\"{}\">request</a> · <a href=\"{}\">response</a>",
                    m.request_schema_path(),
                    m.response_schema_path()
                )
            ),
        );
    }
    b.push_str("</table>\n");
    let _ = write!(
        b,
        "<h2 id=\"sandbox\">Sandbox (free)</h2>\n<p>Add <code>{h}: 1</code> (or <code>?sandbox=1</code>) to any call. \
The request is validated as usual; the answer is a fixed, schema-valid sample for the mode with <code>sandbox: true</code>, \
zero usage and the receipt <code>{{\"id\":\"sandbox\"}}</code>. No model runs and nothing is charged.</p>\n\
<pre>curl -s -X POST {base}{call} \\\n  -H 'content-type: application/json' -H '{h}: 1' \\\n  -d '{body}'</pre>\n",
        h = esc(&config.sandbox_header()),
        base = config.public_base_url,
        call = example_call,
        body = esc(EXAMPLE_COACHING_BODY),
    );
    b.push_str(&official_clients(
        config,
        &example_call,
        EXAMPLE_COACHING_BODY,
    ));
    b.push_str(&payment_flow(config, &example_call, EXAMPLE_COACHING_BODY));
    b.push_str(&super::mcp_guide::guide_section(config, esc));
    b.push_str(ERRORS_HTML);
    page(&format!("{}: coaching calls", config.service_name), &b)
}

pub(super) const EXAMPLE_ACTION_BODY: &str = r#"{"business":{"name":"Harbor Physio","review_url":"https://g.page/r/harbor-physio/review","timezone":"America/New_York"},"customer":{"phone":"+13055550142","first_name":"Dana"},"consent":{"method":"web_form_checkbox","captured_at":"2026-10-02T15:04:05-04:00","source":"Intake form, SMS consent checkbox"}}"#;

pub fn actions_guide(config: &Config) -> String {
    let a = &REVIEW_REQUEST;
    let mut b = String::new();
    let _ = write!(
        b,
        "<p><b>{name}</b> ({price}): {summary}</p>\n\
<p>Endpoint <code>POST {base}{path}</code>; schemas: <a href=\"{rq}\">request</a>, <a href=\"{rs}\">response</a>; \
catalog: <a href=\"{catalog}\">{catalog}</a>.</p>\n\
{contents}\
<h2 id=\"rules\">Rules</h2><ul>\
<li>Consent is required: method, capture time (not in the future, not older than 18 months) and source. \
Requests without valid consent, to opted-out phones, or inside the cooldown you set are refused <em>before</em> any payment.</li>\
<li>Messages go out only between 08:00 and 21:00 in the recipient's local time (narrower where state rules require); \
outside that window the send waits for the next opening.</li>\
<li>Every message names the business and ends with an opt-out sentence; replies STOP, UNSUBSCRIBE and the like end all \
pending requests to that phone.</li>\
<li>One follow-up at most, skipped when the link was clicked, the request cancelled, or the phone opted out.</li></ul>\n\
<h2 id=\"sandbox\">Sandbox (free)</h2>\n<p>Add <code>{h}: 1</code> (or <code>?sandbox=1</code>): the request gets exactly the \
checks of the paid call (schema, consent, links, zones, phone, the opt-out list and your cooldown) with the same statuses, \
codes and details. When it passes, the answer is what the paid call would return for <em>this</em> body, with \
<code>sandbox: true</code>: your names in the message, the tracked link on <code>{base}</code>, and the send time after the \
recipient's quiet hours. No SMS, no payment, nothing stored.</p>\n\
<pre>curl -s -X POST {base}{path} \\\n  -H 'content-type: application/json' -H '{h}: 1' \\\n  -d '{body}'</pre>\n",
        name = esc(a.name),
        price = a.price,
        summary = esc(a.summary),
        base = config.public_base_url,
        path = a.call_path(),
        catalog = paths::ACTIONS,
        rq = a.request_schema_path(),
        rs = a.response_schema_path(),
        h = esc(&config.sandbox_header()),
        body = esc(EXAMPLE_ACTION_BODY),
        contents = contents(&[
            ("rules", "Rules"),
            ("sandbox", "Sandbox (free)"),
            ("clients", "Paying with an official x402 client"),
            ("pay", "Paying by hand: 402, sign, retry"),
            ("mcp", "As MCP tools"),
            ("errors", "Errors"),
        ]),
    );
    b.push_str(&official_clients(
        config,
        &a.call_path(),
        EXAMPLE_ACTION_BODY,
    ));
    b.push_str(&payment_flow(config, &a.call_path(), EXAMPLE_ACTION_BODY));
    b.push_str(&super::mcp_guide::guide_section(config, esc));
    b.push_str(ERRORS_HTML);
    page(
        &format!("{}: review request action", config.service_name),
        &b,
    )
}

const ERRORS_HTML: &str = "<h2 id=\"errors\">Errors</h2>\n<p>Every error except 402 has the body \
<code>{\"error\":{\"code\",\"message\",\"details\":[{\"path\",\"message\"}],\"request_id\"}}</code>; \
<code>details</code> lists every problem with a JSON pointer. On the review request, a 422 with one problem keeps the \
code clients know (<code>validation_failed</code>, or <code>consent_invalid</code> for consent); a body with more than \
one problem answers <code>invalid_request</code>. Either way each detail carries its own <code>code</code> \
(consent_invalid, consent_in_future, consent_too_old, send_at_out_of_range, phone_not_us, invalid_time_zone, \
review_url_invalid, link_shortener, link_not_allowed, lookalike_characters, control_characters, template_invalid, \
template_too_long, or validation_failed), so fix them all before retrying.</p>\n\
<ul><li>400 invalid_json; 404 unknown_agent / not_found; 405 method_not_allowed (the <code>Allow</code> header lists the \
route's methods); 413 payload_too_large (over 2 MiB); 415 unsupported_media_type</li>\
<li>422 validation_failed / consent_invalid / invalid_request / mode_not_offered / invalid_idempotency_key / \
idempotency_key_reused</li>\
<li>409 request_in_progress (wait <code>Retry-After</code> seconds), recipient_opted_out, cooldown_active</li>\
<li>503 unavailable / payments_disabled / model_unavailable / sms_unavailable (nothing charged; the last two while \
the provider the work needs is down, instead of a price; <code>Retry-After</code> says when to look again); 502 upstream_failed and 504 still_running (with a receipt; a \
retry is free)</li></ul>\n";
