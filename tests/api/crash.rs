//! Crash safety: the node runs as a child process, 16 clients publish, the process is killed
//! with SIGKILL mid-stream and restarted on the same data directory — every activity that got
//! a 2xx is fully readable (consignment, events, documents and their bytes), nothing
//! half-written is visible, and the store opens without repair. `CRASH_CYCLES` sets the number
//! of kill/restart cycles (default 3; docs/PERFORMANCE.md reports a 20-cycle run).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

use crate::common::{add_document, as_org, consignment_at, data_url, example, INBOX, OPERATOR_KEY};

const CLIENTS: usize = 16;

struct Node {
    child: Child,
    base: String,
}

impl Node {
    async fn start(dir: &Path, port: u16) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(dir)
            .args(["--api-key", OPERATOR_KEY])
            // Every client of the one organisation in flight at the kill.
            .args(["--inbox-max-concurrent-per-org", &CLIENTS.to_string()])
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node binary");
        let node = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = Client::new();
        for _ in 0..600 {
            if let Ok(r) = client.get(format!("{}/health", node.base)).send().await {
                if r.status() == StatusCode::OK {
                    return node;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the node did not come up on {}", node.base);
    }

    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

/// What the node acknowledged (201 with a completed entry).
#[derive(Clone, Debug)]
enum Acked {
    Consignment(String),
    Event(String, String),
    Document(String, String, Vec<u8>),
}

struct Caller {
    client: Client,
    key: String,
    token: String,
    org: String,
}

impl Caller {
    async fn post(&self, base: &str, activity: &Value) -> bool {
        let sent = self
            .client
            .post(format!("{base}{INBOX}"))
            .header("x-api-key", &self.key)
            .bearer_auth(&self.token)
            .json(activity)
            .send()
            .await;
        let Ok(r) = sent else { return false };
        if r.status() != StatusCode::CREATED {
            return false;
        }
        matches!(r.json::<Value>().await, Ok(v) if v["status"] == "completed")
    }

    async fn get(&self, base: &str, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{base}{path}"))
            .header("x-api-key", &self.key)
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One client's stream of activities: a consignment, then an event and a document on it, then
/// the next consignment, until `stop`.
async fn publish(
    caller: Arc<Caller>,
    base: String,
    client: usize,
    cycle: usize,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<Acked>>>,
) {
    let mut k = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let n = (cycle * 100_000 + client * 1_000) as u32 + k;
        let create = consignment_at(&caller.org, n, "KEMBA", "2026-12-24T06:00:00Z");
        let global_id = create["object"]["globalId"].as_str().unwrap().to_owned();
        if !caller.post(&base, &create).await {
            return;
        }
        acked
            .lock()
            .unwrap()
            .push(Acked::Consignment(global_id.clone()));
        let code = format!("test:event-{n}");
        let mut event = as_org(example("add-event"), &caller.org);
        event["object"]["typeCode"] = json!(code);
        event["target"]["globalId"] = json!(global_id);
        if !caller.post(&base, &event).await {
            return;
        }
        acked
            .lock()
            .unwrap()
            .push(Acked::Event(global_id.clone(), code));
        let bytes = format!("document {n} of cycle {cycle}, client {client}").into_bytes();
        let doc_id = format!("DOC-{n}");
        let mut document = add_document(&caller.org, &data_url("text/plain", &bytes), &doc_id);
        document["target"]["globalId"] = json!(global_id);
        if !caller.post(&base, &document).await {
            return;
        }
        acked
            .lock()
            .unwrap()
            .push(Acked::Document(global_id, doc_id, bytes));
        k += 1;
    }
}

async fn verify(caller: &Caller, base: &str, acked: &[Acked]) {
    for a in acked {
        match a {
            Acked::Consignment(id) => {
                let r = caller
                    .get(base, &format!("/supply-chain/data-space/consignments/{id}"))
                    .await;
                assert_eq!(r.status(), StatusCode::OK, "lost consignment {id}");
            }
            Acked::Event(id, code) => {
                let path = format!("/supply-chain/data-space/consignments/{id}/events");
                let events: Value = caller.get(base, &path).await.json().await.unwrap();
                let found = events["entities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["typeCode"] == code.as_str());
                assert!(found, "lost event {code} of {id}");
            }
            Acked::Document(id, doc_id, bytes) => {
                let path = format!("/supply-chain/data-space/consignments/{id}/documents/{doc_id}");
                let r = caller.get(base, &path).await;
                assert_eq!(r.status(), StatusCode::OK, "lost document {doc_id}");
                let doc: Value = r.json().await.unwrap();
                let href = doc["href"].as_str().expect("a download link");
                let blob = caller.client.get(href).send().await.unwrap();
                assert_eq!(blob.status(), StatusCode::OK, "lost bytes of {doc_id}");
                assert_eq!(&blob.bytes().await.unwrap().to_vec(), bytes);
            }
        }
    }
    // Nothing half-written: every consignment the list shows is whole.
    let mut cursor: Option<String> = None;
    loop {
        let mut path = "/supply-chain/data-space/consignments?limit=100".to_owned();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page: Value = caller.get(base, &path).await.json().await.unwrap();
        for row in page["entities"].as_array().unwrap() {
            let id = row["aigId"].as_str().unwrap();
            let view: Value = caller
                .get(base, &format!("/supply-chain/data-space/consignments/{id}"))
                .await
                .json()
                .await
                .unwrap();
            assert!(
                !view["includedConsignments"].as_array().unwrap().is_empty(),
                "a consignment without its description: {view:#}"
            );
            assert_eq!(row["portOfEntryCode"], "KEMBA", "{row:#}");
        }
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
}

#[tokio::test]
async fn killed_mid_stream_it_keeps_every_acknowledged_activity() {
    let cycles: usize = std::env::var("CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let node = Node::start(dir.path(), port).await;
    let client = Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let account: Value = client
        .post(format!("{}/authentication/login/create", node.base))
        .header("x-api-key", OPERATOR_KEY)
        .json(&json!({"email": "trader@forwarder.example", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let caller = Arc::new(Caller {
        client,
        key: account["apiKey"].as_str().unwrap().into(),
        token: account["token"].as_str().unwrap().into(),
        org: account["organizationId"].as_str().unwrap().into(),
    });
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut node = Some(node);
    for cycle in 0..cycles {
        let running = match node.take() {
            Some(n) => n,
            None => Node::start(dir.path(), port).await,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|c| {
                tokio::spawn(publish(
                    caller.clone(),
                    running.base.clone(),
                    c,
                    cycle,
                    stop.clone(),
                    acked.clone(),
                ))
            })
            .collect();
        // Kill at a different moment of the stream each cycle.
        tokio::time::sleep(Duration::from_millis(700 + (cycle as u64 * 389) % 900)).await;
        let base = running.base.clone();
        running.kill();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.unwrap();
        }
        let restarted = Node::start(dir.path(), port).await;
        let so_far = acked.lock().unwrap().clone();
        assert!(!so_far.is_empty(), "cycle {cycle} acknowledged nothing");
        verify(&caller, &base, &so_far).await;
        node = Some(restarted);
    }
    let total = acked.lock().unwrap().len();
    eprintln!("crash safety: {cycles} SIGKILL cycles, {total} acknowledged activities, none lost");
    if let Some(n) = node {
        n.kill();
    }
}
