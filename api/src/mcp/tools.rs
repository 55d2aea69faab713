//! The MCP tool list, derived once from the catalog and the published schemas: one tool per
//! coaching mode (the coach is an argument limited to the coaches offering that mode) and one for
//! the review request, 17 in all.
//!
//! One tool per mode rather than per coach and mode (35): a model picks by task first and the
//! mode is the task; each mode has one price, so each tool states exactly one; ten modes have a
//! single coach, so per-pair tools would mostly repeat the mode under a name; and a short,
//! task-named list fits the tool caps and prompt budgets of clients. Names are the mode ids
//! (at most 29 characters, `[a-z_]`), so a client's own prefix (`mcp__grove__`) still fits the
//! 64-character limit several clients enforce.

use grove_common::{
    catalog::{self, Coach, MODES, Mode, REVIEW_REQUEST},
    config::Network,
    schema::SchemaRegistry,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What a tool sells.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    Coaching(&'static Mode),
    ReviewRequest,
}

/// The arguments every tool takes besides its request body.
pub mod args {
    pub const COACH: &str = "coach";
    pub const SANDBOX: &str = "sandbox";
    pub const IDEMPOTENCY_KEY: &str = "idempotency_key";
}

/// The tools in a stable order (the catalog's modes, then the review request) with what each
/// sells. `tools/list` must not vary by connection, and it does not: this is built at start-up.
pub struct Tools {
    listed: Vec<Tool>,
    targets: Vec<Target>,
}

impl Tools {
    pub fn build(schemas: &SchemaRegistry, network: Network) -> Self {
        let mut listed = Vec::new();
        let mut targets = Vec::new();
        for mode in MODES.iter() {
            listed.push(coaching_tool(schemas, mode, network));
            targets.push(Target::Coaching(mode));
        }
        listed.push(review_tool(schemas, network));
        targets.push(Target::ReviewRequest);
        Self { listed, targets }
    }

    pub fn list(&self) -> &[Tool] {
        &self.listed
    }

    pub fn find(&self, name: &str) -> Option<(&Tool, Target)> {
        let i = self.listed.iter().position(|t| t.name == name)?;
        Some((&self.listed[i], self.targets[i]))
    }
}

/// "diagnose_growth" → "Diagnose growth".
fn human(id: &str) -> String {
    let words = id.replace('_', " ");
    let mut chars = words.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// How payment and the free sample work, the same for every tool.
fn paying(price: &str, network: Network) -> String {
    let funds = crate::render::usdc_on(network);
    format!(
        "{price} per call, in {funds}, paid with x402 over MCP: a call without payment \
         returns an error result whose structuredContent holds the payment requirements \
         (x402Version, accepts); sign one and repeat the identical call with the payment in \
         _meta[\"x402/payment\"]. The answer carries the settlement in \
         _meta[\"x402/payment-response\"]. Set sandbox: true for a free sample with the same \
         shape; nothing is charged."
    )
}

fn coaching_tool(schemas: &SchemaRegistry, mode: &'static Mode, network: Network) -> Tool {
    let coaches: Vec<&Coach> = catalog::coaches_offering(mode.id).collect();
    let names: Vec<&str> = coaches.iter().map(|c| c.name).collect();
    let price = mode.price().to_string();
    let description = format!(
        "{} Coach{}: {}. Returns the {} envelope (reply, thinking, numbers, actions, caveats, a \
         typed deliverable, context gaps, usage and a receipt), checked against outputSchema. {} \
         An identical call within 10 minutes, or the same idempotency_key within 24 hours, \
         replays the paid answer without a second charge.",
        mode.summary,
        if names.len() == 1 { "" } else { "es" },
        names.join(", "),
        mode.tier.as_str(),
        paying(&price, network),
    );
    let published = schemas.mode(mode.id);
    let input = input_schema(
        published.request.json(),
        &format!(
            "Arguments of the {} tool: the request body of POST /api/v1/agents/{{coach}}/call in \
             mode {} without `mode` (the tool fixes it), plus the coach, sandbox and \
             idempotency_key.",
            mode.id, mode.id
        ),
        Some(coach_argument(mode, &coaches)),
        coaches.len() > 1,
    );
    Tool::new_with_raw(mode.id.as_str(), Some(description.into()), Arc::new(input))
        .with_title(format!("{} ({price})", human(mode.id.as_str())))
        .with_raw_output_schema(Arc::new(object(published.response.json())))
        .with_annotations(annotations(format!(
            "{} ({price})",
            human(mode.id.as_str())
        )))
}

fn review_tool(schemas: &SchemaRegistry, network: Network) -> Tool {
    let price = REVIEW_REQUEST.price.to_string();
    let description = format!(
        "{} Checked before any charge: the body, the consent, the opt-out list and the cooldown \
         (a refusal is an error result without payment requirements). Returns the tracked \
         request (id, status, scheduled send time, the message, links and a receipt). {} The \
         same arguments, or the same idempotency_key, within 24 hours replay the tracked request \
         and never send a second text.",
        REVIEW_REQUEST.summary,
        paying(&price, network),
    );
    let input = input_schema(
        schemas.action().request.json(),
        "Arguments of the review_request tool: the request body of POST \
         /api/v1/actions/review-request/call, plus sandbox and idempotency_key.",
        None,
        false,
    );
    let title = format!("{} ({price})", REVIEW_REQUEST.name);
    Tool::new_with_raw(REVIEW_REQUEST.id, Some(description.into()), Arc::new(input))
        .with_title(title.clone())
        .with_raw_output_schema(Arc::new(object(schemas.action().response.json())))
        .with_annotations(annotations(title))
}

/// Every tool costs money, so none is read-only (clients may run those without asking); none
/// destroys anything; an identical call replays rather than repeats; each reaches outside.
fn annotations(title: String) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(false)
        .destructive(false)
        .idempotent(true)
        .open_world(true)
}

fn object(value: &Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

/// `coach`: one of the coaches offering `mode`, each with its own summary of the mode; a default
/// when only one offers it.
fn coach_argument(mode: &Mode, coaches: &[&Coach]) -> Value {
    let choices: Vec<Value> = coaches
        .iter()
        .filter_map(|c| {
            let own = c.modes.iter().find(|m| m.mode == mode.id)?;
            Some(json!({
                "const": c.id.as_str(),
                "description": format!("{} ({}): {}", c.name, c.domain, own.summary),
            }))
        })
        .collect();
    let mut schema = json!({
        "type": "string",
        "description": "The coach who answers; each describes this mode in its own words.",
        "oneOf": choices,
    });
    if let [only] = coaches {
        schema["default"] = json!(only.id.as_str());
    }
    schema
}

/// The published request schema as a tool's input: `mode` dropped (the tool name fixes it), the
/// coach first when there is one, then the body's own properties, then `sandbox` and
/// `idempotency_key`.
fn input_schema(
    published: &Value,
    description: &str,
    coach: Option<Value>,
    coach_required: bool,
) -> JsonObject {
    let mut schema = object(published);
    schema.insert("description".into(), json!(description));
    let mut properties = Map::new();
    if let Some(coach) = coach {
        properties.insert(args::COACH.into(), coach);
    }
    if let Some(Value::Object(body)) = published.get("properties") {
        for (name, property) in body {
            if name != "mode" {
                properties.insert(name.clone(), property.clone());
            }
        }
    }
    properties.insert(
        args::SANDBOX.into(),
        json!({
            "type": "boolean",
            "default": false,
            "description": "true: the free sandbox, a fixed sample with the paid answer's shape; nothing is charged.",
        }),
    );
    properties.insert(
        args::IDEMPOTENCY_KEY.into(),
        json!({
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "pattern": "^[\\x20-\\x7E]+$",
            "description": "Optional, 1-255 printable ASCII characters. The same key with the same arguments within 24 hours replays the paid answer; with other arguments it is refused. Without it, identical arguments are the key.",
        }),
    );
    schema.insert("properties".into(), Value::Object(properties));
    let mut required: Vec<Value> = published
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter(|n| *n != "mode").cloned().collect())
        .unwrap_or_default();
    if coach_required {
        required.insert(0, json!(args::COACH));
    }
    schema.insert("required".into(), Value::Array(required));
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_titles() {
        assert_eq!(human("diagnose_growth"), "Diagnose growth");
        assert_eq!(human("review_request"), "Review request");
    }

    #[test]
    fn seventeen_tools_with_short_names_and_one_coach_defaulted() {
        let schemas = SchemaRegistry::load().expect("schemas");
        let tools = Tools::build(&schemas, Network::Base);
        assert_eq!(tools.list().len(), 17);
        for tool in tools.list() {
            assert!(tool.name.len() <= 40, "{}", tool.name);
            let props = tool.input_schema["properties"].as_object().expect("props");
            assert!(!props.contains_key("mode"));
            assert!(props.contains_key(args::SANDBOX));
        }
        let (tool, _) = tools.find("scope_role").expect("scope_role");
        let coach = &tool.input_schema["properties"][args::COACH];
        assert_eq!(coach["oneOf"].as_array().map(Vec::len), Some(1));
        assert!(coach.get("default").is_some());
        let required = tool.input_schema["required"].as_array().expect("required");
        assert!(!required.contains(&json!(args::COACH)));
    }
}
