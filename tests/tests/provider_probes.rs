//! The health gates' probes (issue 30) against the loopback providers: a one-word completion in
//! each model wire format and Twilio's account fetch pass while the provider works, and fail
//! while it refuses connections, answers 5xx or refuses our credentials. A probe never takes a
//! paid call's scripted answer and never texts anyone.

use grove_common::config::{LlmConfig, LlmProviderKind, Secret, TwilioConfig};
use grove_tests::{
    llm::FakeLlm,
    twilio::{ACCOUNT_SID, FROM, FakeTwilio},
};
use grove_worker::{
    llm::{self, RetryPolicy},
    sms::{SmsProvider, TwilioProvider},
};

async fn model_probe_follows_the_provider(kind: LlmProviderKind) {
    let fake = FakeLlm::start().await;
    let (base, key) = match kind {
        LlmProviderKind::OpenAi => (fake.openai_base(), None),
        LlmProviderKind::Anthropic => (fake.anthropic_base(), Some(Secret::new("test-key"))),
    };
    let provider =
        llm::from_config(&LlmConfig::new(kind, &base, key), RetryPolicy::LLM).expect("client");
    provider.probe().await.expect("a working model passes");

    fake.fail_all(true);
    assert!(provider.probe().await.is_err(), "5xx fails it");
    fake.fail_all(false);

    fake.go_down().await;
    let refused = provider
        .probe()
        .await
        .expect_err("refused connections fail it");
    assert!(refused.to_string().contains("connect"), "{refused}");
    fake.come_back().await;
    provider.probe().await.expect("back");

    assert_eq!(
        fake.probes(),
        3,
        "two passed, one 5xx; the one while down never arrived"
    );
    assert_eq!(fake.received(), 0, "probes are not paid calls");
}

#[tokio::test]
async fn the_openai_probe_follows_the_provider() {
    model_probe_follows_the_provider(LlmProviderKind::OpenAi).await;
}

#[tokio::test]
async fn the_anthropic_probe_follows_the_provider() {
    model_probe_follows_the_provider(LlmProviderKind::Anthropic).await;
}

fn twilio(fake: &FakeTwilio, token: &str) -> TwilioProvider {
    let config = TwilioConfig {
        account_sid: ACCOUNT_SID.into(),
        auth_token: Secret::new(token),
        from: Some(FROM.into()),
        messaging_service_sid: None,
        base_url: fake.url().to_owned(),
    };
    TwilioProvider::new(&config, RetryPolicy::SMS).expect("client")
}

#[tokio::test]
async fn the_twilio_probe_fetches_the_account_and_texts_nobody() {
    let fake = FakeTwilio::start().await;
    let provider = twilio(&fake, grove_tests::twilio::AUTH_TOKEN);
    provider.probe().await.expect("a working account passes");
    let wrong_key = twilio(&fake, "not-the-token");
    assert!(wrong_key.probe().await.is_err(), "credentials refused");
    fake.go_down().await;
    assert!(provider.probe().await.is_err(), "refused connections");
    fake.come_back().await;
    provider.probe().await.expect("back");
    assert_eq!(fake.probes(), 3, "the down probe never arrived");
    assert_eq!(fake.sends(), 0, "no message was created");
}
