//! Fixed sandbox samples (spec 4, sandbox rules): one hand-written envelope per mode. No model,
//! database, queue, SMS or payment is touched. (The action's sample is built from the request
//! itself, on the API side.)

use crate::catalog::{Coach, MODES, Mode};
use serde_json::Value;

macro_rules! samples {
    ($($mode:literal),* $(,)?) => {
        &[$(($mode, include_str!(concat!("sandbox/", $mode, ".json")))),*]
    };
}

static COACHING: &[(&str, &str)] = crate::with_mode_ids!(samples!());

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("no sandbox sample for mode {0}")]
    Missing(&'static str),
    #[error("sandbox sample {name} is not valid JSON: {source}")]
    Parse {
        name: String,
        source: serde_json::Error,
    },
}

fn parse(name: &str, raw: &str) -> Result<Value, SandboxError> {
    serde_json::from_str(raw).map_err(|source| SandboxError::Parse {
        name: name.to_owned(),
        source,
    })
}

/// The sample envelope for `mode` as served by `coach`: the sample with `agent` set to the coach
/// in the path and `mode` to the requested mode.
pub fn coaching_sample(coach: &Coach, mode: &Mode) -> Result<Value, SandboxError> {
    let (_, raw) = COACHING
        .iter()
        .find(|(id, _)| *id == mode.id)
        .ok_or(SandboxError::Missing(mode.id))?;
    let mut sample = parse(mode.id, raw)?;
    if let Some(obj) = sample.as_object_mut() {
        obj.insert("agent".into(), Value::from(coach.id));
        obj.insert("mode".into(), Value::from(mode.id));
    }
    Ok(sample)
}

/// Checks at start-up that every mode has a sample that parses.
pub fn check_all() -> Result<(), SandboxError> {
    for m in MODES.iter() {
        let (_, raw) = COACHING
            .iter()
            .find(|(id, _)| *id == m.id)
            .ok_or(SandboxError::Missing(m.id))?;
        parse(m.id, raw)?;
    }
    Ok(())
}
