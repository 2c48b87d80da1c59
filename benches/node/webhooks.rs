//! Webhooks: what subscriptions cost a Create, and how fast deliveries follow the commits. A
//! fresh node of its own, a receiver in this process answering 200 at once.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::cli::Args;
use crate::client::Client;
use crate::node::{self, OPERATOR_KEY};
use crate::report::Table;
use crate::stats::{concurrently, percentile, sequentially, Run};
use crate::{progress, EMAIL};

/// Commit → received, in ms (the body's timestamp is taken in the committing transaction).
type Arrivals = Arc<Mutex<Vec<(Instant, f64)>>>;

async fn arrived(State(seen): State<Arrivals>, body: Bytes) -> &'static str {
    let now_ms = chrono::Utc::now().timestamp_micros() as f64 / 1000.0;
    let sent = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|b| b["timestamp"].as_str().map(str::to_owned))
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
        .map_or(now_ms, |t| t.timestamp_micros() as f64 / 1000.0);
    seen.lock().unwrap().push((Instant::now(), now_ms - sent));
    "ok"
}

/// The receiver, on a runtime of its own (`--others-nice`), kept for the process's life.
fn receiver(nice: i32) -> (String, Arrivals) {
    let seen = Arrivals::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/hook", post(arrived))
        .with_state(seen.clone());
    let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(crate::others_runtime(nice)));
    rt.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        axum::serve(listener, app).await.unwrap()
    });
    (url, seen)
}

/// A new subscription to Creates; its id.
async fn subscribe(c: &Client, base: &str, url: &str) -> String {
    let r = c
        .http
        .post(format!("{base}/supply-chain/data-space/subscriptions"))
        .header("x-api-key", &c.key)
        .bearer_auth(&c.token)
        .json(&json!({"url": url, "events": ["consignment.created"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "subscribing");
    let created: Value = r.json().await.unwrap();
    created["id"].as_str().unwrap().to_owned()
}

/// Subscription `id` disabled: nothing is queued for it, nothing of it sent.
async fn disable(c: &Client, base: &str, id: &str) {
    let r = c
        .http
        .patch(format!("{base}/supply-chain/data-space/subscriptions/{id}"))
        .header("x-api-key", &c.key)
        .bearer_auth(&c.token)
        .json(&json!({"state": "disabled"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "disabling");
}

/// Waits until `n` deliveries arrived (or a minute passed without a new one).
async fn delivered(seen: &Arrivals, n: usize) {
    let (mut last, mut at) = (0, Instant::now());
    loop {
        let got = seen.lock().unwrap().len();
        if got >= n || at.elapsed().as_secs() > 60 {
            return;
        }
        if got != last {
            (last, at) = (got, Instant::now());
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The section: Create p50 with 0, 1 and 100 subscriptions (and with none again, after);
/// delivery latency and throughput
/// to one receiver at the sustained (concurrent) Create rate.
pub async fn phase(args: &Args, table: &mut Table, started: Instant) {
    let n = args.webhook_creates;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base, _) = node::spawn_with(
        dir.path(),
        &[("DATASPACE_NODE_WEBHOOK_ALLOW_HTTP", "127.0.0.1".into())],
    );
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    node::wait_healthy(&http, &base).await;
    let created = node::create_account(&http, &base, OPERATOR_KEY, EMAIL).await;
    let text = |k: &str| created[k].as_str().unwrap().to_owned();
    let c = Arc::new(Client {
        http: http.clone(),
        url: format!("{base}/supply-chain/data-space/inbox"),
        key: text("apiKey"),
        token: text("token"),
        org: text("organizationId"),
    });
    let (url, seen) = receiver(args.others_nice);
    let create_p50 = |label: &'static str| {
        let c = c.clone();
        async move {
            let (run, _) = sequentially(n, |i| {
                let c = c.clone();
                async move { c.create(i).await }
            })
            .await;
            progress(started, label);
            run.p50
        }
    };
    let none = create_p50("webhooks: Creates, no subscription").await;
    let mut ids = vec![subscribe(&c, &base, &url).await];
    let one = create_p50("webhooks: Creates, one subscription").await;
    delivered(&seen, n).await;
    seen.lock().unwrap().clear();
    // At the sustained rate: concurrent clients (at most the inbox's four per organisation).
    let clients = args.clients.clamp(1, 4);
    let (run, latency, deliveries_per_s) = sustained(&c, clients, n, &seen).await;
    progress(started, "webhooks: deliveries at the sustained rate");
    for _ in 1..100 {
        ids.push(subscribe(&c, &base, &url).await);
    }
    let hundred = create_p50("webhooks: Creates, 100 subscriptions").await;
    // The store has grown and compacted since the first run without: the same again on the
    // store as it is now brackets what subscriptions cost from what the store's growth does.
    for id in &ids {
        disable(&c, &base, id).await;
    }
    let none_after = create_p50("webhooks: Creates, the 100 subscriptions disabled").await;
    child.stop();
    table.add("Create p50, no webhook subscription", none, "ms");
    let baseline = "no subscription";
    table.compared(
        "Create p50, 1 webhook subscription",
        one,
        "ms",
        baseline,
        none,
    );
    table.compared(
        "Create p50, 100 webhook subscriptions",
        hundred,
        "ms",
        baseline,
        none,
    );
    table.add(
        "Create p50, no webhook subscription, after (the 100 disabled)",
        none_after,
        "ms",
    );
    table.compared(
        "Create p50, 100 webhook subscriptions, against the run after",
        hundred,
        "ms",
        "the 100 disabled",
        none_after,
    );
    table.add(
        format!("Creates/s, {clients} clients, 1 webhook subscription"),
        run.per_s,
        "/s",
    );
    table.add(
        "webhook delivery commit → received p50",
        percentile(&latency, 0.5),
        "ms",
    );
    table.add(
        "webhook delivery commit → received p99",
        percentile(&latency, 0.99),
        "ms",
    );
    table.add(
        "webhook deliveries/s to one receiver",
        deliveries_per_s,
        "/s",
    );
}

/// Creates from `clients` concurrent clients, one subscription: the rate, each delivery's
/// commit → received latency (sorted) and deliveries per second.
async fn sustained(
    c: &Arc<Client>,
    clients: usize,
    n: usize,
    seen: &Arrivals,
) -> (Run, Vec<std::time::Duration>, f64) {
    // One organisation's inbox takes 4 requests at once (`--inbox-max-concurrent-per-org`).
    let per_client = (n / clients).max(1);
    let t0 = Instant::now();
    let run = concurrently(clients, per_client, |_, i| {
        let c = c.clone();
        async move { c.create(i).await }
    })
    .await;
    delivered(seen, clients * per_client).await;
    let arrivals = seen.lock().unwrap().clone();
    let last = arrivals.iter().map(|(at, _)| *at).max().unwrap_or(t0);
    let mut latency: Vec<std::time::Duration> = arrivals
        .iter()
        .map(|(_, ms)| std::time::Duration::from_micros((ms.max(0.0) * 1000.0) as u64))
        .collect();
    latency.sort();
    let per_s = arrivals.len() as f64 / last.duration_since(t0).as_secs_f64();
    (run, latency, per_s)
}
