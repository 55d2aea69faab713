//! What the model is told after an answer we cannot deliver (llm.md §5: keep the conversation,
//! append the model's own answer as the assistant turn, then say what to fix).

use grove_common::schema::Violation;

/// Most violations listed; the rest are counted. A long list costs tokens and the model fixes
/// the first ones anyway; the next attempt reports whatever is left.
const MAX_LINES: usize = 20;

/// "Your answer above breaks these rules…" followed by one `path: rule` line per violation,
/// schema and rule problems in one list, so one re-ask can fix them all.
pub fn reask_message(violations: &[Violation]) -> String {
    let mut out = String::from(
        "Your answer above breaks the schema or the rules in these places. Return the whole \
         corrected JSON object, changing only what the list requires and keeping every other \
         field as it was:\n",
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

/// After an answer that did not parse: the assistant turn before this one holds what the model
/// wrote (clipped); this says why it cannot be used.
pub fn invalid_json_message(problem: &str, wrote_something: bool) -> String {
    let what = if wrote_something {
        format!("Your answer above is not valid JSON ({problem}).")
    } else {
        "Your previous answer was empty.".to_owned()
    };
    format!(
        "{what} Answer again with the whole answer as one JSON object that follows the schema \
         exactly: nothing before or after it, no Markdown fence, every string closed."
    )
}

/// Added to the system prompt for the one retry after an answer cut off at the output limit.
pub const SHORTER_ANSWER: &str = "# Your previous answer was cut off\n\n\
    It ran past the output limit, so it could not be used. Write a shorter one: keep `reply` \
    well under the word target, use the fewest list items the limits allow, keep every string \
    brief, and write nothing outside the JSON object.";

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

    #[test]
    fn invalid_json_says_why_and_asks_for_the_whole_object() {
        let text = invalid_json_message("EOF while parsing a string at line 1 column 40", true);
        assert!(text.starts_with("Your answer above is not valid JSON (EOF while parsing"));
        assert!(text.contains("one JSON object"));
        assert!(invalid_json_message("x", false).starts_with("Your previous answer was empty."));
    }
}
