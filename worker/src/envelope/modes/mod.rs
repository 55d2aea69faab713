//! Per-mode cross-field rules: the "Rules" of each `worker/prompts/modes/*.md`, spec 2.6 and
//! CONTRACT 8, one checker per family of modes. The mode is picked by an exhaustive `match` on
//! [`ModeId`], so a new mode cannot skip its rules unnoticed.

mod accountability;
mod customers;
mod funnel;
mod growth;
mod operations;
mod outbound;
mod people;
mod sales;
mod systems;

pub use outbound::MERGE_TOKENS;

use super::figures::{self, Figure};
use super::prose::{self, Pool};
use super::text::{self, push};
use grove_common::{catalog::ModeId, schema::Violation};
use serde_json::Value;

/// What a mode's rules may look at besides the deliverable.
pub struct Ctx<'a> {
    pub envelope: &'a Value,
    pub d: &'a Value,
    /// The caller's figures (context and user messages).
    pub caller: &'a [Figure],
    /// What prose may cite: the caller's figures and everything `numbers` shows.
    pub pool: &'a Pool<'a>,
    /// The caller's words (user messages and context strings), for "the caller said it" rules.
    pub caller_text: &'a str,
}

/// Violations of `mode`'s own rules.
pub fn check(mode: ModeId, cx: &Ctx, out: &mut Vec<Violation>) {
    match mode {
        ModeId::DiagnoseGrowth => growth::diagnose(cx, out),
        ModeId::DesignOffer => growth::offer(cx, out),
        ModeId::RewritePricing => growth::pricing(cx, out),
        ModeId::FunnelReview => funnel::funnel(cx, out),
        ModeId::WriteOutboundSequence => outbound::check(cx.d, out),
        ModeId::AuditFunction => people::audit(cx, out),
        ModeId::HandleObjections => sales::objections(cx, out),
        ModeId::PositionAgainstAlternatives => sales::position(cx, out),
        ModeId::PlanCapacity => operations::capacity(cx, out),
        ModeId::DraftSop => operations::sop(cx, out),
        ModeId::RescueChurn => customers::churn(cx, out),
        ModeId::PlanOnboarding => customers::onboarding(cx, out),
        ModeId::DecideStack => systems::stack(cx, out),
        ModeId::MapAutomation => systems::automation(cx, out),
        ModeId::ScopeRole => people::role(cx, out),
        ModeId::MapAccountability => accountability::accountability(cx, out),
    }
}

/// How the figures of one deliverable text are traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// The coach's own proposal (a target, a trigger, a plan, the wording of an offer): its
    /// figures need not trace.
    Proposal,
    /// A statement of the caller's facts: every figure traces, with no proposal allowance.
    Fact,
    /// Traced by its item's `source` ([`sourced`]) in the mode's rules.
    Sourced,
    /// Ordinary prose: figures trace, or are proposals introduced by a target word.
    Prose,
}

/// Per mode: (proposal fields, fact fields, sourced fields), as pointers relative to the
/// deliverable where `*` stands for any key or index.
fn fields(mode: ModeId) -> [&'static [&'static str]; 3] {
    match mode {
        ModeId::DiagnoseGrowth => [&[], &["/evidence/*"], &[]],
        ModeId::DesignOffer => [
            &[
                "/offer_name",
                "/promise",
                "/guarantee",
                "/inclusions/*",
                "/bonuses/*",
            ],
            &[],
            &[],
        ],
        ModeId::RewritePricing => [
            &[
                "/recommended_tiers/*/name",
                "/recommended_tiers/*/for_whom",
                "/recommended_tiers/*/includes/*",
                "/migration_note",
            ],
            &["/current_read", "/expected_effect"],
            &[],
        ],
        ModeId::FunnelReview => [
            &["/stages/*/fix", "/quick_win"],
            &["/stages/*/leak", "/biggest_leak"],
            &[],
        ],
        ModeId::WriteOutboundSequence => [
            &[
                "/follow_up_rule",
                "/personalization_inputs/*",
                "/emails/*/goal",
            ],
            &[],
            &[],
        ],
        ModeId::AuditFunction => [
            &["/findings/*/fix", "/quick_wins/*", "/top_priority"],
            &["/findings/*/evidence"],
            &[],
        ],
        ModeId::HandleObjections => [
            &["/pre_empt", "/disqualifiers/*"],
            &["/objections/*/evidence_to_bring"],
            &["/objections/*/concession_allowed"],
        ],
        ModeId::PositionAgainstAlternatives => {
            [&["/claims_to_avoid/*", "/proof_to_collect/*"], &[], &[]]
        }
        ModeId::PlanCapacity => [
            &["/add_capacity_trigger", "/assumptions/*"],
            &[],
            &[
                "/constraints/*/capacity",
                "/constraints/*/demand_at_target",
                "/growth_target/statement",
            ],
        ],
        ModeId::DraftSop => [
            &[
                "/title",
                "/scope/*",
                "/trigger",
                "/roles/*/*",
                "/prerequisites/*",
                "/steps/*/*",
                "/quality_checks/*",
                "/exceptions/*/*",
                "/records/*",
            ],
            &[],
            &[],
        ],
        ModeId::RescueChurn => [
            &[
                "/save_plays/*/play",
                "/accept_policy",
                "/early_warning/*/*",
                "/exit_questions/*",
            ],
            &["/churn_segments/*/rationale"],
            &[
                "/churn_segments/*/share",
                "/churn_segments/*/monthly_revenue_at_stake",
            ],
        ],
        ModeId::PlanOnboarding => [
            &[
                "/first_value/*",
                "/milestones/*/*",
                "/touchpoints/*/*",
                "/stall_signals/*/*",
                "/day14_exit",
            ],
            &[],
            &[],
        ],
        ModeId::DecideStack => [
            &["/decision/statement", "/revisit_when"],
            &["/context"],
            &["/options/*/cost", "/switching_cost/estimate"],
        ],
        ModeId::MapAutomation => [
            &["/first_pilot/success_metric"],
            &[],
            &["/candidates/*/time_per_run", "/candidates/*/hours_saved"],
        ],
        ModeId::ScopeRole => [
            &[
                "/role_title",
                "/mission",
                "/outcomes/*/*",
                "/responsibilities/*",
                "/competencies/*",
                "/revisit_when",
                "/agent_brief/*",
                "/agent_brief/*/*",
            ],
            &[],
            &["/work_mix/*/share"],
        ],
        ModeId::MapAccountability => [
            &[
                "/outcomes/*/outcome",
                "/outcomes/*/metric",
                "/seats/*/responsibilities/*",
                "/conflicts/*/resolution",
            ],
            &[],
            &[],
        ],
    }
}

/// The kind of the deliverable text at `pointer` (relative to the deliverable).
pub fn field_kind(mode: ModeId, pointer: &str) -> FieldKind {
    let parts: Vec<&str> = pointer.split('/').collect();
    let hit = |list: &[&str]| {
        list.iter().any(|p| {
            let pat: Vec<&str> = p.split('/').collect();
            pat.len() == parts.len() && pat.iter().zip(&parts).all(|(a, b)| *a == "*" || a == b)
        })
    };
    let [proposals, facts, sourced] = fields(mode);
    if hit(sourced) {
        FieldKind::Sourced
    } else if hit(proposals) {
        FieldKind::Proposal
    } else if hit(facts) {
        FieldKind::Fact
    } else {
        FieldKind::Prose
    }
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
