//! A mode written only for the tests, as every mode is written: in one file, its deliverable
//! with the bounds its schema publishes, where its figures come from, and its rules. Its prompt
//! is `test_mode.md` and its sample `test_mode.json`, beside this file.

use crate::modes::path::{at, pattern};
use crate::modes::rules::{distinct, push};
use crate::modes::words::same;
use crate::modes::{Ctx, Deliverable, Kinds, Source};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PickChannel {
    /// The channels the caller's leads come from, most leads first.
    #[schemars(length(min = 1, max = 4))]
    pub channels: Vec<ChannelShare>,
    /// One of channels[].name.
    #[schemars(length(max = 60))]
    pub pick: String,
    #[schemars(length(max = 200))]
    pub why: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChannelShare {
    #[schemars(length(max = 60))]
    pub name: String,
    #[schemars(length(max = 20))]
    pub share_of_leads: String,
    pub source: Source,
}

impl Deliverable for PickChannel {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![pattern!(Self: why)],
            sourced: vec![pattern!(Self: channels[_].share_of_leads)],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        for (i, c) in self.channels.iter().enumerate() {
            cx.tracing.sourced(
                &at!(self.channels[i].share_of_leads),
                c.source,
                &c.share_of_leads,
                out,
            );
        }
        if !self.channels.iter().any(|c| same(&c.name, &self.pick)) {
            push(out, at!(self.pick), "must be one of channels[].name");
        }
        distinct(
            self.channels.iter().map(|c| c.name.as_str()),
            |i| at!(self.channels[i].name),
            "channel",
            out,
        );
    }
}
