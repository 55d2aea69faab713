//! Fixed sandbox samples (spec 4, sandbox rules): one hand-written envelope per mode. No model,
//! database, queue, SMS or payment is touched. (The action's sample is built from the request
//! itself, on the API side.)

use crate::catalog::{ByMode, Coach, MODES, Mode, ModeId};
use serde_json::Value;

macro_rules! samples {
    ($($variant:ident $id:ident),* $(,)?) => {
        ByMode::new([$(include_str!(concat!("sandbox/", stringify!($id), ".json"))),*])
    };
}

static COACHING: ByMode<&str> = crate::modes!(samples!());

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox sample {mode} is not valid JSON: {source}")]
    Parse {
        mode: ModeId,
        source: serde_json::Error,
    },
}

fn parse(mode: ModeId) -> Result<Value, SandboxError> {
    serde_json::from_str(COACHING[mode]).map_err(|source| SandboxError::Parse { mode, source })
}

/// The sample envelope for `mode` as served by `coach`: the sample with `agent` set to the coach
/// in the path and `mode` to the requested mode.
pub fn coaching_sample(coach: &Coach, mode: &Mode) -> Result<Value, SandboxError> {
    let mut sample = parse(mode.id)?;
    if let Some(obj) = sample.as_object_mut() {
        obj.insert("agent".into(), Value::from(coach.id.as_str()));
        obj.insert("mode".into(), Value::from(mode.id.as_str()));
    }
    Ok(sample)
}

/// Checks at start-up that every mode's sample parses.
pub fn check_all() -> Result<(), SandboxError> {
    for m in MODES.iter() {
        parse(m.id)?;
    }
    Ok(())
}
