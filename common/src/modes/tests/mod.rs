//! The modes as the generator and the worker use them: every mode's type reads its sample and
//! publishes what `schemas/` holds; and a mode added in one file (`test_mode.rs`, with its prompt
//! and its sample) goes through the same steps with nothing else to change.

mod test_mode;

use super::*;
use crate::catalog::{self, MODES};
use crate::requests::CoachingRequest;
use crate::schema::SchemaRegistry;
use serde_json::json;
use std::cell::RefCell;
use test_mode::PickChannel;

/// Tracing that records what the rules asked and answers from a fixed list of the caller's
/// figures (the worker's real tracing is tested with the worker).
#[derive(Default)]
struct Asked {
    sourced: RefCell<Vec<(String, Source, String)>>,
}

impl Tracing for Asked {
    fn trace(&self, _: &str, _: &str, _: &mut Vec<Violation>) {}
    fn sourced(&self, path: &str, source: Source, text: &str, out: &mut Vec<Violation>) {
        self.sourced
            .borrow_mut()
            .push((path.to_owned(), source, text.to_owned()));
        if source == Source::NotProvided && text.chars().any(|c| c.is_ascii_digit()) {
            out.push(Violation::new(path, "must hold no figure"));
        }
    }
    fn shows_rate(&self, _: f64) -> bool {
        false
    }
    fn figures(&self, _: &str) -> Vec<Written> {
        Vec::new()
    }
}

fn request() -> CoachingRequest {
    crate::requests::from_stored(json!({
        "mode": "diagnose_growth",
        "messages": [{"role": "user", "content": "60% of our leads come from referrals."}],
    }))
    .expect("a request")
}

fn sample_envelope(mode: &catalog::Mode) -> Value {
    let coach = catalog::coaches_offering(mode.id).next().expect("a coach");
    crate::sandbox::coaching_sample(coach, mode).expect("the sample parses")
}

#[test]
fn every_modes_type_reads_its_sample_and_publishes_its_schema() {
    let registry = SchemaRegistry::load().expect("schemas load");
    let (request, tracing) = (request(), Asked::default());
    for mode in MODES.iter() {
        let envelope = sample_envelope(mode);
        let cx = Ctx::new(&envelope, &request, "", &tracing);
        let mut out = Vec::new();
        let parsed = rules(mode.id).check(&cx, &mut out);
        assert!(parsed.is_ok(), "{}: {parsed:?}", mode.id);

        let mut published =
            registry.mode(mode.id).response.json()["properties"]["deliverable"].clone();
        published
            .as_object_mut()
            .expect("an object")
            .remove("description");
        assert_eq!(rules(mode.id).schema(), published, "{}", mode.id);
    }
}

#[test]
fn a_deliverable_of_the_wrong_shape_is_refused_naming_the_mode_and_the_field() {
    let mode = catalog::mode(ModeId::FunnelReview);
    let mut envelope = sample_envelope(mode);
    envelope["deliverable"]
        .as_object_mut()
        .expect("an object")
        .remove("quick_win");
    let (request, tracing) = (request(), Asked::default());
    let cx = Ctx::new(&envelope, &request, "", &tracing);
    let err = rules(mode.id)
        .check(&cx, &mut Vec::new())
        .expect_err("no quick_win");
    assert_eq!(
        err.to_string(),
        "must be a funnel_review deliverable: missing field `quick_win`"
    );
}

#[test]
fn an_integer_written_with_a_zero_fraction_is_still_an_integer() {
    // JSON Schema's "integer" accepts 2.0, so the type must too, or its rules would not run.
    let mode = catalog::mode(ModeId::DraftSop);
    let mut envelope = sample_envelope(mode);
    envelope["deliverable"]["steps"][1]["n"] = json!(2.0);
    envelope["deliverable"]["steps"][2]["n"] = json!(7.0);
    let (request, tracing) = (request(), Asked::default());
    let cx = Ctx::new(&envelope, &request, "", &tracing);
    let mut out = Vec::new();
    rules(mode.id).check(&cx, &mut out).expect("parses");
    let paths: Vec<&str> = out.iter().map(|v| v.path.as_str()).collect();
    assert!(paths.contains(&"/deliverable/steps/2/n"), "{out:?}");
    assert!(!paths.contains(&"/deliverable/steps/1/n"), "{out:?}");
}

/// Issue 26: a mode is one Rust file, its prompt and its sample. The test mode is written that
/// way, and every step a mode goes through works on it: its schema comes from its type, its
/// sample fits that schema, its rules run on the typed sample and report at typed pointers, its
/// field kinds name real fields, and its prompt names every field.
#[test]
fn a_mode_in_one_file_with_its_prompt_and_sample_goes_through_every_step() {
    let mode = Typed::<PickChannel>::new("pick_channel");
    let sample: Value =
        serde_json::from_str(include_str!("test_mode.json")).expect("the sample is JSON");
    let prompt = include_str!("test_mode.md");

    // The published schema, bounds and descriptions included, from the type.
    let schema = mode.schema();
    assert_eq!(schema["required"], json!(["channels", "pick", "why"]));
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(schema["properties"]["channels"]["minItems"], json!(1));
    assert_eq!(schema["properties"]["channels"]["maxItems"], json!(4));
    let item = &schema["properties"]["channels"]["items"];
    assert_eq!(item["properties"]["share_of_leads"]["maxLength"], json!(20));
    assert_eq!(
        item["properties"]["source"]["enum"],
        json!([
            "caller_supplied",
            "derived_from_caller_inputs",
            "not_provided"
        ])
    );
    assert_eq!(
        schema["properties"]["pick"]["description"],
        json!("One of channels[].name.")
    );
    let validator = jsonschema::draft202012::new(&schema).expect("compiles");
    assert!(validator.is_valid(&sample), "the sample fits its schema");
    assert!(!validator.is_valid(&json!({"channels": [], "pick": "x", "why": ""})));

    // The rules, on the typed sample: it passes, and the figures were traced where they stand.
    let request = request();
    let tracing = Asked::default();
    let envelope = json!({"deliverable": sample});
    let cx = Ctx::new(&envelope, &request, "", &tracing);
    let mut out = Vec::new();
    mode.check(&cx, &mut out).expect("the sample has the type");
    assert_eq!(out, vec![]);
    let asked: Vec<String> = tracing
        .sourced
        .borrow()
        .iter()
        .map(|a| a.0.clone())
        .collect();
    assert_eq!(
        asked,
        [
            "/deliverable/channels/0/share_of_leads",
            "/deliverable/channels/1/share_of_leads"
        ]
    );

    // Broken once each, reported at the field's pointer.
    let mut broken = envelope.clone();
    broken["deliverable"]["pick"] = json!("Billboards");
    broken["deliverable"]["channels"][1]["name"] = json!("referrals.");
    broken["deliverable"]["channels"][1]["share_of_leads"] = json!("40%");
    let cx = Ctx::new(&broken, &request, "", &tracing);
    let mut out = Vec::new();
    mode.check(&cx, &mut out).expect("still the type");
    let paths: Vec<&str> = out.iter().map(|v| v.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/deliverable/channels/1/share_of_leads",
            "/deliverable/pick",
            "/deliverable/channels/1/name"
        ]
    );

    // What the worker asks of its texts: which to trace how.
    let kinds = mode.kinds();
    assert_eq!(kinds.of("/channels/3/share_of_leads"), FieldKind::Sourced);
    assert_eq!(kinds.of("/why"), FieldKind::Proposal);
    assert_eq!(kinds.of("/pick"), FieldKind::Prose);

    // The prompt names every field the type has.
    for field in fields(&schema) {
        assert!(
            prompt.contains(&format!("`{field}`")),
            "the prompt omits {field}"
        );
    }
}

/// Every property name in a schema, nested ones included.
fn fields(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            out.push(k.clone());
            out.extend(fields(v));
        }
    }
    if let Some(items) = schema.get("items") {
        out.extend(fields(items));
    }
    out
}
