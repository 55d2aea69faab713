//! The user message that sends a failed answer back to the model (llm.md §5: keep the
//! conversation, append the invalid answer as the assistant turn, then this list).

use grove_common::schema::Violation;

/// Most violations listed; the rest are counted. A long list costs tokens and the model fixes
/// the first ones anyway; the next attempt reports whatever is left.
const MAX_LINES: usize = 20;

/// "Your answer broke these rules…" followed by one `path: rule` line per violation.
pub fn reask_message(violations: &[Violation]) -> String {
    let mut out = String::from(
        "Your answer broke these rules. Return the whole corrected JSON object, changing only \
         what the list requires and keeping every other field as it was:\n",
    );
    for v in violations.iter().take(MAX_LINES) {
        let path = if v.path.is_empty() {
            "(whole answer)"
        } else {
            &v.path
        };
        out.push_str(&format!("- {path}: {}\n", v.message));
    }
    if violations.len() > MAX_LINES {
        out.push_str(&format!("- …and {} more\n", violations.len() - MAX_LINES));
    }
    if violations.iter().any(|v| v.path.starts_with("/numbers")) {
        out.push_str(
            "Numbers must come only from the figures I gave you; if a number cannot be traced, \
         remove that item rather than inventing a source.",
        );
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_each_violation_by_path_and_caps_the_list() {
        let one = vec![Violation::new(
            "/deliverable/ranked_levers/0/lever",
            "must equal thinking.lever",
        )];
        let text = reask_message(&one);
        assert!(
            text.ends_with("\n- /deliverable/ranked_levers/0/lever: must equal thinking.lever")
        );
        let many: Vec<Violation> = (0..25)
            .map(|i| Violation::new(format!("/caveats/{i}"), "must be exactly one sentence"))
            .collect();
        let text = reask_message(&many);
        assert_eq!(text.lines().filter(|l| l.starts_with("- /")).count(), 20);
        assert!(text.contains("…and 5 more"));
        assert!(
            reask_message(&[Violation::new("", "must be an object")]).contains("(whole answer)")
        );
    }
}
