//! The coaching request (spec 2.3, the same for every mode but the mode constant) and the
//! response envelope around each mode's deliverable (spec 2.4, CONTRACT 7), from the catalog.

use super::DRAFT;
use super::node::{
    Node, arr, constant, int, list, ne, nem, non_negative, num, obj, obj_with, one_of, sm, up_to,
};
use crate::catalog::{self, LEVER_MAX, Mode};
use serde_json::{Value, json};

pub fn request(mode: &Mode) -> Value {
    let percent = || {
        num()
            .d("Percent, 0 to 100.")
            .set("minimum", 0)
            .set("maximum", 100)
    };
    let context = obj_with(
        json!({
            "company": obj_with(json!({
                "name": sm(200),
                "what_they_sell": sm(2000),
                "stage": one_of(&["idea", "pre_revenue", "early_revenue", "scaling", "mature"]),
                "industry": sm(200),
                "website": sm(500),
            }), &[]),
            "metrics": obj_with(json!({
                "monthly_revenue_usd": non_negative(),
                "mrr_usd": non_negative(),
                "leads_per_month": non_negative(),
                "close_rate_pct": percent(),
                "average_order_value_usd": non_negative(),
                "cac_usd": non_negative(),
                "monthly_churn_pct": percent(),
                "traffic_per_month": non_negative(),
            }), &[]).d("All numbers; give the ones you know."),
            "offer": obj_with(json!({
                "name": sm(200),
                "price_usd": non_negative(),
                "promise": sm(2000),
                "guarantee": sm(1000),
            }), &[]),
            "audience": obj_with(json!({
                "icp": sm(2000).d("Ideal customer profile."),
                "segments": up_to(sm(200), 20),
                "pain": sm(2000),
            }), &[]),
        }),
        &[],
    )
    .d(
        "Optional business context; no sub-field is required. Recommended fields for the mode \
        are listed in the catalog (recommended_context).",
    );
    let message = obj_with(
        json!({
            "role": one_of(&["user", "assistant"]),
            "content": ne().set("maxLength", 20000),
        }),
        &["role", "content"],
    );
    json!({
        "$schema": DRAFT,
        "title": format!("Grove coaching request: {}", mode.id),
        "description": format!(
            "Request body of POST {} with mode {} ({}). The mode must be one of the coach's modes.",
            catalog::paths::AGENT_CALL, mode.id, mode.purpose
        ),
        "type": "object",
        "required": ["mode", "messages"],
        "properties": {
            "mode": constant(mode.id),
            "messages": list(message, 1, 40).d("The conversation so far, oldest first."),
            "context": context,
        },
        "additionalProperties": false,
    })
}

/// Where the stored result can be fetched again (CONTRACT 6).
pub fn receipt() -> Value {
    obj(json!({
        "id": ne().d("Unguessable receipt token; \"sandbox\" on a sandbox response."),
        "url": ne().d("Path of the stored result, /api/v1/receipts/{id}."),
        "expires_at": {
            "type": ["string", "null"],
            "description": "RFC 3339, 30 days after creation; null on a sandbox response.",
        },
    }))
    .d("Where the stored result can be fetched again.")
}

pub fn sandbox_flag() -> Value {
    constant(true).d("Present (true) only on a free sandbox response; a paid response omits it.")
}

/// `thinking.diagnosis`: one sentence.
const DIAGNOSIS_MAX: usize = 300;

pub fn response(mode: &Mode) -> Value {
    let caps = mode.tier.caps();
    let agents: Vec<&str> = catalog::coaches_offering(mode.id)
        .map(|c| c.id.as_str())
        .collect();
    let deliverable = crate::modes::rules(mode.id)
        .schema()
        .d(&format!("The {} deliverable; all keys required.", mode.id));
    let words = format!(
        "Plain prose answer, direct, no preamble; under {} words.",
        caps.reply_word_target
    );
    let props = json!({
        "agent": one_of(&agents).d("The coach id."),
        "mode": constant(mode.id),
        "reply": ne().set("maxLength", caps.reply_max_chars).d(&words),
        "thinking": obj(json!({
            "diagnosis": nem(DIAGNOSIS_MAX).d("The one binding constraint, in one sentence."),
            "lever": nem(LEVER_MAX).d("One lever, as a short imperative phrase."),
            "confidence": one_of(&["low", "medium", "high"])
                .d("low when little context is given; high only with real numbers."),
        })),
        "numbers": up_to(obj(json!({
            "label": nem(80),
            "value": nem(40).d("Display string."),
            "basis": sm(240).d("The finished one-line calculation, no working-out."),
        })), caps.numbers_max)
        .d("Supporting numbers; empty when the caller gave no numbers."),
        "actions": list(obj(json!({
            "title": nem(100).d("Imperative."),
            "steps": list(nem(200), 1, 6).d("Ordered."),
            "effort": one_of(&["hours", "days", "weeks"]),
            "metric": sm(160),
        })), caps.actions_min, caps.actions_max),
        "caveats": up_to(sm(240), caps.caveats_max).d(
            "One sentence each; empty when inputs are consistent; the only place for uncertainty."
        ),
        "deliverable": deliverable,
        "context_gaps": arr(sm(160), 0, None).d(
            "Recommended context fields the caller did not give (dotted paths), then at most \
             three more gaps in plain words."
        ),
        "usage": obj(json!({
            "input_tokens": int().set("minimum", 0),
            "output_tokens": int().set("minimum", 0),
        }))
        .d("Tokens over every model attempt; filled by the server."),
        "receipt": receipt(),
        "sandbox": sandbox_flag(),
    });
    json!({
        "$schema": DRAFT,
        "title": format!("Grove coaching response: {}", mode.id),
        "description": format!(
            "200 response of a {} coaching call ({}); {} tier. A sandbox response also carries \
             sandbox: true.",
            mode.id, mode.purpose, mode.tier.as_str()
        ),
        "type": "object",
        "required": required_but_sandbox(&props),
        "properties": props,
        "additionalProperties": false,
    })
}

/// Every top-level property but the optional `sandbox` flag.
pub fn required_but_sandbox(props: &Value) -> Vec<String> {
    props
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .filter(|k| *k != "sandbox")
        .cloned()
        .collect()
}
