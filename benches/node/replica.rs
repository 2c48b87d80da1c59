//! `--replica virtuoso`: after the main run, the same data dir mirrored into a Virtuoso 7
//! started here (`virtuoso-t`, Debian's `virtuoso-opensource-7-bin`) — the initial sync, the
//! aggregate through `/sparql` on the replica against the store's figure of the main run and
//! the same isolated query straight on Virtuoso, the replication lag under Creates, and Create
//! with replication on and off on the same store.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataspace_node::sharing::readable;
use dataspace_node::sparql::isolate;
use dataspace_node::store::graphs;

use crate::client::Client;
use crate::node;
use crate::progress;
use crate::report::Table;
use crate::sparql::AGGREGATE;
use crate::stats::{p50, percentile};

/// A Virtuoso child on a temporary database; killed when dropped.
pub struct Virtuoso {
    child: std::process::Child,
    _dir: tempfile::TempDir,
    pub url: String,
    pub auth_url: String,
}

impl Drop for Virtuoso {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts Virtuoso with `buffers` 8 KB page buffers (Virtuoso's sizing: about two thirds of
/// the memory it may use).
pub async fn start(buffers: usize) -> Virtuoso {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let (isql, http) = (free_port(), free_port());
    let ini = format!(
        "[Database]\nDatabaseFile = {d}/virtuoso.db\nErrorLogFile = {d}/virtuoso.log\n\
         LockFile = {d}/virtuoso.lck\nTransactionFile = {d}/virtuoso.trx\n\
         xa_persistent_file = {d}/virtuoso.pxa\nTempStorage = TempDatabase\n\
         [TempDatabase]\nDatabaseFile = {d}/virtuoso-temp.db\nTransactionFile = {d}/virtuoso-temp.trx\n\
         [Parameters]\nServerPort = 127.0.0.1:{isql}\nDisableUnixSocket = 1\nDirsAllowed = ., {d}\n\
         NumberOfBuffers = {buffers}\nMaxDirtyBuffers = {}\nMaxQueryMem = 2G\nThreadsPerQuery = 2\n\
         AsyncQueueMaxThreads = 2\nMaxClientConnections = 20\n\
         [HTTPServer]\nServerPort = 127.0.0.1:{http}\nServerThreads = 8\nMaxClientConnections = 8\n\
         [SPARQL]\nResultSetMaxRows = 1000000\nMaxQueryExecutionTime = 600\n",
        buffers * 3 / 4
    );
    std::fs::write(dir.path().join("virtuoso.ini"), ini).unwrap();
    let child = std::process::Command::new("virtuoso-t")
        .args(["+foreground", "+configfile"])
        .arg(dir.path().join("virtuoso.ini"))
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("virtuoso-t (apt-get install virtuoso-opensource-7-bin)");
    let v = Virtuoso {
        child,
        _dir: dir,
        url: format!("http://127.0.0.1:{http}/sparql"),
        auth_url: format!("http://127.0.0.1:{http}/sparql-auth"),
    };
    let http_client = reqwest::Client::new();
    for _ in 0..900 {
        let r = http_client
            .get(&v.url)
            .query(&[("query", "ASK {}")])
            .send()
            .await;
        if r.is_ok_and(|r| r.status().is_success()) {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("virtuoso-t did not answer within 90 s");
}

impl Virtuoso {
    /// The environment that points the node child at this replica (Digest as `dba`).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DATASPACE_NODE_REPLICA_QUERY_URL", self.url.clone()),
            ("DATASPACE_NODE_REPLICA_UPDATE_URL", self.auth_url.clone()),
            ("DATASPACE_NODE_REPLICA_USER", "dba".into()),
            ("DATASPACE_NODE_REPLICA_PASSWORD", "dba".into()),
        ]
    }

    /// p50 of `query` straight on Virtuoso (SPARQL JSON), and its row count.
    async fn p50(&self, http: &reqwest::Client, query: &str, n: usize) -> (f64, usize) {
        let mut lat = Vec::new();
        let mut rows = 0;
        for _ in 0..n + 1 {
            let t = Instant::now();
            let r = http
                .post(&self.url)
                .header("accept", "application/sparql-results+json")
                .form(&[("query", query)])
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
            let body: serde_json::Value = r.json().await.unwrap();
            lat.push(t.elapsed());
            rows = body["results"]["bindings"].as_array().map_or(0, Vec::len);
        }
        lat.remove(0);
        (p50(lat), rows)
    }

    /// Which of `ids` (consignment identifiers) the replica holds.
    async fn visible_of<'a>(
        &self,
        http: &reqwest::Client,
        ids: impl Iterator<Item = &'a String>,
    ) -> std::collections::HashSet<String> {
        let values: String = ids.map(|id| format!("\"{id}\" ")).collect();
        let q = format!(
            "SELECT ?x WHERE {{ VALUES ?x {{ {values}}} GRAPH ?g {{ ?s <https://vocabulary.uncefact.org/identifier> ?x }} }}"
        );
        let r = http
            .post(&self.url)
            .header("accept", "application/sparql-results+json")
            .form(&[("query", q.as_str())])
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = r.json().await.unwrap();
        body["results"]["bindings"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter_map(|b| b["x"]["value"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The benchmark's aggregate isolated for `org` as `/sparql` sends it to the replica.
fn isolated_aggregate(org: &str) -> String {
    let markers = isolate::Markers {
        graph: spargebra::term::NamedNode::new_unchecked(graphs::readable(org).into_string()),
        predicate: spargebra::term::NamedNode::new_unchecked(readable::predicate().into_string()),
        object: spargebra::term::NamedNode::new_unchecked(
            readable::scope_marker(true, true).into_string(),
        ),
    };
    let sources = isolate::Sources {
        default: Some(markers.clone()),
        named: Some(markers.clone()),
        portable: Some((
            isolate::Portable::Markers(markers.clone()),
            isolate::Portable::Markers(markers),
        )),
    };
    let query = spargebra::SparqlParser::new()
        .parse_query(AGGREGATE)
        .unwrap();
    isolate::rewrite(query, &|_| false, &sources)
        .unwrap()
        .to_string()
}

/// Waits until the node answers `/sparql` from the replica with no lag; how long it took.
async fn caught_up(client: &Client, base: &str) -> Duration {
    let t = Instant::now();
    loop {
        let r = client
            .http
            .get(format!("{base}/supply-chain/data-space/sparql"))
            .query(&[("query", "ASK {}")])
            .header("x-api-key", &client.key)
            .bearer_auth(&client.token)
            .send()
            .await
            .unwrap();
        let h = |k: &str| {
            r.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        if h("sparql-source") == "replica" && h("replica-lag-ms") == "0" {
            return t.elapsed();
        }
        assert!(t.elapsed() < Duration::from_secs(3 * 3600), "no catch-up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sequential Creates (at `rate` per second, or as fast as answered); every tenth is watched on Virtuoso until it is visible there (the
/// replication lag from the node's answer, i.e. after the commit). One watcher asks for every
/// watched consignment at once every 20 ms: the probes are queries the replica answers on
/// the same cores. Create latencies and lags.
async fn creates(
    client: &Arc<Client>,
    v: Option<&Arc<Virtuoso>>,
    n: usize,
    from: usize,
    rate: Option<f64>,
) -> (Vec<Duration>, Vec<Duration>) {
    let watched: Arc<std::sync::Mutex<Vec<(String, Instant)>>> = Default::default();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = v.map(|v| {
        let (v, http, watched, done) = (
            v.clone(),
            client.http.clone(),
            watched.clone(),
            done.clone(),
        );
        tokio::spawn(async move {
            let mut lags = Vec::new();
            loop {
                let waiting: Vec<(String, Instant)> = watched.lock().unwrap().clone();
                if waiting.is_empty() && done.load(std::sync::atomic::Ordering::SeqCst) {
                    return lags;
                }
                if !waiting.is_empty() {
                    let seen = v.visible_of(&http, waiting.iter().map(|(id, _)| id)).await;
                    let now = Instant::now();
                    watched.lock().unwrap().retain(|(id, at)| {
                        let found = seen.contains(id);
                        if found {
                            lags.push(now - *at);
                        }
                        !found
                    });
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    });
    let mut lat = Vec::new();
    let paced = Instant::now();
    for i in 0..n {
        if let Some(rate) = rate.filter(|r| *r > 0.0) {
            let at = paced + Duration::from_secs_f64(i as f64 / rate);
            tokio::time::sleep_until(at.into()).await;
        }
        let id = format!("REPLICA-{}-{}", from + i, uuid::Uuid::new_v4().simple());
        let gid = format!("urn:uuid:{}", uuid::Uuid::new_v4());
        let s = client.change("Create", &gid, &id, from + i).await;
        lat.push(s.latency);
        if i % 10 == 0 && watcher.is_some() {
            watched.lock().unwrap().push((id, Instant::now()));
        }
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut lags = match watcher {
        Some(w) => w.await.unwrap(),
        None => Vec::new(),
    };
    lags.sort();
    (lat, lags)
}

/// `client` logged in again on the node child at `base` once it answers.
async fn logged_in(mut client: Client, base: &str) -> Client {
    node::wait_healthy(&client.http, base).await;
    let loaded = node::Loaded {
        api_key: client.key.clone(),
        email: crate::EMAIL.into(),
        organization: client.org.clone(),
        consignments: 0,
        written: 0,
    };
    client.token = node::log_in(&client.http, base, &loaded).await;
    client.url = format!("{base}/supply-chain/data-space/inbox");
    client
}

/// The replica phase on the stopped node's `dir`; `store_aggregate` is the main run's p50 of
/// the aggregate through `/sparql` on the store.
pub async fn measure(
    dir: &Path,
    client: Client,
    args: &crate::cli::Args,
    store_aggregate: Option<f64>,
    table: &mut Table,
    started: Instant,
) {
    let sparql_reads = args.sparql_reads.unwrap_or(args.reads.min(20)).max(1);
    let creates_n = args.replica_creates;
    progress(started, "replica: starting Virtuoso");
    let v = Arc::new(start(340_000).await);
    let (mut child, base, _) = node::spawn_with(dir, &v.env());
    let client = Arc::new(logged_in(client, &base).await);
    progress(started, "replica: initial sync");
    let sync = caught_up(&client, &base).await;
    table.add(
        "replica: initial sync (whole store)",
        sync.as_secs_f64(),
        "s",
    );
    // Alternated, so that neither runs on caches the other warmed.
    let isolated = isolated_aggregate(&client.org);
    let (mut node_lat, mut raw_lat) = (Vec::new(), Vec::new());
    let (mut rows, mut raw_rows) = (0, 0);
    for _ in 0..sparql_reads + 1 {
        let (t, r) = crate::sparql::sparql_endpoint(&client, &base, 1).await;
        node_lat.push(t);
        rows = r;
        let (t, r) = v.p50(&client.http, &isolated, 1).await;
        raw_lat.push(t);
        raw_rows = r;
    }
    node_lat.remove(0);
    raw_lat.remove(0);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (on_replica, raw) = (median(node_lat), median(raw_lat));
    assert_eq!(rows, raw_rows);
    match store_aggregate {
        Some(on_store) => table.compared(
            "SPARQL aggregate via /sparql on the replica p50",
            on_replica,
            "ms",
            "the same via /sparql on the store (main run)",
            on_store,
        ),
        None => table.add(
            "SPARQL aggregate via /sparql on the replica p50",
            on_replica,
            "ms",
        ),
    }
    table.compared(
        "SPARQL aggregate via /sparql on the replica p50 ",
        on_replica,
        "ms",
        "the isolated query straight on Virtuoso",
        raw,
    );
    progress(started, "replica: Creates with replication on");
    let (on, lags) = creates(&client, Some(&v), creates_n, 7_000_000, None).await;
    table.add(
        "replica: lag commit → visible p50",
        percentile(&lags, 0.5),
        "ms",
    );
    table.add(
        "replica: lag commit → visible p99",
        percentile(&lags, 0.99),
        "ms",
    );
    let rate = args.replica_rate;
    progress(started, &format!("replica: Creates at {rate} per second"));
    let (_, paced) = creates(&client, Some(&v), creates_n / 2, 7_500_000, Some(rate)).await;
    table.add(
        format!("replica: lag at {rate} Creates/s p50"),
        percentile(&paced, 0.5),
        "ms",
    );
    table.add(
        format!("replica: lag at {rate} Creates/s p99"),
        percentile(&paced, 0.99),
        "ms",
    );
    // The write path's own cost (the log entry in each commit), without the replica's work
    // on the same cores: the replica stopped, the log grows, shipping retries with backoff.
    drop(Arc::into_inner(v).expect("no watcher left"));
    let (logged, _) = creates(&client, None, creates_n, 9_000_000, None).await;
    child.stop();
    progress(started, "replica: Creates with replication off");
    let (mut child, base, _) = node::spawn_with(dir, &[]);
    let off_client = Client {
        http: client.http.clone(),
        url: String::new(),
        key: client.key.clone(),
        token: String::new(),
        org: client.org.clone(),
    };
    let off_client = Arc::new(logged_in(off_client, &base).await);
    let (off, _) = creates(&off_client, None, creates_n, 8_000_000, None).await;
    child.stop();
    let off = p50(off);
    table.compared(
        "Create c1 p50 with replication on",
        p50(on),
        "ms",
        "replication off (same store)",
        off,
    );
    table.compared(
        "Create c1 p50 with replication on, the replica stopped (log only)",
        p50(logged),
        "ms",
        "replication off (same store)",
        off,
    );
}
