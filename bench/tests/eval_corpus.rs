//! The evaluation corpus as a regression test: every clean answer (written for a distinct
//! caller) is delivered, and every defective answer is refused at the path of the rule it
//! breaks, and each costs the model calls the engine should spend on it. `cargo run -p
//! grove-bench --bin eval` prints the same run as a table.

use grove_bench::eval::{run, tally};

#[test]
fn every_defect_is_caught_and_no_clean_answer_is_refused() {
    let outcomes = run().expect("the corpus loads");
    let wrong: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.as_expected)
        .map(|o| format!("{} [{}]: {:?}", o.id, o.rule, o.problems))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // On the engine a paid call runs: a clean answer costs one model call; a defect is repaired
    // safely (one call) or fixed by one re-ask answered with the clean answer (two), and every
    // call ends delivered.
    for o in &outcomes {
        let most = if o.rule.is_empty() { 1 } else { 2 };
        assert!(
            o.delivered && (1..=most).contains(&o.model_calls),
            "{} [{}]: {} model calls, delivered: {}",
            o.id,
            o.rule,
            o.model_calls,
            o.delivered
        );
    }

    // The corpus keeps its promised size: 80+ defects across all 16 modes, 32+ clean answers
    // for distinct callers.
    let rows = tally(&outcomes);
    assert_eq!(rows.len(), 16);
    for (mode, t) in &rows {
        assert!(t.defects >= 5 && t.clean >= 2, "{mode}: {t:?}");
    }
    let defects: usize = rows.iter().map(|(_, t)| t.defects).sum();
    let clean: usize = rows.iter().map(|(_, t)| t.clean).sum();
    assert!(
        defects >= 80 && clean >= 32,
        "{defects} defects, {clean} clean"
    );
}

#[test]
fn every_clean_answer_is_written_for_a_different_caller() {
    let clean = grove_bench::eval::clean_answers().expect("the corpus loads");
    let mut messages: Vec<String> = clean
        .iter()
        .map(|c| format!("{:?}", c.request.messages))
        .collect();
    messages.sort();
    messages.dedup();
    assert_eq!(
        messages.len(),
        clean.len(),
        "two clean answers share a caller"
    );
}
