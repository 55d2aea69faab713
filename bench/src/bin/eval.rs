//! The coaching evaluation: prints, per mode, the clean answers and the false alarms on them,
//! the defective answers and how many were caught, and the model calls the corpus stands for
//! (one per answer: answers are judged as the engine judges a model's reply, without a model).
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
    for o in &outcomes {
        if !o.as_expected || verbose {
            let what = if o.rule.is_empty() {
                "clean"
            } else {
                o.rule.as_str()
            };
            let verdict = if o.as_expected { "ok" } else { "UNEXPECTED" };
            println!("{verdict} {} [{what}]", o.id);
            for p in &o.problems {
                println!("    {p}");
            }
        }
    }
    if total.false_alarms > 0 || total.caught < total.defects {
        std::process::exit(1);
    }
}
