//! A real browser: Debian's chromium, headless, driven through chromedriver (WebDriver) on a
//! loopback port of its own. `.ci/setup.sh` installs both; without them the console's tests
//! fail saying so.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a page may take to show what a step waits for: a bound for a loaded machine, not
/// a speed target (the benchmark measures speed).
const PATIENCE: Duration = Duration::from_secs(60);

pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
    name: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Where screenshots are kept: the test build's own temporary folder, one file per page.
pub fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

async fn start_driver() -> (Child, u16) {
    for path in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            std::path::Path::new(path).exists(),
            "{path} is missing: the console tests need Debian's chromium and chromium-driver \
             (.ci/setup.sh installs them)"
        );
    }
    let http = reqwest::Client::new();
    for _ in 0..5 {
        let port = free_port();
        let mut child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let began = Instant::now();
        while began.elapsed() < PATIENCE {
            if let Ok(Some(_)) = child.try_wait() {
                break; // the port was taken meanwhile: another one
            }
            let status = http
                .get(format!("http://127.0.0.1:{port}/status"))
                .send()
                .await;
            if matches!(status, Ok(r) if r.status().is_success()) {
                return (child, port);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("chromedriver did not start");
}

impl Browser {
    /// A fresh browser profile; `name` prefixes its screenshots.
    pub async fn start(name: &str) -> Self {
        let (driver, port) = start_driver().await;
        let profile = tempfile::tempdir().expect("browser profile");
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--window-size=1280,1000".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": CHROMIUM, "args": args}),
        );
        // A prompt must stay open for the test to see it (an XSS `alert` would be one).
        caps.insert("unhandledPromptBehavior".into(), json!("ignore"));
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a WebDriver session in chromium");
        Self {
            client,
            driver,
            _profile: profile,
            name: name.to_owned(),
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigation");
    }

    /// Waits until an element matching `css` shows `text` (its visible text contains it).
    pub async fn wait_text(&self, css: &str, text: &str) -> String {
        let began = Instant::now();
        loop {
            let found = self.texts(css).await;
            if let Some(t) = found.iter().find(|t| t.contains(text)) {
                return t.clone();
            }
            assert!(
                began.elapsed() < PATIENCE,
                "no `{css}` showed {text:?} within {PATIENCE:?}; they show {found:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The visible texts of the elements matching `css`, now.
    pub async fn texts(&self, css: &str) -> Vec<String> {
        let script = "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText || e.textContent || '')";
        match self.client.execute(script, vec![json!(css)]).await {
            Ok(Value::Array(items)) => items
                .into_iter()
                .map(|v| v.as_str().unwrap_or_default().to_owned())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Waits for an element and returns it. A look-up that fails meanwhile (the page was
    /// navigating: "aborted by navigation") is asked again.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        let began = Instant::now();
        loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(element) => return element,
                Err(e) => assert!(
                    began.elapsed() < PATIENCE,
                    "no `{css}` within {PATIENCE:?}: {e}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the first element matching `css` whose text contains `text`.
    pub async fn click_text(&self, css: &str, text: &str) {
        let began = Instant::now();
        loop {
            self.wait_text(css, text).await;
            let elements = self.client.find_all(Locator::Css(css)).await;
            for element in elements.unwrap_or_default() {
                if element.text().await.unwrap_or_default().contains(text)
                    && element.click().await.is_ok()
                {
                    return;
                }
            }
            // Redrawn between the look-up and the click: look again.
            assert!(
                began.elapsed() < PATIENCE,
                "`{css}` with {text:?} could not be clicked"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Types into the focused element (keys such as Tab and Enter included).
    pub async fn type_keys(&self, keys: &str) {
        self.client
            .active_element()
            .await
            .expect("a focused element")
            .send_keys(keys)
            .await
            .expect("typing");
    }

    pub async fn run(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.expect("script")
    }

    /// The path and query the page shows.
    pub async fn location(&self) -> String {
        let url = self.client.current_url().await.expect("url");
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Whether a JavaScript dialog (alert, confirm, prompt) is open.
    pub async fn dialog_open(&self) -> bool {
        self.client.get_alert_text().await.is_ok()
    }

    /// Keeps a screenshot of the page as `<name>-<page>.png` among the test artefacts.
    pub async fn screenshot(&self, page: &str) {
        let png = self.client.screenshot().await.expect("screenshot");
        let path = screenshot_dir().join(format!("{}-{page}.png", self.name));
        std::fs::write(&path, png).expect("screenshot written");
    }

    /// Form controls without a label (a `<label for>`, a wrapping label or `aria-label`).
    pub async fn unlabelled_fields(&self) -> Vec<String> {
        let script = "return Array.from(document.querySelectorAll('input, select, textarea, [contenteditable=true]'))\
            .filter(e => e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))\
            .map(e => e.outerHTML.slice(0, 120))";
        serde_json::from_value(self.run(script).await).unwrap_or_default()
    }

    pub async fn close(mut self) {
        let client = self.client.clone();
        let _ = client.close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    /// A test that failed never closed its session: chromium outlives its killed driver, so
    /// its processes (found by this browser's own profile folder) are ended too.
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let profile = format!("--user-data-dir={}", self._profile.path().display());
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == profile.as_bytes())
            {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
    }
}
