//! The model behind a recording proxy: when each request arrived, and for which call.

use crate::procs::lock;
use axum::{
    body::Bytes,
    extract::State,
    http::{StatusCode, Uri},
    response::{IntoResponse, Response},
};
use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Instant,
};

#[derive(Default)]
pub struct ModelLog {
    pub arrivals: Mutex<Vec<(Instant, Option<usize>)>>,
    /// Arrivals (by index) the model answered; the others lost their worker mid-request.
    pub answered: Mutex<HashSet<usize>>,
}

pub struct Proxy {
    pub log: Arc<ModelLog>,
    pub upstream: String,
    pub client: reqwest::Client,
}

/// The call index a body carries (`chaoscall<i>end`, written into its message).
pub fn call_ref(body: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(body);
    let rest = &text[text.find("chaoscall")? + "chaoscall".len()..];
    rest[..rest.find("end")?].parse().ok()
}

pub async fn forward(State(p): State<Arc<Proxy>>, uri: Uri, body: Bytes) -> Response {
    let index = {
        let mut arrivals = lock(&p.log.arrivals);
        arrivals.push((Instant::now(), call_ref(&body)));
        arrivals.len() - 1
    };
    let sent = p
        .client
        .post(format!("{}{}", p.upstream, uri.path()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    match sent {
        Ok(r) => {
            let status = StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::OK);
            let bytes = r.bytes().await.unwrap_or_default();
            lock(&p.log.answered).insert(index);
            (status, [("content-type", "application/json")], bytes).into_response()
        }
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}
