//! The body of a paid coaching call (`POST /api/v1/agents/{agent_id}/call`).

use crate::catalog::ids::ModeId;
use serde::{Deserialize, Serialize};
use serde_json::Number;

/// A coaching call: the mode, the conversation so far, and what the caller knows of the business.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoachingRequest {
    pub mode: ModeId,
    /// 1 to 40 turns, the last one usually the caller's.
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    /// An earlier answer, replayed by the caller as part of the conversation.
    Assistant,
}

/// Optional business context; no field is required. Numbers keep the representation the caller
/// wrote (`30` stays `30`), since they are shown to the model as given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company: Option<Company>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<Offer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Company {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_they_sell: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<CompanyStage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub industry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompanyStage {
    Idea,
    PreRevenue,
    EarlyRevenue,
    Scaling,
    Mature,
}

/// All numbers; the caller gives the ones it knows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_revenue_usd: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrr_usd: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leads_per_month: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_rate_pct: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_order_value_usd: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cac_usd: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_churn_pct: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_per_month: Option<Number>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_usd: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Audience {
    /// Ideal customer profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pain: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{catalog::ModeId, requests::parse, schema::SchemaRegistry};
    use serde_json::{Map, Value, json};

    /// A value for every property the schema declares (the first enum value, a number, a
    /// one-item list), so that a property the type lacks cannot go unnoticed.
    fn every_property(schema: &Value) -> Value {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values[0].clone();
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => {
                let props = schema.get("properties").and_then(Value::as_object);
                let filled: Map<String, Value> = props
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), every_property(v)))
                    .collect();
                Value::Object(filled)
            }
            Some("array") => json!([every_property(&schema["items"])]),
            Some("number") => json!(12.5),
            Some("integer") => json!(3),
            Some("boolean") => json!(true),
            _ => json!("text"),
        }
    }

    #[test]
    fn every_published_coaching_body_survives_the_type_unchanged() {
        let schemas = SchemaRegistry::load().expect("schemas");
        for mode in ModeId::ALL {
            let schema = schemas.mode(mode).request.json();
            let mut body = every_property(schema);
            body["mode"] = json!(mode.as_str());
            body["messages"] = json!([
                {"role": "user", "content": "Where do we start?"},
                {"role": "assistant", "content": "With the leads."},
            ]);
            assert!(
                schemas.mode(mode).request.is_valid(&body),
                "{mode:?}: {body}"
            );
            let typed: CoachingRequest = parse(body.clone()).expect("typed");
            assert_eq!(
                serde_json::to_value(&typed).expect("json"),
                body,
                "{mode:?}"
            );
        }
    }

    #[test]
    fn numbers_keep_the_representation_the_caller_wrote() {
        let body = json!({"mode": "diagnose_growth", "messages": [{"role": "user", "content": "hi"}],
                          "context": {"metrics": {"leads_per_month": 30, "close_rate_pct": 16.0}}});
        let typed: CoachingRequest = parse(body.clone()).expect("typed");
        assert_eq!(serde_json::to_value(&typed).expect("json"), body);
        assert_eq!(typed.mode, ModeId::DiagnoseGrowth);
    }
}
