//! Using Grove as MCP tools (`/mcp`), as the guides (HTML) and the skill file (Markdown) show it:
//! the endpoint, the tools, paying with x402 over MCP, adding Grove to a client, and a Python
//! program that pays.

use super::{clients, number_word};
use grove_common::{
    catalog::{MODES, paths},
    config::Config,
};

/// The arguments of the example tool call (`diagnose_growth`, coach Mary): the HTTP example
/// body without `mode`, with a coach and an idempotency key.
pub(super) const EXAMPLE_TOOL: &str = "diagnose_growth";
pub(super) const EXAMPLE_ARGUMENTS: &str = r#"{"coach":"mary","messages":[{"role":"user","content":"Revenue has been flat for six months. Clients pay $500 a month on average."}],"context":{"company":{"what_they_sell":"Monthly bookkeeping for small firms"},"metrics":{"monthly_revenue_usd":42000,"leads_per_month":20,"close_rate_pct":45}},"idempotency_key":"my-unique-key-1"}"#;

fn url(config: &Config) -> String {
    config.absolute(paths::MCP)
}

/// What the tools are, in one paragraph (plain text, no markup).
fn tools_summary() -> String {
    format!(
        "{} tools: one per coaching mode, named after the mode (the coach is the `coach` argument, \
         limited to the coaches offering the mode and defaulted when only one does), and \
         `review_request`. A tool's input schema is the published request schema without `mode`, \
         plus `sandbox` (true: the free sample) and `idempotency_key`; its output schema is the \
         published response schema; its title and description state the price.",
        capitalized(&number_word(MODES.len() + 1))
    )
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The payment flow over MCP, as Markdown list items.
fn flow_markdown() -> &'static str {
    "1. Call the tool. Unpaid, the result has `isError: true` and its `structuredContent` is the x402 v2 `PaymentRequired` (`x402Version`, `accepts`, resource `mcp://tool/<name>`); `content[0].text` holds the same JSON.
2. Sign `accepts[0]` (an EIP-3009 authorization, as in section 5, or with an x402 library) and repeat the identical call with the x402 v2 `PaymentPayload` as plain JSON (not base64) in `params._meta[\"x402/payment\"]`.
3. Paid: `structuredContent` is the envelope and `_meta[\"x402/payment-response\"]` the settlement (`success`, `transaction`, `network`, `payer`); a replay adds `_meta[\"grove/idempotent-replay\"]: true`. A refused payment or settlement answers the requirements again, with the reason in `error` (`payment_invalid:*`, `payment_already_used`, `settlement_failed:*`).
4. An error result without `accepts` is not a price: do not pay. It is a refusal before any charge (the HTTP error body: `validation_failed`, `consent_invalid`, `recipient_opted_out`, `cooldown_active`, ...) or, when money may have moved (`settlement_pending`, `still_running`, `upstream_failed`), it carries the `receipt` and `retry_after_s`: poll the receipt or repeat the identical call, which is never charged twice.
5. Identical arguments from the same payer replay the stored answer (10 minutes for coaching, 24 hours for a review request); the same `idempotency_key` replays for 24 hours.
"
}

/// The skill file's section.
pub fn skill_section(config: &Config) -> String {
    let url = url(config);
    let (install, program) =
        clients::mcp_python(config.network, &url, EXAMPLE_TOOL, EXAMPLE_ARGUMENTS);
    format!(
        "Endpoint `{url}`: MCP streamable HTTP, protocol 2026-07-28 (older clients `initialize`, 2025-11-25 and earlier), stateless (no session id), JSON answers. {summary} Resources: the catalogs, the guides, this skill file and the schemas.

{flow}
Add it to a client:
- Claude Code: `claude mcp add --transport http {svc} {url}`, or in `.mcp.json`: `{{\"mcpServers\": {{\"{svc}\": {{\"type\": \"http\", \"url\": \"{url}\"}}}}}}`.
- Claude Desktop and claude.ai: Settings > Connectors > Add custom connector, with the URL (remote servers are not read from `claude_desktop_config.json`).
- TypeScript: use `@modelcontextprotocol/client` 2.x. The 1.x `@modelcontextprotocol/sdk` checks an error result against the output schema and throws on every payment request.

A chat client lists the tools and can run them with `sandbox: true`; to pay, the client must sign. Python (PyPI `mcp` and `x402`):

```sh
{install}
```

```python
{program}
```
",
        summary = tools_summary(),
        flow = flow_markdown(),
        svc = config.service_name,
    )
}

/// The guides' section (`id="mcp"`).
pub fn guide_section(config: &Config, esc: fn(&str) -> String) -> String {
    let url = url(config);
    let (install, program) =
        clients::mcp_python(config.network, &url, EXAMPLE_TOOL, EXAMPLE_ARGUMENTS);
    format!(
        "<h2 id=\"mcp\">As MCP tools</h2>\n\
<p>The same calls are MCP tools at <code>{url}</code> (streamable HTTP, stateless). {summary}</p>\n\
<ol><li>Unpaid, a tool answers an error result whose <code>structuredContent</code> is the x402 \
<code>PaymentRequired</code> (<code>x402Version</code>, <code>accepts</code>).</li>\n\
<li>Sign <code>accepts[0]</code> and repeat the identical call with the payment payload (JSON, not base64) in \
<code>_meta[\"x402/payment\"]</code>.</li>\n\
<li>Paid: the envelope, with the settlement in <code>_meta[\"x402/payment-response\"]</code>. Same verification, \
idempotency, receipts and refusals as the HTTP call; an error result without <code>accepts</code> is never a price.</li></ol>\n\
<p>Claude Code: <code>claude mcp add --transport http {svc} {url}</code>. Claude Desktop and claude.ai: Settings → \
Connectors → Add custom connector. TypeScript: <code>@modelcontextprotocol/client</code> 2.x (1.x of \
<code>@modelcontextprotocol/sdk</code> throws on payment requests). A chat client can try the tools with \
<code>sandbox: true</code>; paying needs a client that signs, for example:</p>\n\
<pre>{install}</pre>\n<pre>{program}</pre>\n",
        summary = esc(&tools_summary()).replace('`', ""),
        svc = esc(&config.service_name),
        install = esc(install),
        program = esc(&program),
    )
}
