//! Headless Chromium driven through chromedriver's WebDriver HTTP API (as
//! `scripts/guides_narrow.py` does): for tests of what a person sees and does in a page. Debian's
//! `chromium` and `chromium-driver` (scripts/screenshot-guides installs them). Without them a
//! test skips with a notice, or fails when `GROVE_REQUIRE_CHROMIUM=1` (`scripts/test` sets it).

use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Child, Command, Stdio};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The flags headless Chromium needs on this machine (no sandbox as root, no background
/// networking on a closed network).
const ARGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

pub struct Browser {
    driver: Child,
    session: String,
    http: reqwest::Client,
    profile: std::path::PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // `quit` ended the session (and its Chromium) already, unless the test failed first.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// What the page shows of its width: the viewport's, the document's, and the widest element
/// that runs past the viewport, if any.
pub const MEASURE: &str = "
const doc = document.documentElement;
let widest = null;
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.right > window.innerWidth + 1 && (!widest || r.right > widest.right)) {
    widest = {right: Math.round(r.right), tag: el.tagName.toLowerCase(), id: el.id,
              text: (el.textContent || '').trim().slice(0, 60)};
  }
}
return {innerWidth: window.innerWidth, scrollWidth: doc.scrollWidth,
        bodyScrollWidth: document.body ? document.body.scrollWidth : 0, widest: widest};
";

impl Browser {
    /// A fresh browser session, or None (with a notice) when Chromium cannot be had and
    /// `GROVE_REQUIRE_CHROMIUM` is not `1`.
    pub async fn start() -> Option<Self> {
        let missing = ["/usr/bin/chromium", "/usr/bin/chromedriver"]
            .into_iter()
            .find(|p| !std::path::Path::new(p).exists());
        if let Some(path) = missing {
            assert!(
                std::env::var("GROVE_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
                "GROVE_REQUIRE_CHROMIUM=1 but {path} is missing"
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: no {path} (apt-get install chromium chromium-driver); set GROVE_REQUIRE_CHROMIUM=1 to fail"
            );
            return None;
        }
        let port = crate::free_port();
        let driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http = grove_common::http_client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let base = format!("http://127.0.0.1:{port}");
        crate::wait_until("chromedriver to answer", async || {
            http.get(format!("{base}/status")).send().await.is_ok()
        })
        .await;
        let profile =
            std::env::temp_dir().join(format!("grove-chromium-{}", rand::random::<u64>()));
        let mut args: Vec<String> = ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
        }}});
        let answer: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("a session")
            .json()
            .await
            .expect("json");
        let id = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"));
        Some(Self {
            driver,
            session: format!("{base}/session/{id}"),
            http,
            profile,
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let answer: Value = req
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("json");
        assert!(
            answer["value"].get("error").is_none(),
            "WebDriver {path}: {answer}"
        );
        answer["value"].clone()
    }

    /// A phone-like viewport `width` CSS px wide (it honours the page's viewport meta tag).
    pub async fn viewport(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            Some(
                json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800,
                }}),
            ),
        )
        .await;
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// Runs `script` (a function body) in the page; its return value.
    pub async fn run(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Waits until the expression `condition` is true in the page that is loaded (a click that
    /// posts a form returns before the next page is there). Errors while the page changes count
    /// as not yet.
    pub async fn wait_for(&self, condition: &str) {
        let script = format!("return document.readyState === 'complete' && !!({condition});");
        crate::wait_until(condition, async || {
            let answer: Option<Value> = async {
                self.http
                    .post(format!("{}/execute/sync", self.session))
                    .json(&json!({"script": script, "args": []}))
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()
            }
            .await;
            answer.is_some_and(|a| a["value"] == true)
        })
        .await;
    }

    async fn element(&self, css: &str) -> String {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    /// Types `text` into the element `css` selects.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Clicks the element `css` selects (a submit button posts its form and the page loads).
    pub async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Ends the session: Chromium exits.
    pub async fn quit(self) {
        let _ = self.http.delete(&self.session).send().await;
    }

    /// Saves a PNG of the viewport.
    pub async fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine;
        let shot = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().expect("base64"))
            .expect("png");
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(path, png).expect("screenshot written");
    }
}
