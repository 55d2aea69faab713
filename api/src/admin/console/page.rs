//! The console's HTML: the sign-in form and the page. Plain HTML and CSS that read from a 400 px
//! phone up (cards that wrap, tables that scroll inside their card, charts that scale), so
//! nothing makes the page itself wider than the screen.

use super::{esc, svg};
use crate::{
    admin::{Operator, opt_outs, payments, report},
    error::ApiError,
};
use axum::http::StatusCode;
use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use grove_common::{
    db::entities::{admin_audit, call, payment, suppression},
    money::UsdcAmount,
    queue::QueueStats,
};
use std::fmt::Write;

/// What the page shows, gathered by `super::gather`.
pub struct Data {
    pub now: DateTime<Utc>,
    /// The 30 days of the window, oldest first.
    pub days: Vec<NaiveDate>,
    pub month: report::Summary,
    pub today: report::Summary,
    /// `Err`: Redis could not be read; `Ok(None)`: the in-process queue keeps no counts.
    pub queues: Result<Option<Vec<QueueStats>>, ()>,
    pub consumers: Option<Vec<(&'static str, u64)>>,
    pub attention: Vec<(payment::Model, Option<call::Model>)>,
    pub opt_outs: Vec<suppression::Model>,
    pub audit: Vec<admin_audit::Model>,
}

/// A line above the page: what an action did, or why it was refused.
pub struct Flash {
    ok: bool,
    text: String,
}

impl Flash {
    /// After a redirect: fixed texts only (nothing from the address is echoed).
    pub fn done(code: &str) -> Option<Self> {
        let text = match code {
            "resolved" => "Payment resolved; the audit below records it.",
            "opted_out" => "Number opted out; its open requests ended.",
            "opt_out_removed" => "Opt-out lifted for future requests.",
            _ => return None,
        };
        Some(Self {
            ok: true,
            text: text.into(),
        })
    }

    /// A refused action: its status and its message, with every problem it names.
    pub fn refusal(e: &ApiError) -> (StatusCode, Self) {
        let body = e.body();
        let mut text = body["error"]["message"]
            .as_str()
            .unwrap_or("refused")
            .to_owned();
        for d in body["error"]["details"].as_array().into_iter().flatten() {
            let _ = write!(
                text,
                " {}: {}.",
                d["path"].as_str().unwrap_or("").trim_start_matches('/'),
                d["message"].as_str().unwrap_or("")
            );
        }
        (e.status(), Self { ok: false, text })
    }
}

const STYLE: &str = "*{box-sizing:border-box}\
body{font-family:system-ui,sans-serif;margin:0;padding:1rem;line-height:1.45;color:#1d1d1f;background:#f5f6f8}\
main{max-width:74rem;margin:0 auto}h1{font-size:1.4rem;margin:0}h2{font-size:1.1rem;margin:0 0 .6rem}\
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;justify-content:space-between;align-items:center;margin-bottom:1rem}\
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,22rem),1fr));gap:1rem;margin-bottom:1rem}\
section{background:#fff;border:1px solid #dfe2e7;border-radius:8px;padding:1rem;min-width:0;overflow-wrap:anywhere}\
.wide{grid-column:1/-1}.tiles{display:flex;flex-wrap:wrap;gap:.6rem}\
.tile{flex:1 1 7rem;background:#f1f4f9;border-radius:6px;padding:.5rem .7rem}\
.tile b{display:block;font-size:1.3rem}.muted{color:#5f6368;font-size:.85rem}\
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;font-size:.9rem}\
td,th{padding:.3rem .5rem;border-bottom:1px solid #eceef1;text-align:left;vertical-align:top}\
th{font-weight:600;color:#444}.chart{width:100%;height:auto;max-height:18rem;display:block}\
.legend{display:flex;flex-wrap:wrap;gap:.3rem .9rem;font-size:.85rem;margin:.4rem 0 0}\
.legend i{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-1px}\
article{border:1px solid #e4e6ea;border-radius:6px;padding:.6rem .7rem;margin-bottom:.7rem}\
form.row{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin-top:.5rem}\
input,select,button{font:inherit;padding:.35rem .5rem;max-width:100%;min-width:0}\
input[name=transaction],input[name=reason],input[name=phone]{flex:1 1 12rem}\
button{background:#2f6fdf;color:#fff;border:0;border-radius:5px;cursor:pointer}\
button.quiet{background:#e8eaee;color:#222}\
.flash{padding:.6rem .8rem;border-radius:6px;margin-bottom:1rem}.ok{background:#e3f5ea}.err{background:#fbe4e6}\
code{font-size:.85rem;overflow-wrap:anywhere}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"robots\" content=\"noindex\"><title>{}</title><style>{STYLE}</style></head>\
<body><main>{body}</main></body></html>",
        esc(title)
    )
}

/// The sign-in form, with why the last try failed.
pub fn login(error: Option<&str>) -> String {
    let mut body = String::from("<header><h1>Grove console</h1></header><section>");
    if let Some(e) = error {
        let _ = write!(body, "<p class=\"flash err\" role=\"alert\">{}</p>", esc(e));
    }
    body.push_str(
        "<h2>Sign in</h2><p class=\"muted\">With your operator token (one of ADMIN_TOKENS): it \
names you in the audit.</p><form class=\"row\" method=\"post\" action=\"/console/login\">\
<input type=\"password\" name=\"token\" autocomplete=\"current-password\" required \
aria-label=\"Operator token\" placeholder=\"operator token\"><button type=\"submit\">Sign in</button>\
</form></section>",
    );
    page("Grove console: sign in", &body)
}

fn usd(atomic: u64) -> String {
    format!("${}", UsdcAmount::from_atomic(atomic).decimal_usd())
}

fn when(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn seconds(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |s| format!("{s:.2} s"))
}

/// The page itself.
pub fn dashboard(operator: &Operator, flash: Option<&Flash>, d: &Data) -> String {
    let mut b = String::new();
    let _ = write!(
        b,
        "<header><h1>Grove console</h1><form method=\"post\" action=\"/console/logout\" class=\"row\">\
<span class=\"muted\">Signed in as <b id=\"operator\">{}</b> · {}</span>\
<button class=\"quiet\" type=\"submit\">Sign out</button></form></header>",
        esc(&operator.0),
        when(d.now)
    );
    if let Some(f) = flash {
        let _ = write!(
            b,
            "<p class=\"flash {}\" role=\"{}\" id=\"flash\">{}</p>",
            if f.ok { "ok" } else { "err" },
            if f.ok { "status" } else { "alert" },
            esc(&f.text)
        );
    }
    b.push_str("<div class=\"grid\">");
    revenue(&mut b, d);
    outcomes(&mut b, d);
    latency_and_queues(&mut b, d);
    b.push_str("</div><div class=\"grid\">");
    attention(&mut b, d);
    opt_out_section(&mut b, d);
    audit_section(&mut b, d);
    b.push_str("</div>");
    page("Grove console", &b)
}

fn mode_table(b: &mut String, s: &report::Summary) {
    b.push_str("<div class=\"scroll\"><table><tr><th>mode</th><th>calls</th><th>revenue</th></tr>");
    for (mode, f) in &s.modes {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(mode),
            f.calls,
            usd(f.revenue)
        );
    }
    if s.modes.is_empty() {
        b.push_str("<tr><td colspan=\"3\" class=\"muted\">no calls</td></tr>");
    }
    b.push_str("</table></div>");
}

fn revenue(b: &mut String, d: &Data) {
    let modes: Vec<String> = d.month.modes.keys().cloned().collect();
    let columns: Vec<(String, Vec<f64>)> = d
        .days
        .iter()
        .map(|day| {
            let per = d.month.days.get(day);
            let values = modes
                .iter()
                .map(|m| {
                    per.and_then(|p| p.get(m))
                        .map_or(0.0, |f| f.revenue as f64 / 1e6)
                })
                .collect();
            (day.to_string(), values)
        })
        .collect();
    let _ = write!(
        b,
        "<section class=\"wide\" id=\"revenue\"><h2>Revenue</h2><div class=\"tiles\">\
<div class=\"tile\">today<b>{}</b><span class=\"muted\">{} calls</span></div>\
<div class=\"tile\">last 30 days<b>{}</b><span class=\"muted\">{} calls</span></div>",
        usd(d.today.total.revenue),
        d.today.total.calls,
        usd(d.month.total.revenue),
        d.month.total.calls
    );
    if d.month.total.unsettled > 0 {
        let _ = write!(
            b,
            "<div class=\"tile\">verified, never settled<b>{}</b><span class=\"muted\">development: no money moved</span></div>",
            usd(d.month.total.unsettled)
        );
    }
    b.push_str(
        "</div><h3 class=\"muted\">Settled revenue by day and mode, last 30 days (UTC)</h3>",
    );
    b.push_str(&svg::stacked_columns(
        "Settled revenue by day and mode, last 30 days",
        &modes,
        &columns,
    ));
    b.push_str("<p class=\"legend\">");
    for (i, m) in modes.iter().enumerate() {
        let _ = write!(
            b,
            "<span><i style=\"background:{}\"></i>{}</span>",
            svg::colour(i),
            esc(m)
        );
    }
    b.push_str("</p><div class=\"grid\"><div><h3 class=\"muted\">Today</h3>");
    mode_table(b, &d.today);
    b.push_str("</div><div><h3 class=\"muted\">Last 30 days</h3>");
    mode_table(b, &d.month);
    b.push_str("</div></div></section>");
}

fn outcomes(b: &mut String, d: &Data) {
    let items: Vec<(String, u64)> = d
        .month
        .total
        .outcomes
        .iter()
        .map(|(o, n)| (o.clone(), *n))
        .collect();
    b.push_str(
        "<section id=\"outcomes\"><h2>Calls by outcome</h2><p class=\"muted\">Last 30 days</p>",
    );
    if items.is_empty() {
        b.push_str("<p class=\"muted\">No calls yet.</p>");
    } else {
        b.push_str(&svg::bars("Calls by outcome, last 30 days", &items));
    }
    b.push_str("</section>");
}

fn latency_and_queues(b: &mut String, d: &Data) {
    b.push_str("<section id=\"latency\"><h2>Latency</h2><p class=\"muted\">Completed calls, from recorded to result</p><div class=\"scroll\"><table><tr><th></th><th>p50</th><th>p90</th><th>p99</th><th>calls</th></tr>");
    for (name, l) in [("today", &d.today.latency), ("30 days", &d.month.latency)] {
        let _ = write!(
            b,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            seconds(l.p50),
            seconds(l.p90),
            seconds(l.p99),
            l.count
        );
    }
    b.push_str("</table></div><h2 style=\"margin-top:1rem\" id=\"queues\">Queue backlog</h2>");
    match &d.queues {
        Err(()) => b.push_str("<p class=\"flash err\">Redis could not be read.</p>"),
        Ok(None) => b.push_str(
            "<p class=\"muted\">Jobs run in this process (no REDIS_URL): there is no shared queue to count.</p>",
        ),
        Ok(Some(stats)) => {
            b.push_str("<div class=\"scroll\"><table><tr><th>queue</th><th>ready</th><th>scheduled</th><th>held</th><th>backlog</th><th>consumers</th></tr>");
            for s in stats {
                let live = d
                    .consumers
                    .iter()
                    .flatten()
                    .find(|(q, _)| *q == s.queue)
                    .map_or_else(|| "–".into(), |(_, n)| n.to_string());
                let _ = write!(
                    b,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><b>{}</b></td><td>{live}</td></tr>",
                    esc(s.queue),
                    s.ready,
                    s.scheduled,
                    s.held,
                    s.backlog()
                );
            }
            b.push_str("</table></div>");
        }
    }
    b.push_str("</section>");
}

fn attention(b: &mut String, d: &Data) {
    let _ = write!(
        b,
        "<section class=\"wide\" id=\"attention\"><h2>Payments needing attention ({})</h2>\
<p class=\"muted\">Settlement outcome unknown. A resolution is checked on chain when BASE_RPC_URL is set, and refused if the chain disagrees.</p>",
        d.attention.len()
    );
    if d.attention.is_empty() {
        b.push_str("<p class=\"muted\">None: every payment's outcome is known.</p>");
    }
    for (p, c) in &d.attention {
        let id = p.id.to_string();
        let _ = write!(
            b,
            "<article data-payment=\"{id}\"><b>{}</b> · {} · <span class=\"muted\">{}</span><br>\
<span class=\"muted\">payment</span> <code>{id}</code> <span class=\"muted\">call</span> <code>{}</code><br>\
<span class=\"muted\">payer</span> <code>{}</code> · {} checks · recorded {}{}\
<form class=\"row\" method=\"post\" action=\"/console/payments/{id}/resolve\">\
<select name=\"outcome\" aria-label=\"Outcome\"><option value=\"settled\">settled</option><option value=\"unsettled\">unsettled</option></select>\
<input name=\"transaction\" placeholder=\"transaction hash (settled)\" aria-label=\"Transaction hash\">\
<input name=\"reason\" placeholder=\"how you know\" aria-label=\"Reason\" required>\
<button type=\"submit\">Resolve</button></form></article>",
            payments::amount_usd(p).map_or_else(|| "?".into(), |a| format!("${a}")),
            esc(c
                .as_ref()
                .and_then(|c| c.mode.map(|m| m.as_str()))
                .unwrap_or("review_request")),
            payments::attention(p).replace('_', " "),
            p.call_id,
            esc(&p.payer),
            p.checks,
            when(p.created_at),
            p.error
                .as_deref()
                .map(|e| format!("<br><span class=\"muted\">last error</span> {}", esc(e)))
                .unwrap_or_default()
        );
    }
    b.push_str("</section>");
}

fn opt_out_section(b: &mut String, d: &Data) {
    b.push_str("<section id=\"opt-outs\"><h2>Opt-outs</h2><p class=\"muted\">The customer's word counts from any channel: suppressing a number refuses the next request to it before any payment.</p>\
<form class=\"row\" method=\"post\" action=\"/console/opt-outs\"><input name=\"phone\" placeholder=\"+13055550142\" aria-label=\"Phone\" required>\
<input name=\"reason\" placeholder=\"how the customer asked\" aria-label=\"Reason\" required>\
<select name=\"action\" aria-label=\"Action\"><option value=\"add\">opt out</option><option value=\"remove\">lift</option></select>\
<button type=\"submit\">Apply</button></form><div class=\"scroll\"><table><tr><th>number</th><th>state</th><th>source</th><th>when</th></tr>");
    for s in &d.opt_outs {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&opt_outs::masked(&s.phone)),
            if s.active { "opted out" } else { "lifted" },
            esc(&s.reason),
            when(s.updated_at)
        );
    }
    if d.opt_outs.is_empty() {
        b.push_str("<tr><td colspan=\"4\" class=\"muted\">none</td></tr>");
    }
    b.push_str("</table></div></section>");
}

fn audit_section(b: &mut String, d: &Data) {
    b.push_str("<section id=\"audit\"><h2>Audit</h2><p class=\"muted\">The latest operator actions.</p><div class=\"scroll\"><table><tr><th>when</th><th>who</th><th>what</th><th>result</th><th>reason</th></tr>");
    for e in &d.audit {
        let result = e
            .after
            .as_ref()
            .map(|a| {
                a.get("refused")
                    .and_then(|r| r.as_str())
                    .map(|r| format!("refused: {r}"))
                    .or_else(|| a.get("status").and_then(|s| s.as_str()).map(str::to_owned))
                    .unwrap_or_else(|| {
                        if a.get("active").and_then(|v| v.as_bool()) == Some(true) {
                            "opted out".into()
                        } else {
                            "lifted".into()
                        }
                    })
            })
            .unwrap_or_default();
        let subject = if e.action.starts_with("opt_out") {
            opt_outs::masked(&e.subject)
        } else {
            e.subject.clone()
        };
        let _ = write!(
            b,
            "<tr data-action=\"{}\"><td>{}</td><td>{}</td><td>{} <code>{}</code></td><td>{}</td><td>{}</td></tr>",
            esc(&e.action),
            when(e.created_at),
            esc(&e.operator),
            esc(&e.action),
            esc(&subject),
            esc(&result),
            esc(e.reason.as_deref().unwrap_or(""))
        );
    }
    if d.audit.is_empty() {
        b.push_str("<tr><td colspan=\"5\" class=\"muted\">nothing yet</td></tr>");
    }
    b.push_str("</table></div></section>");
}
