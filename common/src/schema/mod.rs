//! The schema registry: the JSON Schema files in `schemas/`, embedded at compile time, compiled
//! once at start-up, and used both to serve and to validate (what is published is what is enforced).
//! The files themselves are generated from the catalog by [`generate`].

pub mod generate;

use crate::catalog::ids::{ByMode, ModeId};
use jsonschema::{Validator, error::ValidationErrorKind};
use serde::Serialize;
use serde_json::Value;

/// `(directory, request.json, response.json)` under `schemas/`, embedded.
macro_rules! embedded_pair {
    ($dir:expr) => {
        (
            $dir,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../schemas/",
                $dir,
                "/request.json"
            )),
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../schemas/",
                $dir,
                "/response.json"
            )),
        )
    };
}

macro_rules! mode_files {
    ($($variant:ident $id:ident),* $(,)?) => {
        ByMode::new([$(embedded_pair!(stringify!($id))),*])
    };
}

type Files = (&'static str, &'static str, &'static str);

static COACHING_FILES: ByMode<Files> = crate::modes!(mode_files!());
static ACTION_FILES: Files = embedded_pair!("actions/review_request");

/// One published schema: its exact bytes, parsed form and compiled validator.
pub struct SchemaDoc {
    raw: &'static str,
    json: Value,
    validator: Validator,
}

/// One problem found in a document, with a JSON-pointer path (CONTRACT 5), and the specific code
/// of the rule it breaks where a rule names one (the review request's codes are listed in
/// `review::codes`); a schema violation has none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub path: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
}

/// How a violated `pattern` is described, so a rule that explains the same value better can
/// take its place.
const PATTERN_MISMATCH: &str = "must match the pattern";

impl Violation {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            code: None,
        }
    }

    /// The same problem, with the code of the rule it breaks.
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// A schema `pattern` the value does not match (a rule may say in words what it means).
    pub fn is_pattern_mismatch(&self) -> bool {
        self.code.is_none() && self.message.starts_with(PATTERN_MISMATCH)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("schema {name} is not valid JSON: {source}")]
    Parse {
        name: String,
        source: serde_json::Error,
    },
    #[error("schema {name} does not compile: {message}")]
    Compile { name: String, message: String },
}

impl SchemaDoc {
    fn compile(name: &str, raw: &'static str) -> Result<Self, SchemaError> {
        let json: Value = serde_json::from_str(raw).map_err(|source| SchemaError::Parse {
            name: name.to_owned(),
            source,
        })?;
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&json)
            .map_err(|e| SchemaError::Compile {
                name: name.to_owned(),
                message: e.to_string(),
            })?;
        Ok(Self {
            raw,
            json,
            validator,
        })
    }

    /// The file exactly as published.
    pub fn raw(&self) -> &'static str {
        self.raw
    }

    pub fn json(&self) -> &Value {
        &self.json
    }

    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Every violation, in document order, each with a JSON pointer to the offending value.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        let mut out: Vec<Violation> = Vec::new();
        for error in self.validator.iter_errors(instance) {
            let at = error.instance_path().to_string();
            for v in describe(&at, error.kind()) {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    }
}

/// Our own wording for each kind of violation. The library's messages quote the offending
/// value, which may be 20,000 characters long or hold a customer's phone number.
fn describe(at: &str, kind: &ValidationErrorKind) -> Vec<Violation> {
    use ValidationErrorKind as K;
    let one = |msg: String| vec![Violation::new(at, msg)];
    match kind {
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            unexpected
                .iter()
                .map(|p| {
                    Violation::new(
                        format!("{at}/{}", escape_pointer(p)),
                        "is not an allowed property",
                    )
                })
                .collect()
        }
        K::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            vec![Violation::new(
                format!("{at}/{}", escape_pointer(name)),
                "is required",
            )]
        }
        K::Type { kind } => one(format!("must be of type {}", type_name(kind))),
        K::Enum { options } => one(format!("must be one of {}", short_json(options))),
        K::Constant { expected_value } => one(format!("must be {}", short_json(expected_value))),
        K::MinLength { limit } => one(format!("must be at least {limit} characters")),
        K::MaxLength { limit } => one(format!("must be at most {limit} characters")),
        K::MinItems { limit } => one(format!("must have at least {limit} item{}", plural(*limit))),
        K::MaxItems { limit } => one(format!("must have at most {limit} item{}", plural(*limit))),
        K::Minimum { limit } => one(format!("must be at least {limit}")),
        K::Maximum { limit } => one(format!("must be at most {limit}")),
        K::ExclusiveMinimum { limit } => one(format!("must be greater than {limit}")),
        K::ExclusiveMaximum { limit } => one(format!("must be less than {limit}")),
        K::Pattern { pattern } => one(format!("{PATTERN_MISMATCH} {pattern}")),
        K::Format { format } => one(format!("must be a valid {format}")),
        K::UniqueItems => one("must not contain duplicate items".into()),
        K::MultipleOf { .. } => one("is not an allowed multiple".into()),
        other => one(format!("is invalid ({})", short_kind(other))),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => t.to_string(),
        jsonschema::error::TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            names.join(" or ")
        }
    }
}

fn short_json(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!("{}…", &s[..s.floor_char_boundary(300)])
    } else {
        s
    }
}

fn short_kind(kind: &ValidationErrorKind) -> String {
    let s = format!("{kind:?}");
    let name: String = s.chars().take_while(|c| c.is_alphanumeric()).collect();
    name
}

/// RFC 6901: `~` becomes `~0`, `/` becomes `~1`.
pub fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// The request and response schema of one mode (or of the action).
pub struct SchemaPair {
    pub request: SchemaDoc,
    pub response: SchemaDoc,
}

/// Every published schema, compiled.
pub struct SchemaRegistry {
    modes: ByMode<SchemaPair>,
    action: SchemaPair,
}

fn pair((dir, req, resp): &Files) -> Result<SchemaPair, SchemaError> {
    Ok(SchemaPair {
        request: SchemaDoc::compile(&format!("{dir}/request.json"), req)?,
        response: SchemaDoc::compile(&format!("{dir}/response.json"), resp)?,
    })
}

impl SchemaRegistry {
    /// Parses and compiles every embedded schema (one pair per mode, by construction).
    pub fn load() -> Result<Self, SchemaError> {
        Ok(Self {
            modes: COACHING_FILES.try_map(|_, files| pair(files))?,
            action: pair(&ACTION_FILES)?,
        })
    }

    pub fn mode(&self, mode: ModeId) -> &SchemaPair {
        &self.modes[mode]
    }

    pub fn action(&self) -> &SchemaPair {
        &self.action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{self, MODES};
    use serde_json::json;

    fn registry() -> SchemaRegistry {
        SchemaRegistry::load().expect("embedded schemas compile")
    }

    #[test]
    fn each_mode_embeds_its_own_directory() {
        for (id, (dir, _, _)) in COACHING_FILES.entries() {
            assert_eq!(*dir, id.as_str());
        }
        registry();
    }

    #[test]
    fn response_schema_caps_follow_the_tier_and_agents_follow_the_coaches() {
        let reg = registry();
        for m in MODES.iter() {
            let s = reg.mode(m.id).response.json().clone();
            let caps = m.tier.caps();
            let p = &s["properties"];
            let expected = [
                ("/reply/maxLength", caps.reply_max_chars),
                ("/numbers/maxItems", caps.numbers_max),
                ("/actions/minItems", caps.actions_min),
                ("/actions/maxItems", caps.actions_max),
                ("/caveats/maxItems", caps.caveats_max),
            ];
            for (pointer, cap) in expected {
                assert_eq!(p.pointer(pointer), Some(&json!(cap)), "{} {pointer}", m.id);
            }
            let agents: Vec<&str> = catalog::coaches_offering(m.id)
                .map(|c| c.id.as_str())
                .collect();
            assert_eq!(p["agent"]["enum"], json!(agents), "{}", m.id);
            assert_eq!(p["mode"]["const"], json!(m.id));
        }
    }

    #[test]
    fn violations_name_every_problem_by_pointer_without_echoing_input() {
        let reg = registry();
        let long = "x".repeat(20_001);
        let body = json!({
            "mode": "diagnose_growth",
            "messages": [{"role": "boss", "content": long}],
            "context": {"metrics": {"close_rate_pct": 140}, "colour": "red"},
            "extra": 1
        });
        let v = reg.mode(ModeId::DiagnoseGrowth).request.violations(&body);
        let paths: Vec<&str> = v.iter().map(|v| v.path.as_str()).collect();
        for expected in [
            "/messages/0/role",
            "/messages/0/content",
            "/context/metrics/close_rate_pct",
            "/context/colour",
            "/extra",
        ] {
            assert!(
                paths.contains(&expected),
                "{expected} missing from {paths:?}"
            );
        }
        assert!(v.iter().all(|v| v.message.len() < 400));
        let missing = reg
            .mode(ModeId::DiagnoseGrowth)
            .request
            .violations(&json!({}));
        let paths: Vec<&str> = missing.iter().map(|v| v.path.as_str()).collect();
        assert!(
            paths.contains(&"/mode") && paths.contains(&"/messages"),
            "{paths:?}"
        );
    }
}
