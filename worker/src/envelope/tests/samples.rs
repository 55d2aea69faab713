//! Every sandbox sample is an envelope we would deliver: it passes the rules, its imaginary
//! caller's context leaves exactly its dotted gaps missing, and assembling its model part
//! reproduces it.

use super::*;
use crate::envelope::{assemble, check, missing_recommended, model_schema, provider_schema};
use grove_common::config::LlmProviderKind;

#[test]
fn every_sample_passes_the_rules_for_its_caller() {
    for m in all_modes() {
        let v = check(m, &request(m.id), &sample(m.id));
        assert_eq!(v, vec![], "{}", m.id);
    }
}

#[test]
fn every_caller_fixture_leaves_exactly_the_samples_dotted_gaps_missing() {
    for m in all_modes() {
        let s = sample(m.id);
        let dotted: Vec<&str> = s["context_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|g| m.recommended_context.contains(g))
            .collect();
        assert_eq!(missing_recommended(m, &request(m.id)), dotted, "{}", m.id);
    }
}

#[test]
fn every_caller_fixture_is_a_valid_request() {
    for m in all_modes() {
        let v = registry()
            .mode(m.id)
            .request
            .violations(&request_json(m.id));
        assert_eq!(v, vec![], "{}", m.id);
    }
}

#[test]
fn assembling_a_samples_model_part_reproduces_the_sample() {
    for m in all_modes() {
        let s = sample(m.id);
        let out = assemble(
            s["agent"].as_str().unwrap().parse().unwrap(),
            m,
            &request(m.id),
            model_part(&s),
            (0, 0),
            s["receipt"].clone(),
        );
        assert_eq!(out, s, "{}", m.id);
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, crate::envelope::ENVELOPE_ORDER.to_vec(), "{}", m.id);
        let schema = &registry().mode(m.id).response;
        assert_eq!(schema.violations(&out), vec![], "{}", m.id);
    }
}

#[test]
fn a_samples_model_part_fits_the_model_schema_and_both_provider_copies() {
    for m in all_modes() {
        let published = registry().mode(m.id).response.json();
        let model = model_schema(published);
        let part = model_part(&sample(m.id));
        for schema in [
            model.clone(),
            provider_schema(&model, LlmProviderKind::OpenAi),
            provider_schema(&model, LlmProviderKind::Anthropic),
        ] {
            let validator = jsonschema::draft202012::new(&schema).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&part)
                .map(|e| format!("{} {e}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", m.id);
        }
    }
}
