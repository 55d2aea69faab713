//! audit_function: statuses that agree with their scores, an overall score a critical finding
//! holds down, and a top priority that is one of the findings.

use super::path::{at, pattern};
use super::rules::{distinct, name, push};
use super::words::content_words;
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::AuditFunction,
    tier: Tier::Deep,
    summary: "Scores a business function 0-100 with findings, a top priority and quick wins.",
    purpose: "scores a function 0-100",
    recommended_context: &[
        "company.what_they_sell",
        "company.stage",
        "metrics.monthly_revenue_usd",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AuditFunction {
    #[schemars(length(max = 80))]
    pub discipline: String,
    /// Score 0-100.
    #[schemars(range(min = 0, max = 100))]
    pub overall_score: f64,
    #[schemars(length(min = 2, max = 7))]
    pub findings: Vec<Finding>,
    #[schemars(length(max = 240))]
    pub top_priority: String,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub quick_wins: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Finding {
    #[schemars(length(max = 80))]
    pub area: String,
    /// Score 0-100.
    #[schemars(range(min = 0, max = 100))]
    pub score: f64,
    /// Agrees with the score: critical 0-24, weak 25-49, adequate 50-74, strong 75-100.
    pub status: Status,
    #[schemars(length(max = 300))]
    pub evidence: String,
    #[schemars(length(max = 240))]
    pub fix: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Strong,
    Adequate,
    Weak,
    Critical,
}

/// The score band each audit status stands for (inclusive): a critical finding scores low, a
/// strong one high (prompt: audit_function). Quartiles of the 0–100 scale.
pub const STATUS_BANDS: [(&str, f64, f64); 4] = [
    ("critical", 0.0, 24.0),
    ("weak", 25.0, 49.0),
    ("adequate", 50.0, 74.0),
    ("strong", 75.0, 100.0),
];

/// The highest `overall_score` an audit with a critical finding may give is below this.
pub const CRITICAL_HOLDS_BELOW: f64 = 50.0;

impl Deliverable for AuditFunction {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: findings[_].fix),
                pattern!(Self: quick_wins[_]),
                pattern!(Self: top_priority),
            ],
            facts: vec![pattern!(Self: findings[_].evidence)],
            ..Kinds::default()
        }
    }

    fn check(&self, _: &Ctx, out: &mut Vec<Violation>) {
        let findings = &self.findings;
        for (i, f) in findings.iter().enumerate() {
            let score = f.score;
            let band = STATUS_BANDS
                .iter()
                .find(|(_, lo, hi)| score >= *lo && score < *hi + 1.0);
            if let Some((expected, _, _)) = band
                && *expected != name(f.status)
            {
                push(
                    out,
                    at!(self.findings[i].status),
                    format!(
                        "must be {expected} for a score of {score} (critical 0–24, weak 25–49, \
                         adequate 50–74, strong 75–100)"
                    ),
                );
            }
        }
        // "any `critical` finding holds `overall_score` below 50" (prompt: audit_function). The
        // status is the model's own label; a status that disagrees with its score is reported
        // above.
        let critical = findings.iter().position(|f| f.status == Status::Critical);
        if let Some(i) = critical
            && self.overall_score >= CRITICAL_HOLDS_BELOW
        {
            push(
                out,
                at!(self.overall_score),
                format!(
                    "must be below {CRITICAL_HOLDS_BELOW}: findings/{i} is critical, and a \
                     critical finding holds overall_score below {CRITICAL_HOLDS_BELOW}"
                ),
            );
        }
        let words = content_words(&self.top_priority);
        let names_one = findings.iter().any(|f| {
            let about = format!("{} {}", f.area, f.fix);
            content_words(&about).iter().any(|w| words.contains(w))
        });
        if !findings.is_empty() && !names_one {
            push(
                out,
                at!(self.top_priority),
                "must be one of the findings (name its area or fix)",
            );
        }
        distinct(
            findings.iter().map(|f| f.area.as_str()),
            |i| at!(self.findings[i].area),
            "area",
            out,
        );
        distinct(
            self.quick_wins.iter().map(String::as_str),
            |i| at!(self.quick_wins[i]),
            "quick win",
            out,
        );
    }
}
