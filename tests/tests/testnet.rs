//! Trying with test money (issue 29): `X402_NETWORK=base-sepolia` takes payments in Circle's USDC
//! on Base Sepolia. Every 402, the discovery document, the catalogs, the guides, the skill file,
//! the OpenAPI document and the MCP requirements name eip155:84532 and Sepolia's USDC; a payment
//! signed for Sepolia's EIP-712 domain buys the call and one signed for mainnet's is refused.
//! Production refuses the testnet unless it is allowed on purpose; mainnet stays the default.

use grove_common::{
    catalog::paths,
    config::{Config, Network, Secret},
};
use grove_tests::{
    PAY_TO, TestDb, coaching_body, default_env,
    facilitator::FakeFacilitator,
    llm::caller_body,
    mcp::{self, assert_payment_required_on, call, rig_with, tool_arguments},
    paid::{Options, PaidApp, spawn_paid},
    spawn_app_with, start,
    twilio::FakeTwilio,
    x402::{PayOptions, decode_b64_json},
};
use serde_json::{Value, json};

/// Circle's USDC on Base Sepolia and on Base mainnet, spelled out here rather than taken from
/// grove's network table, so that a mistake there cannot agree with itself.
const SEPOLIA_USDC: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const MAINNET_USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

const SEPOLIA: (&str, &str) = ("X402_NETWORK", "base-sepolia");

fn path() -> String {
    "/api/v1/agents/mary/call".into()
}

/// Everything a document must not say on the testnet: mainnet's network, asset or domain name.
fn assert_names_only_sepolia(what: &str, text: &str) {
    assert!(text.contains("eip155:84532"), "{what} names eip155:84532");
    assert!(text.contains(SEPOLIA_USDC), "{what} names Sepolia's USDC");
    for mainnet in [
        "eip155:8453\"",
        "eip155:8453 ",
        "eip155:8453)",
        MAINNET_USDC,
        "USD Coin",
    ] {
        assert!(!text.contains(mainnet), "{what} still says {mainnet:?}");
    }
}

#[tokio::test]
async fn the_402_discovery_catalogs_and_guides_name_base_sepolia_and_its_usdc() {
    let app = spawn_app_with(&[SEPOLIA], &[]).await;

    let r = app
        .post_json(&path(), &coaching_body("diagnose_growth"), &[])
        .await;
    assert_eq!(r.status(), 402);
    let header = r.headers()["payment-required"].to_str().expect("ascii");
    let v2 = decode_b64_json(header);
    let accept = &v2["accepts"][0];
    assert_eq!(accept["network"], "eip155:84532");
    assert_eq!(accept["asset"], SEPOLIA_USDC);
    assert_eq!(accept["extra"], json!({"name": "USDC", "version": "2"}));
    assert_eq!(accept["payTo"], PAY_TO);
    let v1: Value = r.json().await.expect("v1 body");
    let a = &v1["accepts"][0];
    assert_eq!(a["network"], "base-sepolia");
    assert_eq!(a["asset"], SEPOLIA_USDC);
    assert_eq!(a["extra"], json!({"name": "USDC", "version": "2"}));

    let well_known = app.get_json(paths::WELL_KNOWN_X402).await;
    assert_names_only_sepolia("/.well-known/x402", &well_known.to_string());

    for catalog in [paths::AGENTS, paths::ACTIONS] {
        let payment = &app.get_json(catalog).await["payment"];
        assert_eq!(payment["network"], "eip155:84532", "{catalog}");
        assert_eq!(payment["asset"], SEPOLIA_USDC, "{catalog}");
        assert_eq!(payment["testnet"], true, "{catalog}");
        assert!(
            payment["note"]
                .as_str()
                .is_some_and(|n| n.contains("Base Sepolia")),
            "{catalog}: {payment}"
        );
    }

    let openapi = app.get_json(paths::OPENAPI).await;
    assert_names_only_sepolia("the OpenAPI document", &openapi.to_string());

    let skill_path = paths::skill("grove");
    for guide in [
        paths::AGENTS_GUIDE,
        paths::ACTIONS_GUIDE,
        skill_path.as_str(),
    ] {
        let r = app.get(guide).await;
        assert_eq!(r.status(), 200, "{guide}");
        let text = r.text().await.expect("text");
        assert!(text.contains("Base Sepolia"), "{guide} names the testnet");
        if guide != paths::ACTIONS_GUIDE {
            // The guides that show the raw flow spell out the domain to sign under.
            assert_names_only_sepolia(guide, &text);
            assert!(text.contains("84532"), "{guide} gives the chain id");
        }
        assert!(!text.contains("USD Coin"), "{guide} names mainnet's domain");
    }
}

#[tokio::test]
async fn mainnet_stays_the_default_everywhere() {
    let app = spawn_app_with(&[], &[]).await;
    let r = app
        .post_json(&path(), &coaching_body("diagnose_growth"), &[])
        .await;
    let header = r.headers()["payment-required"].to_str().expect("ascii");
    let accept = decode_b64_json(header)["accepts"][0].clone();
    assert_eq!(accept["network"], "eip155:8453");
    assert_eq!(accept["asset"], MAINNET_USDC);
    assert_eq!(accept["extra"], json!({"name": "USD Coin", "version": "2"}));
    let payment = &app.get_json(paths::AGENTS).await["payment"];
    assert_eq!(payment["network"], "eip155:8453");
    assert_eq!(payment["testnet"], false);
    let skill = app
        .get(&paths::skill("grove"))
        .await
        .text()
        .await
        .expect("text");
    assert!(skill.contains("chainId: 8453") && skill.contains(MAINNET_USDC));
    assert!(!skill.contains("84532") && !skill.contains(SEPOLIA_USDC));
}

async fn sepolia_rig() -> PaidApp {
    // Development: payments are verified locally and recorded unsettled; no money moves.
    spawn_paid(Options {
        facilitator: false,
        extra_env: vec![(SEPOLIA.0.into(), SEPOLIA.1.into())],
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn a_payment_signed_for_sepolias_usdc_domain_buys_the_call_in_development() {
    let rig = sepolia_rig().await;
    let body = caller_body("diagnose_growth");
    let r = rig.pay_and_call(&path(), &body, Some("sepolia-1")).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let settlement = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["network"], "eip155:84532");
    assert_eq!(
        settlement["payer"].as_str().map(str::to_ascii_lowercase),
        Some(format!("{:#x}", rig.wallet.address()))
    );
    assert_eq!(rig.llm.received(), 1);

    // x402 v1 names the network "base-sepolia" and pays the same way.
    let (iris, funnel) = ("/api/v1/agents/iris/call", caller_body("funnel_review"));
    let r = rig.app.post_json(iris, &funnel, &[]).await;
    let v1: Value = r.json().await.expect("v1 body");
    let x_payment = rig.wallet.pay_v1(&v1, PayOptions::default());
    let r = rig
        .app
        .post_json(iris, &funnel, &[("x-payment", x_payment.as_str())])
        .await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let settlement = decode_b64_json(r.headers()["x-payment-response"].to_str().expect("ascii"));
    assert_eq!(settlement["network"], "base-sepolia");
}

/// The refusal code a 402 carries in its v2 header.
async fn refusal(rig: &PaidApp, payment: &str) -> String {
    let r = rig
        .send_paid(&path(), &caller_body("diagnose_growth"), payment, None)
        .await;
    assert_eq!(r.status(), 402);
    let header = r.headers()["payment-required"].to_str().expect("ascii");
    decode_b64_json(header)["error"]
        .as_str()
        .expect("an error code")
        .to_owned()
}

#[tokio::test]
async fn a_payment_signed_for_mainnet_is_refused_on_the_testnet() {
    let rig = sepolia_rig().await;
    let body = caller_body("diagnose_growth");
    // A client still set up for mainnet: Sepolia's terms echoed, signed under mainnet's domain.
    let under_mainnet_domain = PayOptions {
        domain_name: Some("USD Coin".into()),
        chain_id: Some(8453),
        verifying_contract: Some(MAINNET_USDC.parse().expect("address")),
        ..PayOptions::default()
    };
    let payment = rig.payment_for(&path(), &body, under_mainnet_domain).await;
    assert_eq!(
        refusal(&rig, &payment).await,
        "payment_invalid:signer_mismatch"
    );
    // A payment for mainnet's requirements altogether: the wrong network, before any signature.
    let mainnet_terms = PayOptions {
        domain_name: Some("USD Coin".into()),
        chain_id: Some(8453),
        verifying_contract: Some(MAINNET_USDC.parse().expect("address")),
        after_signing: Some(|doc| {
            doc["accepted"]["network"] = json!("eip155:8453");
            doc["accepted"]["asset"] = json!(MAINNET_USDC);
            doc["accepted"]["extra"] = json!({"name": "USD Coin", "version": "2"});
        }),
        ..PayOptions::default()
    };
    let payment = rig.payment_for(&path(), &body, mainnet_terms).await;
    assert_eq!(
        refusal(&rig, &payment).await,
        "payment_invalid:wrong_network"
    );
    assert_eq!(rig.llm.received(), 0, "nothing refused was run");
}

#[tokio::test]
async fn a_mainnet_server_refuses_a_payment_signed_for_sepolia() {
    let rig = spawn_paid(Options {
        facilitator: false,
        ..Options::default()
    })
    .await;
    let under_sepolia_domain = PayOptions {
        domain_name: Some("USDC".into()),
        chain_id: Some(84532),
        verifying_contract: Some(SEPOLIA_USDC.parse().expect("address")),
        ..PayOptions::default()
    };
    let payment = rig
        .payment_for(
            &path(),
            &caller_body("diagnose_growth"),
            under_sepolia_domain,
        )
        .await;
    assert_eq!(
        refusal(&rig, &payment).await,
        "payment_invalid:signer_mismatch"
    );
}

#[tokio::test]
async fn an_official_mcp_client_pays_on_the_testnet() {
    let Some(python) = mcp::python() else { return };
    let rig = rig_with(Options {
        extra_env: vec![(SEPOLIA.0.into(), SEPOLIA.1.into())],
        ..Options::default()
    })
    .await;
    let mut arguments = tool_arguments(&caller_body("diagnose_growth"));
    arguments["coach"] = json!("mary");
    let tool = "diagnose_growth";
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            call(tool, arguments.clone(), "none"),
            call(tool, arguments, "sign"),
        ],
    )
    .await;
    let r = &report["results"];
    assert_payment_required_on("eip155:84532", &r[0], tool, "180000", "payment_required");
    let accept = &r[0]["structured"]["accepts"][0];
    assert_eq!(accept["asset"], SEPOLIA_USDC, "{accept}");
    assert_eq!(accept["extra"], json!({"name": "USDC", "version": "2"}));
    let settlement = &r[1]["meta"]["x402/payment-response"];
    assert_eq!(settlement["success"], true, "{}", r[1]);
    assert_eq!(settlement["network"], "eip155:84532");
    assert_eq!(rig.facilitator.settle_calls(), 1);
}

/// A production configuration in every other respect.
fn production(extra: &[(&str, &str)]) -> Result<Config, String> {
    let mut env = default_env();
    for (k, v) in [
        ("APP_ENV", "production"),
        ("X402_FACILITATOR_URL", "https://x402.org/facilitator"),
        ("BASE_RPC_URL", "https://sepolia.base.org"),
        ("SMS_PROVIDER", "twilio"),
        ("TWILIO_ACCOUNT_SID", "AC00000000000000000000000000000000"),
        ("TWILIO_AUTH_TOKEN", "token"),
        ("TWILIO_FROM", "+15550100"),
    ]
    .iter()
    .chain(extra)
    {
        env.insert((*k).into(), (*v).into());
    }
    Config::from_map(&env).map_err(|e| e.to_string())
}

#[test]
fn production_refuses_the_testnet_unless_allowed_and_names_the_fix() {
    let refused = production(&[SEPOLIA]).expect_err("refused by default");
    assert!(!refused.contains('\n'), "one line: {refused}");
    assert!(refused.contains("X402_NETWORK"), "{refused}");
    assert!(refused.contains("X402_ALLOW_TESTNET=true"), "{refused}");

    let allowed = production(&[SEPOLIA, ("X402_ALLOW_TESTNET", "true")]).expect("allowed");
    assert_eq!(allowed.network, Network::BaseSepolia);
    assert_eq!(production(&[]).expect("mainnet").network, Network::Base);
}

#[tokio::test]
async fn production_starts_on_the_testnet_when_allowed_and_sells_on_it() {
    let db = TestDb::new().await;
    let twilio = FakeTwilio::start().await;
    let config = production(&[
        SEPOLIA,
        ("X402_ALLOW_TESTNET", "true"),
        ("DATABASE_URL", &db.url),
        ("TWILIO_BASE_URL", twilio.url()),
    ])
    .expect("allowed on purpose");
    // Start-up reads the chain: a loopback one answering Base Sepolia's id stands in for the
    // https endpoint production requires (the https rule itself is a configuration test).
    let chain = FakeFacilitator::start().await;
    chain.serve_chain(84532);
    let mut config = config;
    config.settlement.base_rpc_url = Some(Secret::new(chain.rpc_url()));
    let app = start(config).await;
    let r = app
        .post_json(&path(), &coaching_body("diagnose_growth"), &[])
        .await;
    assert_eq!(r.status(), 402);
    let header = r.headers()["payment-required"].to_str().expect("ascii");
    let v2 = decode_b64_json(header);
    assert_eq!(v2["accepts"][0]["network"], "eip155:84532");
    assert_eq!(v2["accepts"][0]["asset"], SEPOLIA_USDC);
    // A facilitator settles: nothing is labelled as local development.
    let description = v2["resource"]["description"].as_str().expect("text");
    assert!(!description.contains("development"), "{description}");
}
