//! The coaching evaluation: clean answers written for distinct callers and defective answers
//! that each break one named rule, all judged by [`grove_worker::envelope::review`], the
//! function the engine uses (assembly, the published schema, every rule).
//!
//! Data under `bench/eval/`:
//! - the sixteen sandbox samples with their callers (`worker/src/envelope/tests/callers.json`)
//!   are clean answers `sandbox/<mode>`;
//! - `clean/<mode>.json`: more clean answers, `[{id, caller, request, answer}]`, where `answer`
//!   is what a model returns (no server keys);
//! - `defects/<mode>.json`: `[{rule, base, edits, expect}]`: the clean answer `base` after
//!   `edits` (`[{path, value}]` sets a JSON pointer; `{path, remove: true}` deletes it;
//!   `{path, append}` pushes onto a list; `{path, prefix}` / `{path, suffix}` extend a string)
//!   breaks `rule`, and a problem must be reported at a path starting with `expect`.
//!
//! No real model is called. Each answer also runs through the engine a paid call takes
//! ([`spend`]): the scripted model answers first with the corpus answer, then on a re-ask with the
//! clean answer for the same caller, and the model calls the engine made are counted.

use grove_common::catalog::{self, MODES, ModeId};
use grove_common::requests::{self, CoachingRequest};
use grove_common::{sandbox, schema::SchemaRegistry};
use grove_worker::envelope::{Caller, review};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod spend;

/// One clean answer and the request it answers.
#[derive(Clone, Debug)]
pub struct Clean {
    pub id: String,
    pub mode: ModeId,
    /// As the worker reads it back from its call.
    pub request: CoachingRequest,
    pub answer: Value,
}

/// What the run found for one answer.
#[derive(Debug)]
pub struct Outcome {
    pub mode: ModeId,
    pub id: String,
    /// For a defect, the rule it breaks; empty for a clean answer.
    pub rule: String,
    pub problems: Vec<String>,
    /// Defects: a problem was reported at the expected path. Clean: no problem at all.
    pub as_expected: bool,
    /// Model calls the engine made for this answer (see [`spend`]).
    pub model_calls: usize,
    /// The engine delivered an answer in the end (as written, repaired or re-asked).
    pub delivered: bool,
}

/// Per-mode tallies for the table.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub clean: usize,
    pub false_alarms: usize,
    pub defects: usize,
    pub caught: usize,
    pub model_calls: usize,
}

pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval")
}

const CALLERS: &str = include_str!("../../worker/src/envelope/tests/callers.json");

fn read(path: &Path) -> Result<Vec<Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Every clean answer: the sandbox samples, then `clean/<mode>.json`.
pub fn clean_answers() -> Result<Vec<Clean>, String> {
    let callers: Value = serde_json::from_str(CALLERS).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for m in MODES.iter() {
        let coach = catalog::coaches_offering(m.id).next().ok_or("no coach")?;
        let mut answer = sandbox::coaching_sample(coach, m).map_err(|e| e.to_string())?;
        if let Some(obj) = answer.as_object_mut() {
            for k in ["agent", "mode", "usage", "receipt", "sandbox"] {
                obj.remove(k);
            }
            // The model writes only its own plain-word gaps; the server adds the dotted ones.
            let own: Vec<Value> = obj["context_gaps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|g| g.as_str().is_some_and(|s| s.contains(' ')))
                .cloned()
                .collect();
            obj.insert("context_gaps".into(), Value::Array(own));
        }
        let c = &callers[m.id.as_str()];
        out.push(Clean {
            id: format!("sandbox/{}", m.id),
            mode: m.id,
            request: typed(json!({"mode": m.id, "context": c["context"],
                "messages": [{"role": "user", "content": c["message"]}]}))?,
            answer,
        });
        for case in read(&dir().join(format!("clean/{}.json", m.id)))? {
            let id = case["id"].as_str().ok_or("clean case without id")?;
            let mut request = case["request"].clone();
            request["mode"] = json!(m.id);
            out.push(Clean {
                id: id.to_owned(),
                mode: m.id,
                request: typed(request).map_err(|e| format!("{id}: {e}"))?,
                answer: case["answer"].clone(),
            });
        }
    }
    Ok(out)
}

/// A corpus request as the coaching engine gets it: read into its type.
fn typed(body: Value) -> Result<CoachingRequest, String> {
    requests::from_stored(&body)
        .map_err(|e| format!("request does not read as a coaching request: {e}"))
}

/// Applies one edit of a defect file.
fn apply(doc: &mut Value, edit: &Value) -> Result<(), String> {
    let path = edit["path"].as_str().ok_or("edit without path")?;
    let (parent, key) = path.rsplit_once('/').ok_or("path must start with /")?;
    let target = doc
        .pointer_mut(parent)
        .ok_or_else(|| format!("no {parent}"))?;
    if let Some(v) = edit.get("append") {
        let list = target
            .pointer_mut(&format!("/{key}"))
            .and_then(Value::as_array_mut)
            .ok_or_else(|| format!("{path} is not a list"))?;
        list.push(v.clone());
        return Ok(());
    }
    for (op, front) in [("prefix", true), ("suffix", false)] {
        if let Some(add) = edit.get(op).and_then(Value::as_str) {
            let slot = target
                .pointer_mut(&format!("/{key}"))
                .ok_or(format!("no {path}"))?;
            let old = slot.as_str().ok_or(format!("{path} is not a string"))?;
            *slot = Value::from(if front {
                format!("{add}{old}")
            } else {
                format!("{old}{add}")
            });
            return Ok(());
        }
    }
    let remove = edit.get("remove") == Some(&Value::Bool(true));
    match target {
        Value::Object(map) if remove => map.remove(key).map(drop).ok_or(format!("no {path}")),
        Value::Object(map) => {
            map.insert(key.to_owned(), edit["value"].clone());
            Ok(())
        }
        Value::Array(list) => {
            let i: usize = key.parse().map_err(|_| format!("bad index in {path}"))?;
            if i >= list.len() {
                return Err(format!("no {path}"));
            }
            if remove {
                list.remove(i);
            } else {
                list[i] = edit["value"].clone();
            }
            Ok(())
        }
        _ => Err(format!("{parent} holds no keys")),
    }
}

/// One answer to judge: the clean answer it is written for and the answer itself.
struct Case<'a> {
    clean: &'a Clean,
    id: String,
    rule: String,
    expect: Option<String>,
    answer: Value,
}

/// Runs the whole corpus: each answer judged by [`review`], then run through the engine.
pub fn run() -> Result<Vec<Outcome>, String> {
    let schemas = Arc::new(SchemaRegistry::load().map_err(|e| e.to_string())?);
    let clean = clean_answers()?;
    let mut cases: Vec<Case> = clean
        .iter()
        .map(|c| Case {
            clean: c,
            id: c.id.clone(),
            rule: String::new(),
            expect: None,
            answer: c.answer.clone(),
        })
        .collect();
    for m in MODES.iter() {
        let file = dir().join(format!("defects/{}.json", m.id));
        for (i, d) in read(&file)?.into_iter().enumerate() {
            let rule = d["rule"]
                .as_str()
                .ok_or_else(|| format!("{}#{i}: no rule", m.id))?;
            let base = d["base"]
                .as_str()
                .ok_or_else(|| format!("{}#{i}: no base", m.id))?;
            let c = clean
                .iter()
                .find(|c| c.id == base && c.mode == m.id)
                .ok_or_else(|| format!("{}#{i}: no clean answer {base}", m.id))?;
            let mut answer = c.answer.clone();
            for e in d["edits"].as_array().into_iter().flatten() {
                apply(&mut answer, e).map_err(|e| format!("{}#{i} ({rule}): {e}", m.id))?;
            }
            cases.push(Case {
                clean: c,
                id: format!("{}#{i}", m.id),
                rule: rule.to_owned(),
                expect: Some(d["expect"].as_str().unwrap_or("/").to_owned()),
                answer,
            });
        }
    }
    let coach_of = |mode: ModeId| {
        catalog::coaches_offering(mode)
            .next()
            .map_or(catalog::CoachId::Mary, |c| c.id)
    };
    let judge = |c: &Clean, answer: Value| {
        let receipt = json!({"id": "eval", "url": "/api/v1/receipts/eval", "expires_at": null});
        let response = &schemas.mode(c.mode).response;
        let mode = catalog::mode(c.mode);
        review(
            response,
            coach_of(c.mode),
            mode,
            &Caller::of(mode, &c.request),
            answer,
            (0, 0),
            receipt,
        )
        .problems
        .into_iter()
        .map(|p| format!("{} {}", p.path, p.message))
        .collect::<Vec<String>>()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    runtime.block_on(async {
        let rig = spend::Rig::new(Arc::clone(&schemas)).await?;
        let mut out = Vec::with_capacity(cases.len());
        for case in cases {
            let c = case.clean;
            let problems = judge(c, case.answer.clone());
            let as_expected = match &case.expect {
                None => problems.is_empty(),
                Some(expect) => problems.iter().any(|p| p.starts_with(expect.as_str())),
            };
            let spent = rig
                .spend(
                    coach_of(c.mode),
                    c.mode,
                    &c.request,
                    case.answer,
                    c.answer.clone(),
                )
                .await
                .map_err(|e| format!("{}: {e}", case.id))?;
            out.push(Outcome {
                mode: c.mode,
                id: case.id,
                rule: case.rule,
                problems,
                as_expected,
                model_calls: spent.model_calls,
                delivered: spent.delivered,
            });
        }
        Ok(out)
    })
}

/// Per-mode tallies, in catalog order.
pub fn tally(outcomes: &[Outcome]) -> Vec<(ModeId, Tally)> {
    MODES
        .iter()
        .map(|m| {
            let mut t = Tally::default();
            for o in outcomes.iter().filter(|o| o.mode == m.id) {
                t.model_calls += o.model_calls;
                if o.rule.is_empty() {
                    t.clean += 1;
                    t.false_alarms += usize::from(!o.as_expected);
                } else {
                    t.defects += 1;
                    t.caught += usize::from(o.as_expected);
                }
            }
            (m.id, t)
        })
        .collect()
}
