//! The coaching evaluation: prints, per mode, the clean answers and the false alarms on them,
//! the defective answers and how many were caught, and the model calls the engine spent on them
//! (each answer runs through the paid call's engine against a scripted model; see
//! `grove_bench::eval`).
//!
//! `cargo run -p grove-bench --bin eval` (add `-- -v` to list every problem found).

use grove_bench::eval::{Tally, run, tally};

fn main() {
    let verbose = std::env::args().any(|a| a == "-v");
    let outcomes = match run() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("eval corpus: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{:<30} {:>6} {:>12} {:>8} {:>7} {:>12}",
        "mode", "clean", "false alarms", "defects", "caught", "model calls"
    );
    let rows = tally(&outcomes);
    let mut total = Tally::default();
    for (mode, t) in &rows {
        println!(
            "{:<30} {:>6} {:>12} {:>8} {:>7} {:>12}",
            mode.as_str(),
            t.clean,
            t.false_alarms,
            t.defects,
            t.caught,
            t.model_calls
        );
        total.clean += t.clean;
        total.false_alarms += t.false_alarms;
        total.defects += t.defects;
        total.caught += t.caught;
        total.model_calls += t.model_calls;
    }
    println!(
        "{:<30} {:>6} {:>12} {:>8} {:>7} {:>12}",
        "total", total.clean, total.false_alarms, total.defects, total.caught, total.model_calls
    );
    let pct = 100.0 * total.caught as f64 / total.defects.max(1) as f64;
    println!(
        "defects caught: {pct:.1}%; false alarms: {}",
        total.false_alarms
    );
    let defects = || outcomes.iter().filter(|o| !o.rule.is_empty());
    let with = |n: usize| defects().filter(|o| o.model_calls == n).count();
    let more = defects().filter(|o| o.model_calls > 2).count();
    let undelivered = outcomes.iter().filter(|o| !o.delivered).count();
    println!(
        "\nmodel calls: what the coaching engine (Engine::answer, as a paid call runs it) spent on each\n\
         answer, against a scripted model whose first answer is the corpus answer and whose answer\n\
         to any re-ask is the clean answer written for the same caller. A clean answer, or a defect\n\
         a safe repair fixes, costs 1; a defect the model must be re-asked about costs 2; more means\n\
         the re-asked answer failed too. Defects: {} fixed by safe repair (1 call), {} re-asked\n\
         (2 calls), {more} needing more; calls the engine failed in the end: {undelivered}.",
        with(1),
        with(2),
    );
    for o in &outcomes {
        if !o.as_expected || !o.delivered || verbose {
            let what = if o.rule.is_empty() {
                "clean"
            } else {
                o.rule.as_str()
            };
            let verdict = if o.as_expected { "ok" } else { "UNEXPECTED" };
            let end = if o.delivered { "delivered" } else { "FAILED" };
            println!(
                "{verdict} {} [{what}] model calls: {}, {end}",
                o.id, o.model_calls
            );
            for p in &o.problems {
                println!("    {p}");
            }
        }
    }
    if total.false_alarms > 0 || total.caught < total.defects || undelivered > 0 {
        std::process::exit(1);
    }
}
