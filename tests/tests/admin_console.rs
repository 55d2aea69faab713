//! The console in headless Chromium (issue 28): an operator signs in with a token, the page
//! reads without sideways scrolling at 1280 px and on a 400 px phone, and a resolve made through
//! its form is in the audit table under the operator's name.

use grove_tests::{
    ADMIN_TOKEN,
    browser::{Browser, MEASURE},
    facilitator::SettleScript,
    llm::caller_body,
    paid::{Options, spawn_paid},
};
use serde_json::{Value, json};
use std::path::PathBuf;

const CALL: &str = "/api/v1/agents/mary/call";

fn screenshot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/screenshots")
        .join(name)
}

/// Asserts that the page is no wider than the viewport, naming the widest element if it is.
async fn fits(browser: &Browser, width: u64) -> Value {
    let m = browser.run(MEASURE).await;
    assert_eq!(m["innerWidth"], width, "{m}");
    assert!(
        m["scrollWidth"].as_u64().unwrap_or(u64::MAX) <= width
            && m["bodyScrollWidth"].as_u64().unwrap_or(u64::MAX) <= width,
        "the console scrolls sideways at {width} px: {m}"
    );
    m
}

#[tokio::test]
async fn the_console_fits_1280_and_400_px_and_a_resolve_made_through_it_is_audited() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let rig = spawn_paid(Options {
        deadline_s: 2,
        // No BASE_RPC_URL: the resolve made through the page is taken on the operator's word.
        fake_chain: false,
        extra_env: vec![("X402_FACILITATOR_TIMEOUT_S".into(), "1".into())],
        ..Default::default()
    })
    .await;
    // Something to show: a paid call, a payment whose outcome is unknown, an opt-out.
    let r = rig
        .pay_and_call(CALL, &caller_body("diagnose_growth"), Some("paid"))
        .await;
    assert_eq!(r.status(), 200);
    rig.facilitator.script(SettleScript::Down);
    let r = rig
        .pay_and_call(CALL, &caller_body("diagnose_growth"), Some("unknown"))
        .await;
    assert_eq!(r.status(), 504);
    let admin = |path: &str| {
        rig.app
            .client
            .get(rig.app.admin_url(path))
            .bearer_auth(ADMIN_TOKEN)
            .send()
    };
    let listed: Value = admin("/admin/v1/payments")
        .await
        .expect("reaches")
        .json()
        .await
        .expect("json");
    let id = listed["payments"][0]["id"]
        .as_str()
        .expect("a payment needing attention")
        .to_owned();
    let r = rig
        .app
        .client
        .post(rig.app.admin_url("/admin/v1/opt-outs"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"phone": "+13055550142", "reason": "customer phoned"}))
        .send()
        .await
        .expect("reaches");
    assert_eq!(r.status(), 200);

    // Signed out, the console is a sign-in form; a wrong token is refused.
    let console = rig.app.admin_url("/console");
    browser.viewport(1280, 900).await;
    browser.goto(&console).await;
    browser
        .type_into("input[name=token]", "not-a-token-at-all")
        .await;
    browser.click("form[action='/console/login'] button").await;
    browser
        .wait_for("document.querySelector('[role=alert]')")
        .await;
    let refused = browser
        .run("return document.querySelector('[role=alert]')?.textContent ?? ''")
        .await;
    assert!(
        refused.as_str().is_some_and(|t| t.contains("not one of")),
        "{refused}"
    );
    browser.type_into("input[name=token]", ADMIN_TOKEN).await;
    browser.click("form[action='/console/login'] button").await;
    browser
        .wait_for("document.getElementById('operator')")
        .await;
    let shown = browser
        .run(
            "return {operator: document.getElementById('operator')?.textContent,
                     bars: document.querySelectorAll('#revenue svg rect').length,
                     outcomes: document.querySelectorAll('#outcomes svg rect').length,
                     attention: document.querySelectorAll('#attention article').length,
                     queues: document.getElementById('queues') !== null,
                     latency: document.querySelector('#latency table')?.textContent ?? '',
                     optOuts: document.querySelector('#opt-outs table')?.textContent ?? '',
                     revenue: document.querySelector('#revenue .tile b')?.textContent}",
        )
        .await;
    assert_eq!(shown["operator"], "alice", "{shown}");
    assert_eq!(
        shown["revenue"], "$0.18",
        "today's settled revenue: {shown}"
    );
    assert!(
        shown["bars"].as_u64() >= Some(1),
        "a revenue column: {shown}"
    );
    assert!(
        shown["outcomes"].as_u64() >= Some(2),
        "completed and settling: {shown}"
    );
    assert_eq!(shown["attention"], 1, "{shown}");
    assert_eq!(shown["queues"], true);
    assert!(
        shown["optOuts"]
            .as_str()
            .is_some_and(|t| t.contains("+1 305-***-**42")),
        "the opt-out, masked: {shown}"
    );
    fits(&browser, 1280).await;
    browser.screenshot(&screenshot("console-1280.png")).await;

    // Resolve through the page's form: a POST from the browser, then the page again.
    let card = format!("article[data-payment='{id}']");
    browser
        .click(&format!("{card} option[value=unsettled]"))
        .await;
    browser
        .type_into(
            &format!("{card} input[name=reason]"),
            "the facilitator's dashboard shows no transfer",
        )
        .await;
    browser.click(&format!("{card} button")).await;
    browser.wait_for("document.getElementById('flash')").await;
    let after = browser
        .run(
            "return {flash: document.getElementById('flash')?.textContent ?? '',
                     attention: document.querySelectorAll('#attention article').length,
                     audit: document.querySelector('#audit tr[data-action=\"payment.resolve\"]')?.textContent ?? ''}",
        )
        .await;
    assert!(
        after["flash"]
            .as_str()
            .is_some_and(|t| t.contains("resolved")),
        "{after}"
    );
    assert_eq!(after["attention"], 0, "{after}");
    let row = after["audit"].as_str().unwrap_or_default();
    assert!(
        row.contains("alice") && row.contains(&id) && row.contains("refused"),
        "the page's audit table shows the resolution: {after}"
    );
    // And the audit table itself has it, under alice's name.
    let audit: Value = admin("/admin/v1/audit")
        .await
        .expect("reaches")
        .json()
        .await
        .expect("json");
    let entry = &audit["entries"][0];
    assert_eq!(entry["operator"], "alice", "{audit}");
    assert_eq!(entry["action"], "payment.resolve");
    assert_eq!(entry["subject"], id.as_str());
    assert_eq!(entry["before"]["status"], "unknown");
    assert_eq!(entry["after"]["status"], "refused");
    assert_eq!(
        entry["reason"],
        "the facilitator's dashboard shows no transfer"
    );

    // On a 400 px phone, nothing runs off the side.
    browser.viewport(400, 900).await;
    browser.goto(&console).await;
    browser
        .wait_for("document.getElementById('operator')")
        .await;
    fits(&browser, 400).await;
    browser.screenshot(&screenshot("console-400.png")).await;
    // The measure is not vacuous: a page 800 px wide is caught at 400 px.
    browser
        .goto("data:text/html,<meta name=viewport content='width=device-width'><div style='width:800px'>too wide</div>")
        .await;
    let control = browser.run(MEASURE).await;
    assert!(control["scrollWidth"].as_u64() > Some(400), "{control}");
    browser.quit().await;
}
