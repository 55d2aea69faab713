//! From what a scenario recorded to its row: transfers, model calls and texts per request,
//! money taken without a result, and how soon jobs flowed again.

use crate::{Args, Fault, client::Outcome};
use grove_tests::twilio::Received;
use serde_json::Value;
use std::{
    collections::{HashMap, HashSet},
    fmt::Write as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// Everything a scenario recorded, for counting once its processes are gone.
pub struct Recorded {
    pub name: String,
    pub fault: Fault,
    pub dir: PathBuf,
    pub calls: Vec<Outcome>,
    pub reviews: Vec<Outcome>,
    /// Every `/settle` body the facilitator received.
    pub settle_requests: Vec<Value>,
    /// Transfers on the fake chain.
    pub chain_transfers: usize,
    pub messages: Vec<Received>,
    /// Review requests answered 200 but never texted: what the api says about each.
    pub untexted: Vec<String>,
    /// Texted review requests by their final status.
    pub texted_states: std::collections::BTreeMap<String, usize>,
    /// Model requests: when, and for which call.
    pub arrivals: Vec<(Instant, Option<usize>)>,
    /// Arrivals (by index) the model answered before the worker went away.
    pub answered: HashSet<usize>,
    pub fault_ends: Vec<Instant>,
    /// What the fault injector saw happen (the model's gate opening and closing).
    pub timeline: Vec<String>,
    /// Processes that exited by themselves (and were restarted).
    pub exits: Vec<String>,
    pub wall: Duration,
}

/// The review request `i`'s phone (distinct per request: the cooldown is per phone).
pub fn review_phone(i: usize) -> String {
    format!("+1312{:07}", 2_000_000 + i)
}

/// WARN and ERROR lines in the api and worker logs of a scenario.
fn log_lines(dir: &Path) -> (usize, usize) {
    let (mut warn, mut error) = (0, 0);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("api") || name.starts_with("worker")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        warn += text.lines().filter(|l| l.contains("WARN")).count();
        error += text.lines().filter(|l| l.contains("ERROR")).count();
    }
    (warn, error)
}

pub struct Row {
    pub name: String,
    pub requests: usize,
    pub delivered: usize,
    pub transfers: usize,
    pub transfers_per_request_max: usize,
    pub model_mean: f64,
    pub model_max: usize,
    pub texts_max: usize,
    pub taken_without_result: usize,
    pub recovery: String,
    /// The slowest coaching call, first attempt to 200.
    pub slowest: Option<Duration>,
    pub wall: Duration,
    pub notes: String,
}

pub fn row(args: &Args, c: Recorded) -> Row {
    let (name, fault, dir, wall) = (c.name.as_str(), c.fault, &c.dir, c.wall);
    let (calls, reviews, exits) = (&c.calls, &c.reviews, &c.exits);
    let total = args.calls + args.reviews;
    let mut settles: HashMap<String, usize> = HashMap::new();
    for r in &c.settle_requests {
        if let Some(n) = r
            .pointer("/paymentPayload/payload/authorization/nonce")
            .and_then(Value::as_str)
        {
            *settles.entry(n.to_ascii_lowercase()).or_default() += 1;
        }
    }
    let transferred = |o: &Outcome| usize::from(settles.get(&o.nonce).is_some_and(|n| *n > 0));
    let mut texts: HashMap<String, usize> = HashMap::new();
    for m in &c.messages {
        if m.sid.is_some()
            && let Some(to) = m.field("To")
        {
            *texts.entry(to.to_owned()).or_default() += 1;
        }
    }
    let texts_for = |i: usize| texts.get(&review_phone(i + 1)).copied().unwrap_or(0);
    let arrivals = &c.arrivals;
    let mut model_calls = vec![0usize; args.calls];
    let mut first_model = vec![None::<Instant>; args.calls];
    for (at, r) in arrivals {
        if let Some(i) = r.filter(|i| *i < args.calls) {
            model_calls[i] += 1;
            first_model[i].get_or_insert(*at);
        }
    }
    let paid: Vec<usize> = (0..args.calls)
        .filter(|i| transferred(&calls[*i]) == 1)
        .collect();
    let model_total: usize = paid.iter().map(|i| model_calls[*i]).sum();
    let calls_ok = calls.iter().filter(|o| o.ok_at.is_some()).count();
    // Paid calls the client gave up on whose receipt shows the result (the service finished them).
    let by_receipt = paid
        .iter()
        .filter(|i| calls[**i].ok_at.is_none() && calls[**i].completed_by_receipt)
        .count();
    let reviews_texted = (0..args.reviews).filter(|i| texts_for(*i) > 0).count();
    let taken_calls = paid
        .iter()
        .filter(|i| calls[**i].ok_at.is_none() && !calls[**i].completed_by_receipt)
        .count();
    let taken_reviews = (0..args.reviews)
        .filter(|i| transferred(&reviews[*i]) == 1 && texts_for(*i) == 0)
        .count();
    let mut stopped_on: HashMap<u16, usize> = HashMap::new();
    for o in calls.iter().chain(reviews).filter(|o| o.ok_at.is_none()) {
        *stopped_on.entry(o.last.unwrap_or(0)).or_default() += 1;
    }

    let ends = &c.fault_ends;
    let recovery = match fault {
        Fault::None | Fault::Facilitator | Fault::RpcLag(_) => "–".to_owned(),
        Fault::WorkerKills => {
            // A re-run call: from its first model request (before the kill) to its result.
            let worst = (0..args.calls)
                .filter(|i| model_calls[*i] > 1)
                .filter_map(|i| Some(calls[i].ok_at? - first_model[i]?))
                .max();
            worst.map_or("no re-run".into(), |d| {
                format!("{:.1} (re-run)", d.as_secs_f64())
            })
        }
        _ => {
            let mut worst = Some(Duration::ZERO);
            for end in ends {
                // A call's model request (a health probe carries no call).
                let next = arrivals
                    .iter()
                    .filter(|(_, r)| r.is_some())
                    .map(|(at, _)| *at)
                    .find(|at| at >= end);
                let work_left = calls.iter().any(|o| o.ok_at.is_none_or(|ok| ok > *end));
                match next {
                    Some(at) => worst = worst.map(|w| w.max(at - *end)),
                    None if work_left => worst = None,
                    None => {}
                }
            }
            worst.map_or("never".into(), |d| format!("{:.1}", d.as_secs_f64()))
        }
    };

    let mut notes = format!(
        "calls {calls_ok}/{} answered 200; reviews {}/{} answered 200, {reviews_texted} texted",
        args.calls,
        reviews.iter().filter(|o| o.ok_at.is_some()).count(),
        args.reviews
    );
    if !stopped_on.is_empty() {
        let mut v: Vec<_> = stopped_on.into_iter().collect();
        v.sort_unstable();
        let list: Vec<String> = v
            .iter()
            .map(|(s, n)| {
                let s = if *s == 0 {
                    "transport".into()
                } else {
                    s.to_string()
                };
                format!("{n}× {s}")
            })
            .collect();
        let _ = write!(notes, "; gave up on {}", list.join(", "));
    }
    if let Fault::WorkerKills = fault {
        let _ = write!(notes, "; {}", worst_rerun(&c, &model_calls, &first_model));
    }
    if let Fault::ModelDown(_) = fault {
        let unpriced: u32 = calls.iter().chain(reviews).map(|o| o.unpriced).sum();
        let waited = calls.iter().filter(|o| o.unpriced > 0).count();
        let probes = arrivals.iter().filter(|(_, r)| r.is_none()).count();
        // Paid while the model was down: answered with a failure first, the result later.
        let failed_first = paid
            .iter()
            .filter(|i| calls[**i].attempts > 1 && calls[**i].ok_at.is_some())
            .count();
        let _ = write!(
            notes,
            "; unpaid requests answered 503 instead of a price: {unpriced} (from {waited} clients); paid calls answered with a failure first and their result on a later retry: {failed_first}; paid calls whose result reached them only through the receipt: {by_receipt}; model gate: {}; probes and other requests without a call: {probes}",
            if c.timeline.is_empty() {
                "never seen open".to_owned()
            } else {
                c.timeline.join(", ")
            }
        );
    }
    let max_attempts = calls.iter().map(|o| o.attempts).max().unwrap_or(0);
    let _ = write!(notes, "; attempts max {max_attempts}");
    let settles_max = settles.values().copied().max().unwrap_or(0);
    let _ = write!(notes, "; /settle per authorization max {settles_max}");
    if settles.len() != c.chain_transfers {
        let _ = write!(
            notes,
            "; authorizations seen {} ≠ chain transfers {}",
            settles.len(),
            c.chain_transfers
        );
    }
    if !c.untexted.is_empty() {
        let _ = write!(notes, "; never texted: {}", c.untexted.join("; "));
    }
    if !c.texted_states.is_empty() {
        let states: Vec<String> = c
            .texted_states
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        let _ = write!(notes, "; texted reviews end {}", states.join(", "));
    }
    if !exits.is_empty() {
        let _ = write!(
            notes,
            "; exited by themselves and restarted: {}",
            exits.join(", ")
        );
    }
    let (warn, error) = log_lines(dir);
    let _ = write!(
        notes,
        "; api and worker logs: {error} ERROR, {warn} WARN lines"
    );
    eprintln!("[{name}] logs in {}", dir.display());
    Row {
        name: name.to_owned(),
        requests: total,
        delivered: calls_ok + by_receipt + reviews_texted,
        transfers: c.chain_transfers,
        transfers_per_request_max: calls
            .iter()
            .chain(reviews)
            .map(transferred)
            .max()
            .unwrap_or(0),
        model_mean: if paid.is_empty() {
            0.0
        } else {
            model_total as f64 / paid.len() as f64
        },
        model_max: model_calls.iter().copied().max().unwrap_or(0),
        texts_max: (0..args.reviews).map(texts_for).max().unwrap_or(0),
        taken_without_result: taken_calls + taken_reviews,
        recovery,
        slowest: calls
            .iter()
            .filter_map(|o| Some(o.ok_at? - o.started?))
            .max(),
        wall,
        notes,
    }
}

/// The slowest re-run call's timeline, in seconds from its first model request: its model
/// requests, the kills in between, and its result.
fn worst_rerun(c: &Recorded, model_calls: &[usize], first_model: &[Option<Instant>]) -> String {
    let worst = (0..c.calls.len())
        .filter(|i| model_calls[*i] > 1)
        .filter_map(|i| Some((i, c.calls[i].ok_at? - first_model[i]?)))
        .max_by_key(|(_, d)| *d);
    let Some((i, _)) = worst else {
        return "no call ran twice".into();
    };
    let Some(first) = first_model[i] else {
        return String::new();
    };
    let result = c.calls[i].ok_at.unwrap_or(first);
    let secs = |at: Instant| format!("{:.1}", at.saturating_duration_since(first).as_secs_f64());
    let models: Vec<String> = c
        .arrivals
        .iter()
        .enumerate()
        .filter(|(_, (_, r))| *r == Some(i))
        .map(|(n, (at, _))| {
            let cut = if c.answered.contains(&n) {
                ""
            } else {
                " (cut)"
            };
            format!("{}{cut}", secs(*at))
        })
        .collect();
    let kills: Vec<String> = c
        .fault_ends
        .iter()
        .filter(|at| **at >= first && **at <= result)
        .map(|at| secs(*at))
        .collect();
    format!(
        "slowest re-run (call {i}): model requests at [{}] s (cut: its worker went away before the answer), kills at [{}] s, result at {} s",
        models.join(", "),
        kills.join(", "),
        secs(result)
    )
}
