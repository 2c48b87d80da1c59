//! What running the node costs its writers: Create p50 with `/metrics` counting (and scraped
//! every second) against the node started with `--metrics false`, and the inbox while an
//! online backup is taken. Both on the main run's data dir, the node started again for each
//! pass.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::Args;
use crate::client::Client;
use crate::flood::organisation;
use crate::node::{spawn_with, wait_healthy, OPERATOR_KEY};
use crate::progress;
use crate::report::Table;
use crate::stats::{percentile, sequentially};

/// A node on `dir` with `env`, healthy, and a new organisation's client on it.
async fn started(
    dir: &Path,
    env: &[(&str, String)],
    name: &str,
) -> (crate::node::ChildGuard, String, Client) {
    let (child, base, _) = spawn_with(dir, env);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    wait_healthy(&http, &base).await;
    let client = organisation(&http, &base, name).await;
    (child, base, client)
}

pub async fn phase(args: &Args, dir: &Path, table: &mut Table, t0: Instant) {
    metrics_cost(args, dir, table).await;
    progress(t0, "metrics cost");
    backup_under_load(args, dir, table).await;
    progress(t0, "backup under load");
}

/// Create p50 over `--operations-creates` per side in eight passes, off and on in the order
/// ABBA BAAB: the store grows with each pass and the machine drifts, and in that order both
/// fall equally on either side.
async fn metrics_cost(args: &Args, dir: &Path, table: &mut Table) {
    let n = (args.operations_creates / 4).max(1);
    let mut p50 = [Vec::new(), Vec::new()];
    let mut scrapes = Vec::new();
    for on in [false, true, true, false, true, false, false, true] {
        let env = [("DATASPACE_NODE_METRICS", on.to_string())];
        let (mut child, base, client) = started(dir, &env, "metrics").await;
        // Warm: the organisation's first Creates fill its caches.
        sequentially(20, |i| client.create(i)).await;
        let stop = Arc::new(AtomicBool::new(false));
        let scraper = on.then(|| tokio::spawn(scrape_every_second(base, stop.clone())));
        let (run, _) = sequentially(n, |i| client.create(1000 + i)).await;
        stop.store(true, Ordering::Relaxed);
        if let Some(s) = scraper {
            let took = s.await.unwrap();
            assert!(!took.is_empty(), "/metrics was scraped");
            scrapes.extend(took);
        }
        child.stop();
        eprintln!(
            "metrics {}: Create p50 {:.3} ms",
            if on { "on" } else { "off" },
            run.p50
        );
        p50[usize::from(on)].push(run.p50);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (off, on) = (mean(&p50[0]), mean(&p50[1]));
    // The passes differ by a few per cent among themselves: the counting's own cost, timed
    // on the node's own Metrics, bounds it more tightly — a Create counts one request and
    // one activity.
    let metrics = dataspace_node::metrics::Metrics::new(true).unwrap();
    let calls = 1_000_000u32;
    let t = Instant::now();
    for i in 0..calls {
        let took = Duration::from_micros(u64::from(i % 5000));
        metrics.request("POST", "/supply-chain/data-space/inbox", 201, took);
        metrics.activity("Create", "applied");
    }
    let per_create_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(calls);
    scrapes.sort();
    table.add("/metrics: one scrape, p50", percentile(&scrapes, 0.5), "ms");
    table.add(
        "/metrics: counting one Create (request and activity)",
        per_create_us,
        "µs",
    );
    table.add(
        "/metrics: counting one Create ÷ Create c1 p50",
        per_create_us / (off * 1e3) * 100.0,
        "%",
    );
    table.compared(
        "Create c1 p50 with /metrics counting, scraped every 1 s",
        on,
        "ms",
        "--metrics false",
        off,
    );
}

/// Scrapes `/metrics` with the operator's key every second until `stop`; each scrape's time.
async fn scrape_every_second(base: String, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let mut scrapes = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let r = http
            .get(format!("{base}/metrics"))
            .bearer_auth(OPERATOR_KEY)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "/metrics");
        r.bytes().await.unwrap();
        scrapes.push(t.elapsed());
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    scrapes
}

/// `POST /operations/backups` as the operator: how long it took, and the backup's summary.
async fn take_backup(base: &str, session: &str) -> (Duration, serde_json::Value) {
    let began = Instant::now();
    let r = reqwest::Client::new()
        .post(format!("{base}/operations/backups"))
        .header("x-api-key", OPERATOR_KEY)
        .bearer_auth(session)
        .send()
        .await
        .unwrap();
    let took = began.elapsed();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    (took, r.json().await.unwrap())
}

/// Each Create's start and latency.
type Timeline = Arc<Mutex<Vec<(Instant, Duration)>>>;

/// Four clients post Creates for `--backup-idle-secs`, then a backup is taken while they go
/// on: the backup's time, and the Creates' p99 and longest latency during it against the
/// window before.
async fn backup_under_load(args: &Args, dir: &Path, table: &mut Table) {
    let backups = tempfile::tempdir().unwrap();
    let env = [(
        "DATASPACE_NODE_BACKUP_DIR",
        backups.path().display().to_string(),
    )];
    let (mut child, base, client) = started(dir, &env, "backup").await;
    let client = Arc::new(client);
    let stop = Arc::new(AtomicBool::new(false));
    let timeline: Timeline = Arc::default();
    let mut writers = Vec::new();
    for c in 0..4 {
        let (client, stop, timeline) = (client.clone(), stop.clone(), timeline.clone());
        writers.push(tokio::spawn(async move {
            let mut i = c * 1_000_000;
            while !stop.load(Ordering::Relaxed) {
                let at = Instant::now();
                let sample = client.create(i).await;
                timeline.lock().unwrap().push((at, sample.latency));
                i += 1;
            }
        }));
    }
    let idle_from = Instant::now() + Duration::from_secs(2);
    tokio::time::sleep(Duration::from_secs(2 + args.backup_idle_secs)).await;
    let session = crate::node::operator_session(&reqwest::Client::new(), &base).await;
    let began = Instant::now();
    let (took, manifest) = take_backup(&base, &session).await;
    let ended = Instant::now();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    // Again with nothing else running: what a backup takes on an idle node.
    let (took_idle, _) = take_backup(&base, &session).await;
    child.stop();
    let window = |from: Instant, to: Instant| {
        let mut lat: Vec<Duration> = timeline
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, _)| *at >= from && *at < to)
            .map(|(_, l)| *l)
            .collect();
        lat.sort();
        lat
    };
    let (before, during) = (window(idle_from, began), window(began, ended));
    // The checkpoint (RocksDB flushes its memtable for it) comes first: the Creates that
    // started in the backup's first two seconds are the ones a pause there would hold.
    let first = window(began, (began + Duration::from_secs(2)).min(ended));
    let max = |l: &[Duration]| l.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    table.add(
        "backup: time, four clients posting Creates",
        took.as_secs_f64(),
        "s",
    );
    table.add("backup: time, idle", took_idle.as_secs_f64(), "s");
    table.add(
        "backup: quads",
        manifest["quads"].as_f64().unwrap_or(0.0),
        "",
    );
    table.add(
        "backup: bytes",
        manifest["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        "MB",
    );
    table.compared(
        "Create c4 p99 during a backup",
        percentile(&during, 0.99),
        "ms",
        "the window before",
        percentile(&before, 0.99),
    );
    table.compared(
        "Create c4 longest during a backup",
        max(&during),
        "ms",
        "the window before",
        max(&before),
    );
    table.compared(
        "Create c4 longest in the backup's first 2 s (its checkpoint)",
        max(&first),
        "ms",
        "the window before",
        max(&before),
    );
    table.add(
        "Creates acknowledged during the backup",
        during.len() as f64,
        "",
    );
}
