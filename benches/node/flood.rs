//! One organisation floods the inbox with `--flood-clients` clients while another reads and
//! writes: the other's view p99 and Create p50 during the flood, each next to its idle value
//! measured just before, in the same run. The node runs again on the main run's data dir, with
//! its default allowance per organisation (the main run's node has none: its runs are one
//! organisation's) and slots, then with neither binding; the flooding clients honour
//! `Retry-After`, as a well-behaved client does once the node refuses its organisation's
//! excess (429).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::Args;
use crate::client::Client;
use crate::node::{create_account, BLOCKING_SLOTS, INBOX_PER_ORG, OPERATOR_KEY};
use crate::progress;
use crate::reads::timed_get;
use crate::report::Table;
use crate::stats::{percentile, sequentially};

/// The other organisation's figures, idle and during the flood (ms), and the flood's rates.
pub struct Flood {
    pub clients: usize,
    pub view_p99: (f64, f64),
    pub create_p50: (f64, f64),
    /// The flooding organisation's Creates applied and refused (429), per second.
    pub accepted_per_s: f64,
    pub refused_per_s: f64,
}

/// A new organisation's user, as a benchmark client.
pub async fn organisation(http: &reqwest::Client, base: &str, name: &str) -> Client {
    let email = format!("{name}-{}@bench.example", uuid::Uuid::new_v4().simple());
    let created = create_account(http, base, OPERATOR_KEY, &email).await;
    let text = |k: &str| created[k].as_str().unwrap().to_owned();
    Client {
        http: http.clone(),
        url: format!("{base}/supply-chain/data-space/inbox"),
        key: text("apiKey"),
        token: text("token"),
        org: text("organizationId"),
    }
}

/// The other organisation's view p99 (`n` reads) and Create p50 (`n` Creates).
async fn other_figures(other: &Client, view: &str, n: usize, from: usize) -> (f64, f64) {
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        lat.push(timed_get(other, view).await.0);
    }
    lat.sort();
    let (creates, _) = sequentially(n, |i| other.create(from + i)).await;
    (percentile(&lat, 0.99), creates.p50)
}

/// What the flooding clients did.
#[derive(Default)]
struct Tally {
    accepted: AtomicUsize,
    refused: AtomicUsize,
}

/// Posts Creates of `client`'s organisation until `stop`; a 429 waits its `Retry-After`.
async fn flood_client(client: Arc<Client>, first: usize, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut n = first;
    while !stop.load(Ordering::Relaxed) {
        let r = client
            .send(serde_json::to_vec(&client.varied(n)).unwrap())
            .await;
        n += 1;
        let status = r.status();
        let retry_after = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let answer: Value = r.json().await.expect("an answer");
        if status == 429 {
            tally.refused.fetch_add(1, Ordering::Relaxed);
            let secs = retry_after.expect("Retry-After on a 429");
            tokio::time::sleep(Duration::from_secs(secs)).await;
        } else {
            assert!(status.is_success(), "{status} {answer}");
            tally.accepted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The section: the node started again with its defaults, then with no allowance (any number
/// in flight) and more slots than tokio's blocking pool has threads, so that only the turns at
/// the writer lock stand between the flood and the other organisation; each pass's figures
/// added to `table`.
pub async fn phase(args: &Args, dir: &Path, table: &mut Table, started: Instant) {
    let clients = args.flood_clients;
    let allowance = dataspace_node::Config::with_data_dir(dir).inbox_max_concurrent_per_org;
    let passes = [
        (
            format!("{allowance} in flight allowed, fair shares"),
            allowance.to_string(),
            None,
        ),
        (
            "no allowance, slots never short".to_owned(),
            usize::MAX.to_string(),
            Some("512".to_owned()),
        ),
    ];
    for (label, per_org, slots) in passes {
        progress(
            started,
            &format!("another organisation's reads and Creates while {clients} clients flood the inbox ({label})"),
        );
        let mut env = vec![(INBOX_PER_ORG, per_org)];
        env.extend(slots.map(|n| (BLOCKING_SLOTS, n)));
        let (mut child, base, _) = crate::node::spawn_with(dir, &env);
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        crate::node::wait_healthy(&http, &base).await;
        let flood = measure(&http, &base, args.reads, clients, args.others_nice).await;
        child.stop();
        figures(&flood, &label, table);
    }
}

fn figures(f: &Flood, label: &str, table: &mut Table) {
    let during = format!(
        "while one organisation floods the inbox ({} clients; {label})",
        f.clients
    );
    table.compared(
        format!("view p99 of another organisation {during}"),
        f.view_p99.1,
        "ms",
        "the same, idle",
        f.view_p99.0,
    );
    table.compared(
        format!("Create p50 of another organisation {during}"),
        f.create_p50.1,
        "ms",
        "the same, idle",
        f.create_p50.0,
    );
    table.add("  the flood's Creates applied", f.accepted_per_s, "/s");
    table.add("  the flood's Creates refused (429)", f.refused_per_s, "/s");
}

/// Two new organisations: the other's figures idle, then during the flood.
async fn measure(http: &reqwest::Client, base: &str, n: usize, clients: usize, nice: i32) -> Flood {
    let mut flooding = organisation(http, base, "flood").await;
    // The flood is other clients: on a runtime and connection pool of its own, so that the
    // measured requests never queue behind its tasks in this process.
    flooding.http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let flooding = Arc::new(flooding);
    let flood_rt = crate::others_runtime(nice);
    let other = organisation(http, base, "other").await;
    let global_id = format!("urn:uuid:{}", uuid::Uuid::new_v4());
    other.create_with_id(0, &global_id).await;
    let view = format!("{base}/supply-chain/data-space/consignments/{global_id}");
    // Warm: the first reads of a new consignment fill caches the idle figure should not pay.
    for _ in 0..20 {
        timed_get(&other, &view).await;
    }
    let (idle_view, idle_create) = other_figures(&other, &view, n, 1).await;
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let first = 50_000_000 + c * 1_000_000;
            flood_rt.spawn(flood_client(
                flooding.clone(),
                first,
                stop.clone(),
                tally.clone(),
            ))
        })
        .collect();
    // Measured once the flood runs: every client has had an answer.
    while tally.accepted.load(Ordering::Relaxed) + tally.refused.load(Ordering::Relaxed) < clients {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (flood_view, flood_create) = other_figures(&other, &view, n, 1 + n).await;
    let (accepted, refused) = (
        tally.accepted.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
    );
    let wall = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    flood_rt.shutdown_background();
    Flood {
        clients,
        view_p99: (idle_view, flood_view),
        create_p50: (idle_create, flood_create),
        accepted_per_s: accepted as f64 / wall,
        refused_per_s: refused as f64 / wall,
    }
}
