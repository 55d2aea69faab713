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
mod shared;
mod systems;

pub use outbound::MERGE_TOKENS;
pub use people::STATUS_BANDS as AUDIT_STATUS_BANDS;

pub use shared::Ctx;

use grove_common::{catalog::ModeId, schema::Violation};

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
