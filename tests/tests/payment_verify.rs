//! Local payment verification (CONTRACT 3, "Payment"): a wallet-signed payment for a real 402
//! challenge verifies and names the wallet as payer; every forgery is refused with its reason.

use alloy_primitives::{Address, B256, U256, U512};
use axum::http::{HeaderMap, HeaderValue};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use grove_common::config::Network;
use grove_http::{
    Expected, PaymentPayload, PaymentRejection, VerifiedPayment, verify, verify_payload,
};
use grove_tests::{
    PAY_TO, coaching_body,
    llm::caller_body,
    paid::{Options, spawn_paid},
    spawn_app,
    x402::{PayOptions, TestWallet, decode_b64_json, now_unix},
};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

/// Base Sepolia's USDC: a real token, not ours.
const SEPOLIA_USDC: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

/// mary / diagnose_growth costs $0.18.
const PRICE: u64 = 180_000;

/// A real challenge: the `PAYMENT-REQUIRED` header value and the v1 body of one 402.
async fn challenge() -> (String, Value) {
    let app = spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &coaching_body("diagnose_growth"),
            &[],
        )
        .await;
    assert_eq!(r.status(), 402);
    let header = r.headers()["payment-required"]
        .to_str()
        .expect("ascii")
        .to_owned();
    (header, r.json().await.expect("v1 body"))
}

fn expected() -> Expected {
    Expected {
        network: Network::Base,
        pay_to: PAY_TO.parse().expect("PAY_TO parses"),
        amount_atomic: PRICE,
    }
}

fn one_header(name: &'static str, value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(name, HeaderValue::from_str(value).expect("header value"));
    headers
}

fn check(name: &'static str, value: &str) -> Result<Option<VerifiedPayment>, PaymentRejection> {
    verify(&one_header(name, value), &expected(), now_unix())
}

fn reason(result: Result<Option<VerifiedPayment>, PaymentRejection>) -> &'static str {
    match result {
        Ok(Some(_)) => "verified",
        Ok(None) => "none",
        Err(rejection) => rejection.reason(),
    }
}

#[tokio::test]
async fn wallet_signed_v2_payment_for_a_real_challenge_verifies_and_names_the_wallet() {
    let (header, _) = challenge().await;
    let wallet = TestWallet::new();
    let nonce = B256::repeat_byte(7);
    let before = now_unix() + 300;
    let opts = PayOptions {
        nonce: Some(nonce),
        valid_before: Some(before),
        ..PayOptions::default()
    };
    let paid = check("payment-signature", &wallet.pay(&header, opts))
        .expect("verifies")
        .expect("a payment was present");
    assert_eq!(paid.version, 2);
    assert_eq!(paid.payer, wallet.address());
    assert_eq!(paid.nonce, nonce);
    assert_eq!(paid.amount_atomic, PRICE);
    assert_eq!(paid.valid_before, before);
    assert_eq!(paid.payload["x402Version"], 2);
    assert_eq!(
        paid.payload["accepted"],
        decode_b64_json(&header)["accepts"][0]
    );
}

/// Another transport (MCP's `_meta["x402/payment"]`) hands the payment over as JSON, not as a
/// base64 header: it verifies exactly as the same payment in `PAYMENT-SIGNATURE` does.
#[tokio::test]
async fn a_payment_given_as_json_verifies_like_the_same_payment_in_a_header() {
    let (header, _) = challenge().await;
    let signed = TestWallet::new().pay(&header, PayOptions::default());
    let by_header = check("payment-signature", &signed)
        .expect("verifies")
        .expect("a payment was present");
    let json = decode_b64_json(&signed);
    let presented = PaymentPayload::from_json(json, "_meta x402/payment").expect("an object");
    let by_json = verify_payload(presented, &expected(), now_unix()).expect("verifies");
    assert_eq!(by_json, by_header);
    let mut wrong = decode_b64_json(&signed);
    wrong["x402Version"] = json!(1);
    let presented = PaymentPayload::from_json(wrong, "_meta x402/payment").expect("an object");
    let refused = verify_payload(presented, &expected(), now_unix()).expect_err("v2 carrier");
    assert_eq!(refused.reason(), "unsupported_version");
    assert_eq!(
        PaymentPayload::from_json(json!("not an object"), "_meta x402/payment")
            .expect_err("refused")
            .reason(),
        "malformed_header"
    );
}

#[tokio::test]
async fn v1_x_payment_for_the_v1_body_verifies() {
    let (_, body) = challenge().await;
    let wallet = TestWallet::random();
    let paid = check("x-payment", &wallet.pay_v1(&body, PayOptions::default()))
        .expect("verifies")
        .expect("a payment was present");
    assert_eq!(paid.version, 1);
    assert_eq!(paid.payer, wallet.address());
    assert_eq!(paid.payload["network"], "base");
}

#[tokio::test]
async fn no_payment_header_means_no_payment() {
    assert_eq!(verify(&HeaderMap::new(), &expected(), now_unix()), Ok(None));
}

#[tokio::test]
async fn payment_signature_is_read_before_x_payment() {
    let (header, _) = challenge().await;
    let mut headers = one_header(
        "payment-signature",
        &TestWallet::new().pay(&header, PayOptions::default()),
    );
    headers.insert("x-payment", HeaderValue::from_static("garbage"));
    let paid = verify(&headers, &expected(), now_unix()).expect("verifies");
    assert_eq!(paid.map(|p| p.version), Some(2));
}

#[tokio::test]
async fn forged_v2_payments_are_refused_with_their_reason() {
    let (header, _) = challenge().await;
    let wallet = TestWallet::new();
    let now = now_unix();
    let aa = "0x00000000000000000000000000000000000000aa";
    let someone_else: Address = aa.parse().expect("address");
    let o = |f: &dyn Fn(&mut PayOptions)| {
        let mut opts = PayOptions::default();
        f(&mut opts);
        opts
    };
    // A table reads better than rustfmt's one-field-per-line layout.
    #[rustfmt::skip]
    let cases: Vec<(&str, PayOptions, &str)> = vec![
        ("one unit more", o(&|p| p.value = Some("180001".into())), "wrong_amount"),
        ("one unit", o(&|p| p.value = Some("1".into())), "wrong_amount"),
        ("to someone else", o(&|p| p.to = Some(someone_else)), "wrong_pay_to"),
        ("expired", o(&|p| p.valid_before = Some(now - 1)), "expired"),
        ("5 s left", o(&|p| p.valid_before = Some(now + 5)), "expired"),
        ("not yet valid", o(&|p| p.valid_after = Some(now + 60)), "not_yet_valid"),
        ("domain \"USDC\"", o(&|p| p.domain_name = Some("USDC".into())), "signer_mismatch"),
        ("Sepolia's chain id", o(&|p| p.chain_id = Some(84532)), "signer_mismatch"),
        ("high s", o(&|p| p.high_s = true), "high_s_signature"),
        ("corrupted s", o(&|p| p.corrupt_signature = true), "signer_mismatch"),
        ("another key", o(&|p| p.sign_with_other_key = true), "signer_mismatch"),
        // Signed for 1 unit, then raised to the price: the signature no longer fits.
        ("value tampered", o(&|p| {
            p.value = Some("1".into());
            p.after_signing = Some(|d| d["payload"]["authorization"]["value"] = json!("180000"));
        }), "signer_mismatch"),
        ("nonce tampered", edit(|d| d["payload"]["authorization"]["nonce"] = json!(B256::ZERO)), "signer_mismatch"),
        ("accepted.scheme", edit(|d| d["accepted"]["scheme"] = json!("upto")), "wrong_scheme"),
        ("accepted.network", edit(|d| d["accepted"]["network"] = json!("eip155:84532")), "wrong_network"),
        ("accepted.asset", edit(|d| d["accepted"]["asset"] = json!(SEPOLIA_USDC)), "wrong_asset"),
        ("accepted.payTo", edit(|d| d["accepted"]["payTo"] = json!(Address::ZERO)), "wrong_pay_to"),
        ("accepted.amount", edit(|d| d["accepted"]["amount"] = json!("1")), "wrong_amount"),
        ("v1 on the v2 header", edit(|d| d["x402Version"] = json!(1)), "unsupported_version"),
        ("version 3", edit(|d| d["x402Version"] = json!(3)), "unsupported_version"),
        ("no version", edit(|d| d["x402Version"] = Value::Null), "unsupported_version"),
        ("64-byte signature", edit(|d| truncate_signature(d, 128)), "bad_signature"),
        ("v = 0", edit(|d| set_v(d, "00")), "bad_signature"),
        ("signature not hex", edit(|d| d["payload"]["signature"] = json!("0xzz")), "bad_signature"),
        // Only a smart wallet signs more than 65 bytes, and without a chain it cannot be asked.
        ("66-byte signature", edit(|d| set_v(d, "1b00")), "smart_wallet_needs_chain"),
        ("ERC-6492 suffix on garbage", edit(|d| set_v(d, &"6492".repeat(16))), "bad_erc6492_signature"),
        ("no from", edit(|d| d["payload"]["authorization"]["from"] = Value::Null), "malformed_header"),
        ("short nonce", edit(|d| d["payload"]["authorization"]["nonce"] = json!("0x01")), "malformed_header"),
        ("numeric value", edit(|d| d["payload"]["authorization"]["value"] = json!(180000)), "malformed_header"),
        ("no accepted", edit(|d| d["accepted"] = Value::Null), "malformed_header"),
    ];
    for (name, opts, want) in cases {
        let got = reason(check("payment-signature", &wallet.pay(&header, opts)));
        assert_eq!(got, want, "{name}");
    }
}

fn edit(f: fn(&mut Value)) -> PayOptions {
    PayOptions {
        after_signing: Some(f),
        ..Default::default()
    }
}

fn truncate_signature(doc: &mut Value, hex_chars: usize) {
    let sig = doc["payload"]["signature"]
        .as_str()
        .expect("signature")
        .to_owned();
    doc["payload"]["signature"] = json!(sig[..2 + hex_chars]);
}

fn set_v(doc: &mut Value, v: &str) {
    let sig = doc["payload"]["signature"]
        .as_str()
        .expect("signature")
        .to_owned();
    doc["payload"]["signature"] = json!(format!("{}{v}", &sig[..2 + 128]));
}

#[tokio::test]
async fn forged_v1_payments_are_refused_with_their_reason() {
    let (header, body) = challenge().await;
    let wallet = TestWallet::new();
    let v1 = |f: fn(&mut Value)| wallet.pay_v1(&body, edit(f));
    assert_eq!(
        reason(check(
            "x-payment",
            &v1(|d| d["network"] = json!("base-sepolia"))
        )),
        "wrong_network"
    );
    assert_eq!(
        reason(check("x-payment", &v1(|d| d["scheme"] = json!("upto")))),
        "wrong_scheme"
    );
    assert_eq!(
        reason(check(
            "x-payment",
            &v1(|d| d["network"] = json!("eip155:8453"))
        )),
        "wrong_network"
    );
    // A payload must travel in its own version's header.
    let v2_payload = wallet.pay(&header, PayOptions::default());
    assert_eq!(
        reason(check("x-payment", &v2_payload)),
        "unsupported_version"
    );
    let v1_payload = wallet.pay_v1(&body, PayOptions::default());
    assert_eq!(
        reason(check("payment-signature", &v1_payload)),
        "unsupported_version"
    );
}

#[tokio::test]
async fn validity_window_is_usdcs_strictly_after_valid_after_and_six_seconds_before_valid_before() {
    let (header, _) = challenge().await;
    let now = now_unix();
    let opts = PayOptions {
        valid_after: Some(now - 1),
        valid_before: Some(now + 6),
        ..Default::default()
    };
    let payment = one_header("payment-signature", &TestWallet::new().pay(&header, opts));
    assert_eq!(reason(verify(&payment, &expected(), now)), "verified");
    assert_eq!(reason(verify(&payment, &expected(), now + 1)), "expired");
    // USDC reverts unless `block.timestamp > validAfter`: at validAfter itself it is too early.
    assert_eq!(
        reason(verify(&payment, &expected(), now - 1)),
        "not_yet_valid"
    );
    assert_eq!(
        reason(verify(&payment, &expected(), now - 2)),
        "not_yet_valid"
    );
}

/// An honest v2 payment for the challenge, as JSON to edit after signing.
fn honest_doc(header: &str, opts: PayOptions) -> Value {
    decode_b64_json(&TestWallet::new().pay(header, opts))
}

fn check_doc(doc: &Value) -> &'static str {
    reason(check(
        "payment-signature",
        &STANDARD.encode(doc.to_string()),
    ))
}

/// Another way to write a number.
type Spelling = fn(U256) -> String;

/// Rewrites the decimal integer at `pointer` in another spelling of the same number, so the
/// signature over it still holds.
fn respell(doc: &mut Value, pointer: &str, spell: Spelling) {
    let slot = doc.pointer_mut(pointer).expect(pointer);
    let number = slot
        .as_str()
        .and_then(|s| U256::from_str_radix(s, 10).ok())
        .expect("a decimal integer");
    *slot = json!(spell(number));
}

/// `n + 2^256` in decimal: what a parser that wraps at 2^256 would read as `n`.
fn plus_2_pow_256(n: U256) -> String {
    let wide = U512::from_be_slice(&n.to_be_bytes::<32>());
    (wide + (U512::from(1u8) << 256usize)).to_string()
}

#[tokio::test]
async fn integers_must_be_canonical_decimal_strings_though_the_signature_holds() {
    let (header, _) = challenge().await;
    let honest = honest_doc(&header, PayOptions::default());
    let fields = [
        "/payload/authorization/value",
        "/payload/authorization/validAfter",
        "/payload/authorization/validBefore",
        "/accepted/amount",
    ];
    #[rustfmt::skip]
    let spellings: [(&str, Spelling, &str); 12] = [
        ("as is", |n| n.to_string(), "verified"),
        ("leading zero", |n| format!("0{n}"), "integer_leading_zero"),
        ("leading zeros", |n| format!("0000000000{n}"), "integer_leading_zero"),
        ("plus sign", |n| format!("+{n}"), "integer_not_decimal"),
        ("leading space", |n| format!(" {n}"), "integer_not_decimal"),
        ("trailing space", |n| format!("{n} "), "integer_not_decimal"),
        ("hex", |n| format!("{n:#x}"), "integer_not_decimal"),
        ("exponent", |n| {
            let digits = n.to_string();
            let mantissa = digits.trim_end_matches('0');
            format!("{mantissa}e{}", digits.len() - mantissa.len())
        }, "integer_not_decimal"),
        ("decimal point", |n| format!("{n}.0"), "integer_not_decimal"),
        ("underscores", |n| n.to_string().chars().map(String::from).collect::<Vec<_>>().join("_"), "integer_not_decimal"),
        ("plus 2^256", plus_2_pow_256, "integer_too_large"),
        ("empty", |_| String::new(), "integer_not_decimal"),
    ];
    for field in fields {
        for (name, spell, want) in spellings {
            let mut doc = honest.clone();
            respell(&mut doc, field, spell);
            assert_eq!(
                check_doc(&doc),
                want,
                "{field} {name}: {}",
                doc.pointer(field).unwrap_or(&Value::Null)
            );
        }
    }
}

#[tokio::test]
async fn accepted_timeout_and_extra_must_be_what_was_offered() {
    let (header, _) = challenge().await;
    let honest = honest_doc(&header, PayOptions::default());
    let offered = decode_b64_json(&header)["accepts"][0].clone();
    assert_eq!(offered["maxTimeoutSeconds"], 300);
    assert_eq!(
        offered["extra"],
        json!({"name": "USD Coin", "version": "2"})
    );
    assert_eq!(honest["accepted"], offered);
    #[rustfmt::skip]
    let cases: [(&str, &str, Option<Value>, &str); 13] = [
        ("as offered", "/accepted/maxTimeoutSeconds", Some(json!(300)), "verified"),
        ("longer", "/accepted/maxTimeoutSeconds", Some(json!(3600)), "wrong_max_timeout"),
        ("shorter", "/accepted/maxTimeoutSeconds", Some(json!(60)), "wrong_max_timeout"),
        ("a string", "/accepted/maxTimeoutSeconds", Some(json!("300")), "wrong_max_timeout"),
        ("a float", "/accepted/maxTimeoutSeconds", Some(json!(300.0)), "wrong_max_timeout"),
        ("absent", "/accepted/maxTimeoutSeconds", None, "wrong_max_timeout"),
        // Objects compare as values: key order is not part of what was offered.
        ("reordered", "/accepted/extra", Some(json!({"version": "2", "name": "USD Coin"})), "verified"),
        ("Sepolia's name", "/accepted/extra/name", Some(json!("USDC")), "wrong_extra"),
        ("version 1", "/accepted/extra/version", Some(json!("1")), "wrong_extra"),
        ("a field added", "/accepted/extra/assetTransferMethod", Some(json!("permit2")), "wrong_extra"),
        ("a field missing", "/accepted/extra/version", None, "wrong_extra"),
        ("null", "/accepted/extra", Some(Value::Null), "wrong_extra"),
        ("absent", "/accepted/extra", None, "wrong_extra"),
    ];
    for (name, pointer, value, want) in cases {
        let mut doc = honest.clone();
        match value {
            Some(v) => grove_tests::set_pointer(&mut doc, pointer, v),
            None => grove_tests::remove_pointer(&mut doc, pointer),
        }
        assert_eq!(check_doc(&doc), want, "{pointer} {name}");
    }
}

/// Each refusal, sent with one nonce; the honest payment with that nonce then still goes through.
#[tokio::test]
async fn refused_payments_reserve_no_nonce_and_settle_nothing() {
    let rig = spawn_paid(Options::default()).await;
    let path = "/api/v1/agents/mary/call";
    let body = caller_body("diagnose_growth");
    let now = now_unix();
    let nonce = B256::repeat_byte(0x5a);
    let signed = |opts| {
        rig.payment_for(
            path,
            &body,
            PayOptions {
                nonce: Some(nonce),
                ..opts
            },
        )
    };
    let honest = decode_b64_json(&signed(PayOptions::default()).await);
    let edited = |f: fn(&mut Value)| {
        let mut doc = honest.clone();
        f(&mut doc);
        doc
    };
    #[rustfmt::skip]
    let refused: Vec<(&str, Value)> = vec![
        ("integer_leading_zero", edited(|d| respell(d, "/payload/authorization/value", |n| format!("0{n}")))),
        ("integer_not_decimal", edited(|d| respell(d, "/payload/authorization/validBefore", |n| format!("{n:#x}")))),
        ("wrong_max_timeout", edited(|d| d["accepted"]["maxTimeoutSeconds"] = json!(3600))),
        ("wrong_extra", edited(|d| d["accepted"]["extra"]["name"] = json!("USDC"))),
        ("not_yet_valid", decode_b64_json(&signed(PayOptions { valid_after: Some(now + 60), ..Default::default() }).await)),
    ];
    for (reason, doc) in refused {
        let r = rig
            .send_paid(path, &body, &STANDARD.encode(doc.to_string()), None)
            .await;
        assert_eq!(r.status(), 402, "{reason}");
        assert!(r.headers().get("payment-required").is_some(), "{reason}");
        let error = r.json::<Value>().await.expect("json")["error"].clone();
        assert_eq!(error, format!("payment_invalid:{reason}"));
    }
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert_eq!(rig.llm.received(), 0);

    let r = rig
        .send_paid(path, &body, &STANDARD.encode(honest.to_string()), None)
        .await;
    assert_eq!(r.status(), 200, "the nonce was never reserved");
    assert_eq!(rig.facilitator.settle_calls(), 1);
    let settled = &rig.facilitator.requests()[0]["paymentPayload"]["payload"]["authorization"];
    assert_eq!(settled["nonce"], json!(nonce));
    assert_eq!(settled["value"], "180000");
}

#[tokio::test]
async fn address_case_and_base64_spelling_do_not_matter() {
    let (header, _) = challenge().await;
    let opts = edit(|d| {
        let auth = &mut d["payload"]["authorization"];
        auth["from"] = json!(auth["from"].as_str().map(str::to_lowercase));
        auth["to"] = json!(
            auth["to"]
                .as_str()
                .map(|s| format!("0x{}", s[2..].to_uppercase()))
        );
        d["accepted"]["asset"] = json!(d["accepted"]["asset"].as_str().map(str::to_lowercase));
    });
    let standard = TestWallet::new().pay(&header, opts);
    assert_eq!(reason(check("payment-signature", &standard)), "verified");
    let url_safe = URL_SAFE_NO_PAD.encode(STANDARD.decode(&standard).expect("base64"));
    assert_eq!(reason(check("payment-signature", &url_safe)), "verified");
}

#[tokio::test]
async fn garbage_headers_are_malformed_and_never_panic() {
    for garbage in [
        "!!!not base64!!!".to_owned(),
        STANDARD.encode("not json"),
        STANDARD.encode("[1, 2, 3]"),
        STANDARD.encode("\"a string\""),
        String::new(),
        "A".repeat(40_000),
    ] {
        assert_eq!(
            reason(check("payment-signature", &garbage)),
            "malformed_header",
            "{garbage:.40}"
        );
    }
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-payment",
        HeaderValue::from_bytes(b"\xff\xfe").expect("opaque bytes"),
    );
    assert_eq!(
        reason(verify(&headers, &expected(), now_unix())),
        "malformed_header"
    );
    let mut twice = HeaderMap::new();
    twice.append("payment-signature", HeaderValue::from_static("eyJ9"));
    twice.append("payment-signature", HeaderValue::from_static("eyJ9"));
    assert_eq!(
        reason(verify(&twice, &expected(), now_unix())),
        "malformed_header"
    );
}

#[tokio::test]
async fn randomly_mutated_payments_are_refused_without_panicking() {
    let (header, _) = challenge().await;
    let honest = decode_b64_json(&TestWallet::new().pay(&header, PayOptions::default()));
    let mut rng = StdRng::seed_from_u64(402);
    let leaves = [
        "/x402Version",
        "/accepted/scheme",
        "/accepted/network",
        "/accepted/amount",
        "/accepted/asset",
        "/accepted/payTo",
        "/accepted/maxTimeoutSeconds",
        "/accepted/extra",
        "/accepted/extra/name",
        "/payload/signature",
        "/payload/authorization/from",
        "/payload/authorization/to",
        "/payload/authorization/value",
        "/payload/authorization/validAfter",
        "/payload/authorization/validBefore",
        "/payload/authorization/nonce",
    ];
    for _ in 0..500 {
        let mut doc = honest.clone();
        let leaf = leaves[rng.random_range(0..leaves.len())];
        let replacement = match rng.random_range(0..6) {
            0 => Value::Null,
            1 => json!(rng.random::<u64>()),
            2 => json!(-1),
            3 => json!(format!("0x{}", "f".repeat(rng.random_range(0..140)))),
            4 => json!([]),
            _ => json!("9".repeat(rng.random_range(0..100))),
        };
        if let Some(slot) = doc.pointer_mut(leaf) {
            *slot = replacement;
        }
        let encoded = STANDARD.encode(doc.to_string());
        let result = check("payment-signature", &encoded);
        assert!(result.is_err(), "{leaf} mutated still verifies: {doc}");
    }
    for _ in 0..200 {
        let len = rng.random_range(0..300);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        assert!(check("x-payment", &STANDARD.encode(bytes)).is_err());
    }
}
