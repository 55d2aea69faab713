//! Configuration from a map: defaults, every refusal named by its variable.

use super::*;

fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_map(&map)
}

#[test]
fn defaults_describe_a_development_machine() {
    let c = config(&[]).expect("defaults parse");
    assert_eq!(c.app_env, AppEnv::Development);
    assert_eq!(c.public_base_url, "http://localhost:8080");
    assert_eq!(c.sandbox_header(), "x-grove-sandbox");
    assert_eq!(c.skill_path(), "/skills/grove-x402/SKILL.md");
    assert!(c.pay_to.is_none() && c.llm.is_none() && c.settles_locally());
    assert_eq!(c.sms_provider, SmsProviderKind::Outbox);
}

#[test]
fn the_api_listens_on_port_when_bind_addr_is_unset() {
    let addr = |pairs: &[(&str, &str)]| config(pairs).expect("valid").bind_addr.to_string();
    assert_eq!(addr(&[]), "0.0.0.0:8080");
    assert_eq!(addr(&[("PORT", "5123")]), "0.0.0.0:5123");
    // An explicit address wins over the platform's port.
    assert_eq!(
        addr(&[("PORT", "5123"), ("BIND_ADDR", "127.0.0.1:9000")]),
        "127.0.0.1:9000"
    );
    // Empty counts as unset, as for every variable.
    assert_eq!(addr(&[("PORT", "5123"), ("BIND_ADDR", "")]), "0.0.0.0:5123");
}

#[test]
fn production_refuses_local_settlement_and_the_outbox() {
    let err = config(&[("APP_ENV", "production")]).unwrap_err();
    assert!(
        matches!(err, ConfigError::UnsafeInProduction(m) if m.contains("X402_FACILITATOR_URL"))
    );
    let err = config(&[
        ("APP_ENV", "production"),
        ("X402_FACILITATOR_URL", "https://f.example"),
    ])
    .unwrap_err();
    assert!(matches!(err, ConfigError::UnsafeInProduction(m) if m.contains("SMS_PROVIDER")));
}

#[test]
fn production_refuses_a_plain_http_facilitator() {
    let prod = |url| {
        config(&[
            ("APP_ENV", "production"),
            ("X402_FACILITATOR_URL", url),
            ("SMS_PROVIDER", "twilio"),
            ("TWILIO_ACCOUNT_SID", "AC1"),
            ("TWILIO_AUTH_TOKEN", "t"),
            ("TWILIO_FROM", "+15550100"),
            ("BASE_RPC_URL", "https://rpc.example"),
        ])
    };
    let want = "X402_FACILITATOR_URL: must be https:// with APP_ENV=production";
    for url in ["http://f.example", "http://127.0.0.1:4021", "f.example"] {
        let err = prod(url).unwrap_err();
        assert_eq!(err.to_string(), want, "{url}");
    }
    let c = prod("https://f.example/").expect("https is accepted");
    assert_eq!(c.facilitator_url.as_deref(), Some("https://f.example"));
    // Development keeps a loopback facilitator on plain http (the test rigs use one).
    let loopback = "http://127.0.0.1:4021";
    let dev = config(&[("X402_FACILITATOR_URL", loopback)]).expect("dev");
    assert_eq!(dev.facilitator_url.as_deref(), Some(loopback));
    let err = config(&[("X402_FACILITATOR_URL", "ftp://f.example")]).unwrap_err();
    assert!(err.to_string().starts_with("X402_FACILITATOR_URL"), "{err}");
}

#[test]
fn sqlite_commits_sync_at_normal_unless_full_is_asked() {
    assert_eq!(config(&[]).unwrap().sqlite_sync, SqliteSync::Normal);
    let full = config(&[("SQLITE_SYNCHRONOUS", "full")]).unwrap();
    assert_eq!(full.sqlite_sync, SqliteSync::Full);
}

#[test]
fn the_postgres_pool_is_sized_by_database_pool_size() {
    assert_eq!(
        config(&[]).unwrap().database_pool,
        super::DEFAULT_DATABASE_POOL
    );
    let sized = config(&[("DATABASE_POOL_SIZE", "3")]).unwrap();
    assert_eq!(sized.database_pool, 3);
}

#[test]
fn paid_writes_share_a_statement_up_to_database_write_batch() {
    assert_eq!(config(&[]).unwrap().write_batch, super::DEFAULT_WRITE_BATCH);
    let alone = config(&[("DATABASE_WRITE_BATCH", "1")]).unwrap();
    assert_eq!(alone.write_batch, 1);
}

#[test]
fn bad_values_name_their_variable() {
    for (k, v) in [
        ("X402_PAY_TO", "0x123"),
        ("LLM_PROVIDER", "gemini"),
        ("CALL_DEADLINE_S", "soon"),
        ("BIND_ADDR", "nowhere"),
        ("PORT", "http"),
        ("PORT", "0"),
        ("SQLITE_SYNCHRONOUS", "off"),
        ("WORKER_CONCURRENCY", "0"),
        ("DATABASE_POOL_SIZE", "0"),
        ("DATABASE_POOL_SIZE", "many"),
        ("DATABASE_WRITE_BATCH", "0"),
        ("DATABASE_WRITE_BATCH", "2000"),
    ] {
        let err = config(&[(k, v)]).unwrap_err();
        assert!(err.to_string().starts_with(k), "{err}");
    }
    for (k, v) in [("LLM_MAX_CONCURRENCY", "0"), ("LLM_TOKENS_PER_MIN", "lots")] {
        let err = config(&[("LLM_PROVIDER", "openai"), (k, v)]).unwrap_err();
        assert!(err.to_string().starts_with(k), "{err}");
    }
    let limited = config(&[
        ("LLM_PROVIDER", "openai"),
        ("LLM_MAX_CONCURRENCY", "500"),
        ("LLM_TOKENS_PER_MIN", "2000000"),
    ])
    .expect("parses")
    .llm
    .expect("a provider");
    assert_eq!(limited.max_concurrency, Some(500));
    assert_eq!(limited.tokens_per_min, Some(2_000_000));
    // A hosted model's key is required where the model is called, not by configuration.
    let llm = config(&[("LLM_PROVIDER", "anthropic")])
        .expect("parses without a key")
        .llm
        .expect("a provider");
    let err = llm.require_key().unwrap_err();
    assert!(err.to_string().starts_with("LLM_API_KEY"));
    let self_hosted = config(&[
        ("LLM_PROVIDER", "openai"),
        ("LLM_BASE_URL", "http://127.0.0.1:8000/v1"),
    ])
    .expect("parses")
    .llm
    .expect("a provider");
    assert_eq!(self_hosted.require_key(), Ok(()));
}

#[test]
fn secrets_do_not_print() {
    let c = config(&[
        ("LLM_PROVIDER", "openai"),
        ("LLM_API_KEY", "sk-very-secret"),
    ])
    .expect("parses");
    assert!(!format!("{c:?}").contains("sk-very-secret"));
}

#[test]
fn health_gates_default_to_five_failures_in_thirty_seconds_and_name_bad_values() {
    let c = config(&[]).expect("defaults parse");
    assert_eq!(c.health, HealthPolicy::default());
    assert_eq!(
        (c.health.window, c.health.failures),
        (Duration::from_secs(30), 5)
    );
    assert_eq!(
        (c.health.probe_after, c.health.probe_max),
        (Duration::from_secs(5), Duration::from_secs(15))
    );
    let c = config(&[("HEALTH_PROBE_S", "40")]).expect("a later first probe");
    assert_eq!(
        c.health.probe_max,
        Duration::from_secs(40),
        "never below the first"
    );
    for (var, value) in [
        ("HEALTH_WINDOW_S", "0"),
        ("HEALTH_FAILURES", "many"),
        ("HEALTH_PROBE_S", "0"),
        ("HEALTH_PROBE_MAX_S", "2"),
    ] {
        let err = config(&[(var, value)]).unwrap_err();
        assert!(err.to_string().starts_with(var), "{var}={value}: {err}");
    }
}

#[test]
fn payments_are_on_base_mainnet_unless_x402_network_names_the_testnet() {
    assert_eq!(config(&[]).expect("defaults").network, Network::Base);
    for (value, network) in [
        ("base", Network::Base),
        ("eip155:8453", Network::Base),
        ("base-sepolia", Network::BaseSepolia),
        ("eip155:84532", Network::BaseSepolia),
    ] {
        let c = config(&[("X402_NETWORK", value)]).expect(value);
        assert_eq!(c.network, network, "{value}");
    }
    for (var, value) in [
        ("X402_NETWORK", "sepolia"),
        ("X402_NETWORK", "eip155:1"),
        ("X402_ALLOW_TESTNET", "yes"),
    ] {
        let err = config(&[(var, value)]).unwrap_err();
        assert!(err.to_string().starts_with(var), "{var}={value}: {err}");
    }
}

#[test]
fn production_refuses_the_testnet_unless_explicitly_allowed() {
    let prod = |extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("APP_ENV", "production"),
            ("X402_FACILITATOR_URL", "https://x402.org/facilitator"),
            ("BASE_RPC_URL", "https://sepolia.base.org"),
            ("SMS_PROVIDER", "twilio"),
            ("TWILIO_ACCOUNT_SID", "AC1"),
            ("TWILIO_AUTH_TOKEN", "t"),
            ("TWILIO_FROM", "+15550100"),
            ("BASE_RPC_URL", "https://rpc.example"),
        ];
        pairs.extend_from_slice(extra);
        config(&pairs)
    };
    let refused = prod(&[("X402_NETWORK", "base-sepolia")]).unwrap_err();
    let line = refused.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    assert!(
        line.contains("X402_NETWORK=base-sepolia") && line.contains("X402_ALLOW_TESTNET=true"),
        "names the variable and the fix: {line}"
    );
    let allowed = prod(&[
        ("X402_NETWORK", "base-sepolia"),
        ("X402_ALLOW_TESTNET", "true"),
    ])
    .expect("allowed on purpose");
    assert_eq!(allowed.network, Network::BaseSepolia);
    assert_eq!(prod(&[]).expect("mainnet").network, Network::Base);
    let explicit_off = prod(&[
        ("X402_NETWORK", "base-sepolia"),
        ("X402_ALLOW_TESTNET", "false"),
    ]);
    assert_eq!(explicit_off.unwrap_err(), refused);
}
