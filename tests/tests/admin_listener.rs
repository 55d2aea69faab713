//! The admin listener (`ADMIN_ADDR`): the metrics and the admin API live there, never on the
//! public port; the admin API wants an operator's token; the listener will not start unguarded
//! beyond loopback.

use grove_common::config::Config;
use grove_tests::{ADMIN_TOKEN, TestDb, default_env, spawn_app, spawn_app_with};
use serde_json::Value;

#[tokio::test]
async fn the_metrics_are_served_on_the_admin_listener_and_gone_from_the_public_port() {
    let app = spawn_app().await;
    for path in ["/metrics", "/metrics/queues"] {
        let public = app.get(path).await;
        assert_eq!(public.status(), 404, "{path} on the public port");
    }
    let metrics = app.admin_get("/metrics").await;
    assert_eq!(metrics.status(), 200);
    let text = metrics.text().await.expect("text");
    assert!(text.contains("# TYPE "), "{text}");
    let queues: Value = app
        .admin_get("/metrics/queues")
        .await
        .json()
        .await
        .expect("json");
    // The embedded mode's in-process queue has no counts to give.
    assert!(queues.get("queues").is_some(), "{queues}");
    let doc = app.get_json("/api/v1/openapi.json").await;
    let paths = doc["paths"].as_object().expect("paths");
    assert!(
        paths.keys().all(|p| !p.starts_with("/metrics")),
        "the OpenAPI document lists no metrics"
    );
}

#[tokio::test]
async fn the_admin_api_refuses_without_or_with_a_wrong_token_and_is_never_on_the_public_port() {
    let app = spawn_app().await;
    let whoami = |base: String, token: Option<&str>| {
        let mut req = app.client.get(format!("{base}/admin/v1/whoami"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let admin = app.admin.clone().expect("admin listener");

    let none = whoami(admin.clone(), None).await.expect("reaches");
    assert_eq!(none.status(), 401);
    assert!(
        none.headers()["www-authenticate"]
            .to_str()
            .is_ok_and(|v| v.starts_with("Bearer")),
        "401 says how to authenticate"
    );
    let body: Value = none.json().await.expect("json");
    assert_eq!(body["error"]["code"], "unauthorized");

    for wrong in ["alice-test-token-012345678", "not-a-token", ""] {
        let r = whoami(admin.clone(), Some(wrong)).await.expect("reaches");
        assert_eq!(r.status(), 401, "token {wrong:?}");
    }
    // A Basic scheme is not a bearer token, whatever it carries.
    let basic = app
        .client
        .get(format!("{admin}/admin/v1/whoami"))
        .basic_auth("alice", Some(ADMIN_TOKEN))
        .send()
        .await
        .expect("reaches");
    assert_eq!(basic.status(), 401);

    let ok = whoami(admin.clone(), Some(ADMIN_TOKEN))
        .await
        .expect("reaches");
    assert_eq!(ok.status(), 200);
    let body: Value = ok.json().await.expect("json");
    assert_eq!(body["operator"], "alice", "the token names its operator");
    let bob = whoami(admin.clone(), Some("bob-test-token-0123456789"))
        .await
        .expect("reaches");
    let body: Value = bob.json().await.expect("json");
    assert_eq!(body["operator"], "bob");

    // The public port has no admin API, with or without a token.
    let public = whoami(app.addr.clone(), Some(ADMIN_TOKEN))
        .await
        .expect("reaches");
    assert_eq!(public.status(), 404);
    for path in ["/console", "/admin/v1/payments", "/admin/v1/audit"] {
        assert_eq!(
            app.get(path).await.status(),
            404,
            "{path} on the public port"
        );
    }
}

#[tokio::test]
async fn without_tokens_on_loopback_the_metrics_serve_and_the_admin_api_refuses_everyone() {
    let app = spawn_app_with(&[], &["ADMIN_TOKENS"]).await;
    assert_eq!(app.admin_get("/metrics").await.status(), 200);
    let r = app
        .client
        .get(app.admin_url("/admin/v1/whoami"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("reaches");
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn the_admin_listener_refuses_to_start_beyond_loopback_without_a_token() {
    let db = TestDb::new().await;
    let mut env = default_env();
    env.insert("DATABASE_URL".into(), db.url.clone());
    env.insert("ADMIN_ADDR".into(), "0.0.0.0:0".into());
    env.remove("ADMIN_TOKENS");
    let config = Config::from_map(&env).expect("the configuration itself is valid");
    match grove::build(config).await {
        Ok(_) => panic!("an admin listener open to the network without a token started"),
        Err(e) => {
            let e = e.to_string();
            assert!(
                e.contains("ADMIN_TOKENS") && e.contains("0.0.0.0:0"),
                "the refusal names the variable and the address: {e}"
            );
        }
    }
    // With a token it starts, on every interface.
    env.insert(
        "ADMIN_TOKENS".into(),
        "carol:carol-test-token-0123456789".into(),
    );
    let config = Config::from_map(&env).expect("valid");
    let app = grove::build(config).await.expect("starts with a token");
    assert!(app.admin_addr().is_some_and(|a| a.ip().is_unspecified()));
}
