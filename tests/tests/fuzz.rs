//! Fuzz-style robustness: random bytes, random JSON and mutated valid bodies sent to every POST
//! endpoint, with random headers, never produce a 5xx (or hang, or kill the server).
//! Seeded, so a failure reproduces.

use grove_tests::{action_body, coaching_body, spawn_app};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};

const POSTS: &[&str] = &[
    "/api/v1/agents/mary/call",
    "/api/v1/agents/oak/call",
    "/api/v1/agents/nobody/call",
    "/api/v1/actions/review-request/call",
    "/api/v1/actions/nothing/call",
];

fn random_string(rng: &mut StdRng) -> String {
    let len = rng.random_range(0..40);
    (0..len)
        .map(|_| match rng.random_range(0..4) {
            0 => rng.random_range(b'a'..=b'z') as char,
            1 => char::from_u32(rng.random_range(0..0x3000)).unwrap_or('?'),
            2 => ['"', '\\', '/', '~', '{', '}', '\u{0}', '\u{fffd}'][rng.random_range(0..8)],
            _ => ' ',
        })
        .collect()
}

fn random_json(rng: &mut StdRng, depth: u32) -> Value {
    match rng.random_range(0..if depth > 3 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(rng.random_range(-1e12..1e12)),
        3 => json!(rng.random_range(i64::MIN..i64::MAX)),
        4 => json!(random_string(rng)),
        5 => Value::Array(
            (0..rng.random_range(0..6))
                .map(|_| random_json(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "mode", "messages", "context", "role", "content", "business", "customer",
                "consent", "phone", "metrics",
            ];
            let mut m = Map::new();
            for _ in 0..rng.random_range(0..6) {
                let k = if rng.random_bool(0.6) {
                    keys[rng.random_range(0..keys.len())].to_owned()
                } else {
                    random_string(rng)
                };
                m.insert(k, random_json(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// Replaces one random node of a valid body with random JSON.
fn mutate(rng: &mut StdRng, mut doc: Value) -> Value {
    // Walk down immutably to choose a pointer, then replace what it points at.
    let mut pointer = String::new();
    let mut cur = &doc;
    for _ in 0..rng.random_range(0..4) {
        let step = match cur {
            Value::Object(m) if !m.is_empty() => m
                .iter()
                .nth(rng.random_range(0..m.len()))
                .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v)),
            Value::Array(a) if !a.is_empty() => {
                let i = rng.random_range(0..a.len());
                Some((i.to_string(), &a[i]))
            }
            _ => None,
        };
        let Some((segment, next)) = step else { break };
        pointer.push('/');
        pointer.push_str(&segment);
        cur = next;
    }
    let replacement = random_json(rng, 2);
    if let Some(target) = doc.pointer_mut(&pointer) {
        *target = replacement;
    }
    doc
}

#[tokio::test]
async fn random_input_never_yields_a_server_error() {
    let app = spawn_app().await;
    let mut rng = StdRng::seed_from_u64(0x0067_260e);
    let modes = [
        "diagnose_growth",
        "plan_capacity",
        "handle_objections",
        "draft_sop",
    ];
    let mut sent = 0;
    for round in 0..240 {
        let path = POSTS[round % POSTS.len()];
        let body: Vec<u8> = match round % 4 {
            0 => (0..rng.random_range(0..300))
                .map(|_| rng.random::<u8>())
                .collect(),
            1 => random_json(&mut rng, 0).to_string().into_bytes(),
            2 => {
                let mode = modes[rng.random_range(0..modes.len())];
                mutate(&mut rng, coaching_body(mode))
                    .to_string()
                    .into_bytes()
            }
            _ => mutate(&mut rng, action_body()).to_string().into_bytes(),
        };
        let mut req = app.client.post(app.url(path)).body(body.clone());
        if rng.random_bool(0.9) {
            req = req.header("content-type", "application/json");
        }
        if rng.random_bool(0.3) {
            let key: String = (0..rng.random_range(0..300))
                .map(|_| rng.random_range(0x20u8..0x7f) as char)
                .collect();
            req = req.header("idempotency-key", key);
        }
        if rng.random_bool(0.3) {
            req = req.header("x-grove-sandbox", "1");
        }
        if rng.random_bool(0.2) {
            req = req.header(
                "x-payment",
                random_string(&mut rng).replace(|c: char| !c.is_ascii_graphic(), "A"),
            );
        }
        let r = req.send().await.expect("server answers");
        let status = r.status();
        assert!(
            !status.is_server_error(),
            "round {round}: {path} answered {status} to {}",
            String::from_utf8_lossy(&body)
        );
        sent += 1;
    }
    assert_eq!(sent, 240);
    // Still alive and correct after the storm.
    assert_eq!(app.get("/healthz").await.status(), 200);
}
