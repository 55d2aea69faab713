//! `grove-admin`, the operators' command line: every subcommand explains itself (`--help`), and
//! it works against a running server over HTTP with `ADMIN_URL` and `ADMIN_TOKEN` alone.

use grove_tests::{ADMIN_TOKEN, spawn_app};
use serde_json::Value;
use std::process::{Command, Output};

fn cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(grove_tests::binary("grove-admin"))
        .env_clear()
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("grove-admin runs")
}

/// The subcommands a `--help` page lists under "Commands:" (less `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_has_help() {
    // Walk the tree from the top: every command a page lists has its own page.
    let mut pending = vec![Vec::<String>::new()];
    let mut seen = Vec::new();
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let out = cli(&args, &[]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(text.contains("Usage: grove-admin"), "{args:?}:\n{text}");
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            pending.push(next);
        }
        seen.push(path.join(" "));
    }
    seen.sort();
    for expected in [
        "",
        "whoami",
        "payments",
        "payments list",
        "payments resolve",
        "call",
        "receipt",
        "review",
        "opt-outs",
        "opt-outs add",
        "opt-outs remove",
        "opt-outs list",
        "report",
        "audit",
    ] {
        assert!(
            seen.iter().any(|s| s == expected),
            "no help for {expected:?}: {seen:?}"
        );
    }
    // A resolution says what it is: settled with a hash, or unsettled, never neither.
    let out = cli(
        &["payments", "resolve", "some-id", "--reason", "r"],
        &[("ADMIN_TOKEN", "x")],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[tokio::test]
async fn the_cli_works_against_a_running_server_with_url_and_token_from_the_environment() {
    let app = spawn_app().await;
    let url = app.admin.clone().expect("admin listener");
    let run = |args: Vec<&'static str>, token: &'static str| {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            cli(
                &args,
                &[("ADMIN_URL", url.as_str()), ("ADMIN_TOKEN", token)],
            )
        })
    };

    let out = run(vec!["whoami"], ADMIN_TOKEN).await.expect("ran");
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(answer["operator"], "alice");

    let out = run(vec!["payments", "list"], ADMIN_TOKEN)
        .await
        .expect("ran");
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(answer["payments"], serde_json::json!([]));

    // An opt-out through the CLI, seen in the audit through the CLI.
    let out = run(
        vec![
            "opt-outs",
            "add",
            "+13055550142",
            "--reason",
            "customer phoned",
        ],
        ADMIN_TOKEN,
    )
    .await
    .expect("ran");
    assert!(out.status.success(), "{out:?}");
    let out = run(vec!["audit", "--limit", "5"], "bob-test-token-0123456789")
        .await
        .expect("ran");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(answer["entries"][0]["action"], "opt_out.add");
    assert_eq!(answer["entries"][0]["operator"], "alice");

    // A wrong token: exit status 1, the server's refusal on stderr, nothing on stdout.
    let out = run(vec!["whoami"], "not-the-token-at-all")
        .await
        .expect("ran");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unauthorized"));
    // A bad phone: the server's 422 names the problem.
    let out = run(
        vec!["opt-outs", "add", "555-0142", "--reason", "r"],
        ADMIN_TOKEN,
    )
    .await
    .expect("ran");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/phone"));
}
