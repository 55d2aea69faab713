//! The README's examples, and the programs the agent guide shows, run as a reader would run them:
//! each code block the README marks `<!-- runnable: expect "…" -->` runs against a server this
//! test starts on the development default (payments verified locally, nothing settled), with a
//! throwaway key, through the official clients (npm `@x402/fetch` from `scripts/x402-clients`,
//! PyPI `x402` and `mcp` from `scripts/mcp-client`). An example that breaks fails the suite.

use grove_common::config::Config;
use grove_tests::{PAY_TO, TestDb, default_env, free_port, llm::FakeLlm, start};
use std::{
    path::PathBuf,
    process::{Command, Output},
};

/// One fenced block: its language, its code, and what its output must contain.
#[derive(Debug)]
struct Example {
    lang: String,
    code: String,
    expect: String,
}

/// The blocks a `<!-- runnable: expect "…" -->` line marks, in order.
fn runnable_blocks(markdown: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(expect) = line
            .trim()
            .strip_prefix("<!-- runnable: expect \"")
            .and_then(|rest| rest.strip_suffix("\" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        let lang = fence
            .strip_prefix("```")
            .unwrap_or_else(|| panic!("a runnable marker must be followed by a fence: {fence:?}"));
        let code: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        examples.push(Example {
            lang: lang.trim().to_owned(),
            code: code.join("\n"),
            expect: expect.to_owned(),
        });
    }
    examples
}

/// Every block of `lang` in a Markdown document.
fn blocks_of(markdown: &str, lang: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines();
    let open = format!("```{lang}");
    while let Some(line) = lines.next() {
        if line.trim() == open {
            let code: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            blocks.push(code.join("\n"));
        }
    }
    blocks
}

/// Where `scripts/x402-clients` installed `@x402/fetch`, or `None` (the test then skips, unless
/// `GROVE_REQUIRE_X402_CLIENTS` is set, as `scripts/test` does).
fn js_clients() -> Option<PathBuf> {
    let dir = std::env::var_os("GROVE_X402_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.tools/x402-clients")
        });
    let installed = dir.join("node_modules/@x402/fetch/package.json").exists();
    assert!(
        installed || std::env::var_os("GROVE_REQUIRE_X402_CLIENTS").is_none(),
        "GROVE_REQUIRE_X402_CLIENTS is set but @x402/fetch is not installed (run scripts/x402-clients)"
    );
    installed.then_some(dir)
}

struct Runner {
    grove_url: String,
    js_dir: PathBuf,
    python: PathBuf,
}

impl Runner {
    /// Runs `code` as its language would be run by hand, with a fresh throwaway key.
    fn run(&self, lang: &str, code: &str) -> Output {
        let key = alloy_primitives::B256::from(rand::random::<[u8; 32]>()).to_string();
        let (mut command, file) = match lang {
            "sh" => {
                let mut c = Command::new("bash");
                c.args(["-euo", "pipefail", "-c", code]);
                (c, None)
            }
            // Node resolves `@x402/fetch` from the folder the program is in.
            "js" | "ts" => {
                let file = self
                    .js_dir
                    .join(format!("example-{}.mjs", rand::random::<u64>()));
                std::fs::write(&file, code).expect("write the program");
                let mut c = Command::new("node");
                c.arg(&file);
                (c, Some(file))
            }
            "python" => {
                let mut c = Command::new(&self.python);
                c.args(["-c", code]);
                (c, None)
            }
            other => panic!("no way to run a {other} block"),
        };
        let out = command
            .env("GROVE_URL", &self.grove_url)
            .env("EVM_PRIVATE_KEY", key)
            .output()
            .expect("the example runs");
        if let Some(file) = file {
            let _ = std::fs::remove_file(file);
        }
        out
    }
}

fn describe(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readme_examples_and_the_guides_programs_pay_and_get_their_answer() {
    let (Some(js_dir), Some(python)) = (js_clients(), grove_tests::mcp::python()) else {
        return;
    };
    let llm = FakeLlm::start().await;
    let db = TestDb::new().await;
    let port = free_port();
    let grove_url = format!("http://127.0.0.1:{port}");
    let mut env = default_env();
    for (k, v) in [
        ("BIND_ADDR", format!("127.0.0.1:{port}")),
        // The guides print absolute URLs: they must name this server.
        ("PUBLIC_BASE_URL", grove_url.clone()),
        ("DATABASE_URL", db.url.clone()),
        ("X402_PAY_TO", PAY_TO.into()),
        ("LLM_PROVIDER", "openai".into()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("LLM_API_KEY", "sk-test".into()),
    ] {
        env.insert(k.into(), v);
    }
    let app = start(Config::from_map(&env).expect("configuration is valid")).await;
    let runner = Runner {
        grove_url,
        js_dir,
        python,
    };

    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let examples = runnable_blocks(&readme);
    let langs: Vec<&str> = examples.iter().map(|e| e.lang.as_str()).collect();
    assert_eq!(
        langs,
        ["sh", "js", "python", "python"],
        "the README's runnable blocks"
    );
    for example in &examples {
        let code = runner.run(&example.lang, &example.code);
        let stdout = String::from_utf8_lossy(&code.stdout);
        assert!(
            code.status.success() && stdout.contains(&example.expect),
            "README {} example, expecting {:?}:\n{}\n{}",
            example.lang,
            example.expect,
            example.code,
            describe(&code)
        );
    }
    // The curl shows the price; the three clients each paid for one answer.
    assert_eq!(llm.received(), 3);

    // The agent guide's programs (the skill file shows the same ones as /docs/agents).
    let skill = app
        .get("/skills/grove-x402/SKILL.md")
        .await
        .text()
        .await
        .expect("the skill file");
    let programs: Vec<(String, String)> = blocks_of(&skill, "ts")
        .into_iter()
        .map(|code| ("ts".to_owned(), code))
        .chain(
            blocks_of(&skill, "python")
                .into_iter()
                .map(|c| ("python".to_owned(), c)),
        )
        .collect();
    assert_eq!(
        programs.len(),
        3,
        "the guide's TypeScript, Python and MCP programs"
    );
    for (lang, code) in &programs {
        let out = runner.run(lang, code);
        let stdout = String::from_utf8_lossy(&out.stdout);
        // HTTP programs print the status first; the MCP one prints `is_error` first.
        let answered = stdout.starts_with("200") || stdout.starts_with("False");
        assert!(
            out.status.success() && answered,
            "guide {lang} program:\n{code}\n{}",
            describe(&out)
        );
    }
    assert_eq!(llm.received(), 6, "one model call per paid answer");
}
