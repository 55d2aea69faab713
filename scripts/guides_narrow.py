#!/usr/bin/env python3
"""Checks that the guides read on a 400 px phone: drives headless Chromium through chromedriver's
WebDriver HTTP API (standard library only) and, for each page, asserts that the document is no
wider than the viewport (document scrollWidth <= 400 at a 400 px mobile viewport) and that its
table of contents is there, and saves a screenshot. Exits 1 on any failure.

A control page 800 px wide is checked first and must be caught, so a check that measures nothing
cannot pass.

    guides_narrow.py CHROMEDRIVER_URL BASE_URL OUT_DIR USER_DATA_DIR SKILL_PATH
"""

import base64
import json
import sys
import urllib.request

WIDTH = 400
HEIGHT = 900

# The flags headless Chromium needs on this machine (no sandbox as root, no background
# networking on a closed network); see the environment notes.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]

# What the page shows of itself: its widths, the widest element, and its table of contents.
MEASURE = """
const doc = document.documentElement;
let widest = null;
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.right > window.innerWidth + 1 && (!widest || r.right > widest.right)) {
    widest = {right: Math.round(r.right), tag: el.tagName.toLowerCase(),
              text: (el.textContent || '').trim().slice(0, 60)};
  }
}
const nav = document.querySelector('nav[aria-label="Contents"]');
const links = nav ? [...nav.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute('href').slice(1)) : [];
const pre = document.querySelector('pre');
return {
  innerWidth: window.innerWidth,
  scrollWidth: doc.scrollWidth,
  bodyScrollWidth: document.body ? document.body.scrollWidth : 0,
  widest: widest,
  tocLinks: links,
  tocBroken: links.filter(id => !document.getElementById(id)),
  text: pre ? pre.textContent.slice(0, 20000) : '',
};
"""


def call(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read().decode())["value"]


def main():
    driver, base, out, profile, skill_path = sys.argv[1:6]
    caps = {
        "capabilities": {
            "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": "/usr/bin/chromium",
                    "args": CHROMIUM_ARGS + [f"--user-data-dir={profile}"],
                },
            }
        }
    }
    session = call(f"{driver}/session", "POST", caps)["sessionId"]
    s = f"{driver}/session/{session}"
    failures = []
    try:
        def measure(url, mobile):
            # 400 CSS px wide. `mobile` is a phone, which honours the page's viewport meta tag;
            # a raw text file has none (a phone lays such a file out 980 px wide and zooms
            # out), so the skill file is read in a 400 px window instead, where the text wraps.
            call(f"{s}/goog/cdp/execute", "POST", {
                "cmd": "Emulation.setDeviceMetricsOverride",
                "params": {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1,
                           "mobile": mobile},
            })
            call(f"{s}/url", "POST", {"url": url})
            return call(f"{s}/execute/sync", "POST", {"script": MEASURE, "args": []})

        control = measure("data:text/html,<meta name=viewport content='width=device-width'>"
                          "<div style='width:800px'>too wide</div>", True)
        if control["scrollWidth"] <= WIDTH:
            failures.append(f"control: an 800 px page measured {control['scrollWidth']} px")

        pages = [("agents", "/docs/agents", True), ("actions", "/docs/actions", True),
                 ("skill", skill_path, False)]
        for name, path, mobile in pages:
            m = measure(base + path, mobile)
            shot = call(f"{s}/screenshot")
            with open(f"{out}/{name}.png", "wb") as f:
                f.write(base64.b64decode(shot))
            problems = []
            if m["innerWidth"] != WIDTH:
                problems.append(f"viewport is {m['innerWidth']} px, not {WIDTH}")
            if m["scrollWidth"] > WIDTH or m["bodyScrollWidth"] > WIDTH:
                problems.append(
                    f"scrolls sideways: scrollWidth {m['scrollWidth']} px "
                    f"(body {m['bodyScrollWidth']} px); widest: {m['widest']}")
            if name == "skill":
                # Markdown, shown as text: its own contents list.
                if "## Contents" not in m["text"]:
                    problems.append("no '## Contents' in the skill file as shown")
            else:
                if len(m["tocLinks"]) < 4:
                    problems.append(f"table of contents missing or short: {m['tocLinks']}")
                if m["tocBroken"]:
                    problems.append(f"contents links lead nowhere: {m['tocBroken']}")
            status = "FAIL" if problems else "ok"
            contents = ("'## Contents' shown" if name == "skill"
                        else f"{len(m['tocLinks'])} contents links")
            print(f"{status} {path}: scrollWidth {m['scrollWidth']} px at a {m['innerWidth']} px "
                  f"{'phone' if mobile else 'window'}, {contents}; {out}/{name}.png")
            failures.extend(f"{path}: {p}" for p in problems)
    finally:
        call(s, "DELETE")
    if failures:
        for f in failures:
            print("FAIL", f, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
