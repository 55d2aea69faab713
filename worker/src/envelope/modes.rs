//! The worker's side of each mode's rules (`grove_common::modes`, one module per mode): the
//! figure tracing they ask for ([`Tracing`]), over what the caller gave and what `numbers`
//! shows, both worked out once per answer by `check`.

use super::figures::{self, Figure};
use super::prose::{self, Pool};
use super::text::push;
use super::trace::display;
use grove_common::modes::{Source, Tracing, Written};
use grove_common::schema::Violation;

/// [`Tracing`] over one answer's figures.
pub struct Traced<'a> {
    /// The caller's figures (context and user messages).
    pub caller: &'a [Figure],
    /// What prose may cite: the caller's figures and everything `numbers` shows.
    pub pool: &'a Pool<'a>,
}

impl Tracing for Traced<'_> {
    fn trace(&self, path: &str, text: &str, out: &mut Vec<Violation>) {
        prose::check(path, text, self.pool, false, out);
    }

    fn sourced(&self, path: &str, source: Source, text: &str, out: &mut Vec<Violation>) {
        let unknown = text.trim().to_lowercase().starts_with("unknown");
        // No stated-constant allowance here: "6 hours" per run is a fact about the business.
        let chars: Vec<char> = text.chars().collect();
        let spans = figures::spans(text);
        match source {
            Source::NotProvided if !spans.is_empty() => push(
                out,
                path,
                "must hold no figure when source is not_provided: write \"unknown\"",
            ),
            Source::CallerSupplied | Source::DerivedFromCallerInputs if unknown => {
                push(out, path, "is unknown, so source must be not_provided")
            }
            Source::CallerSupplied => {
                // "42% (21 of 50)": a rate written beside the caller's own count is theirs too.
                let ratios = prose::ratios(&chars, &spans);
                for sp in &spans {
                    let f = &sp.figure;
                    let own = self.caller.iter().any(|c| c.matches(f))
                        || (f.percent
                            && ratios.iter().any(|r| Figure::exact(r * 100.0).matches(f)));
                    if !own {
                        let written: String = chars[sp.chars.clone()].iter().collect();
                        push(
                            out,
                            path,
                            format!(
                                "{written} is not the caller's own figure, but source is caller_supplied"
                            ),
                        );
                    }
                }
            }
            Source::DerivedFromCallerInputs => prose::check(path, text, self.pool, false, out),
            Source::NotProvided => {}
        }
    }

    fn shows_rate(&self, pct: f64) -> bool {
        let shown = Figure {
            value: pct,
            half_step: 0.5,
            percent: true,
            currency: false,
        };
        self.pool.cited.iter().any(|k| k.matches(&shown))
    }

    fn figures(&self, text: &str) -> Vec<Written> {
        figures::extract(text)
            .into_iter()
            .map(|f| Written {
                value: f.value,
                percent: f.percent,
                callers: self.caller.iter().any(|k| k.matches(&f)),
                shown: display(&f),
            })
            .collect()
    }
}
