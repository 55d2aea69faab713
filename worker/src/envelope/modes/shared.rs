//! What every mode checker shares: the context it reads and the rules several modes apply
//! (texts tagged with a `source`, lists whose names must differ). The dispatcher (`mod.rs`) and
//! the checkers both import this module; neither imports the other's helpers.

use crate::envelope::figures::{self, Figure};
use crate::envelope::prose::{self, Pool};
use crate::envelope::text::{self, push};
use grove_common::{requests::CoachingRequest, schema::Violation};
use serde_json::Value;

/// What a mode's rules may look at besides the deliverable.
pub struct Ctx<'a> {
    pub envelope: &'a Value,
    /// The paid request as the caller sent it.
    pub request: &'a CoachingRequest,
    pub d: &'a Value,
    /// The caller's figures (context and user messages).
    pub caller: &'a [Figure],
    /// What prose may cite: the caller's figures and everything `numbers` shows.
    pub pool: &'a Pool<'a>,
    /// The caller's words (user messages and context strings), for "the caller said it" rules.
    pub caller_text: &'a str,
}

/// Where a figure in a `source`-tagged text comes from (CONTRACT 8's SRC): `caller_supplied`
/// text holds only the caller's own figures, `derived_from_caller_inputs` text traces like prose
/// without proposals, `not_provided` text holds no figure at all, and "unknown" is only ever
/// `not_provided`.
pub fn sourced(cx: &Ctx, item: &Value, at: &str, fields: &[&str], out: &mut Vec<Violation>) {
    let source = text::text(item, "source");
    for field in fields {
        let Some(s) = text::text(item, field) else {
            continue;
        };
        let path = format!("{at}/{field}");
        let unknown = s.trim().to_lowercase().starts_with("unknown");
        // No stated-constant allowance here: "6 hours" per run is a fact about the business.
        let chars: Vec<char> = s.chars().collect();
        let spans = figures::spans(s);
        match source {
            Some("not_provided") if !spans.is_empty() => push(
                out,
                path,
                "must hold no figure when source is not_provided: write \"unknown\"",
            ),
            Some("caller_supplied" | "derived_from_caller_inputs") if unknown => {
                push(out, path, "is unknown, so source must be not_provided")
            }
            Some("caller_supplied") => {
                // "42% (21 of 50)": a rate written beside the caller's own count is theirs too.
                let ratios = prose::ratios(&chars, &spans);
                for sp in &spans {
                    let f = &sp.figure;
                    let own = cx.caller.iter().any(|c| c.matches(f))
                        || (f.percent
                            && ratios.iter().any(|r| Figure::exact(r * 100.0).matches(f)));
                    if !own {
                        let written: String = chars[sp.chars.clone()].iter().collect();
                        push(
                            out,
                            path.clone(),
                            format!(
                                "{written} is not the caller's own figure, but source is caller_supplied"
                            ),
                        );
                    }
                }
            }
            Some("derived_from_caller_inputs") => prose::check(&path, s, cx.pool, false, out),
            _ => {}
        }
    }
}

/// Names in a list that repeat (after [`text::same`]), reported at the later item.
pub fn distinct(list: &[Value], key: Option<&str>, at: &str, what: &str, out: &mut Vec<Violation>) {
    let names: Vec<Option<&str>> = list
        .iter()
        .map(|v| match key {
            Some(k) => text::text(v, k),
            None => v.as_str(),
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let Some(name) = name else { continue };
        if names[..i].iter().flatten().any(|n| text::same(n, name)) {
            let path = match key {
                Some(k) => format!("{at}/{i}/{k}"),
                None => format!("{at}/{i}"),
            };
            push(
                out,
                path,
                format!("repeats an earlier {what}: each must be different"),
            );
        }
    }
}
