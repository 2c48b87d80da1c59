//! The node under test: this benchmark started again as a child process (so that the node's
//! memory and start-up are its own), its accounts, and what a kept data dir remembers.

use std::time::Duration;

use dataspace_node::Config;
use serde_json::{json, Value};

/// The operator key of the node under test.
pub const OPERATOR_KEY: &str = "bench-operator-key-0123456789";

/// The child: the node under test, on a data dir, until SIGTERM. Prints its address.
pub fn serve_node(dir: &std::path::Path) {
    dataspace_node::store::memory::tune_allocator();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listening {}", listener.local_addr().unwrap());
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        let mut config = Config::with_data_dir(dir);
        config.api_key = Some(OPERATOR_KEY.into());
        // One base URL whatever port the node gets: the DIDs of a kept store's organisations
        // stay this node's across runs (with the port in them, a later run's node took the
        // earlier organisations for another node's and queued notices for them).
        config.base_url = Some(BENCH_BASE_URL.into());
        // The aggregate over hundreds of thousands of consignments is measured, not guarded
        // against: time and memory limits far above the defaults.
        config.sparql_timeout_secs = 600;
        config.sparql_max_memory_mb = 8192;
        // `--replica`: the replica phase points the child at Virtuoso through the environment.
        let var = |k: &str| std::env::var(k).ok();
        config.replica.replica_query_url = var("DATASPACE_NODE_REPLICA_QUERY_URL");
        config.replica.replica_update_url = var("DATASPACE_NODE_REPLICA_UPDATE_URL");
        config.replica.replica_user = var("DATASPACE_NODE_REPLICA_USER");
        config.replica.replica_password = var("DATASPACE_NODE_REPLICA_PASSWORD");
        // The webhook section's receiver listens on loopback.
        if let Some(hosts) = var("DATASPACE_NODE_WEBHOOK_ALLOW_HTTP") {
            config.webhook_allow_http = hosts.split(',').map(str::to_owned).collect();
        }
        // The DSP section's connector is a partner on loopback.
        if let Some(hosts) = var("DATASPACE_NODE_FEDERATION_PARTNERS") {
            config.federation_partners = hosts.split(',').map(str::to_owned).collect();
        }
        if let Some(hosts) = var("DATASPACE_NODE_FEDERATION_ALLOW_HTTP") {
            config.federation_allow_http = hosts.split(',').map(str::to_owned).collect();
        }
        // The operations section: metrics off for its baseline, a backup directory.
        if let Some(v) = var("DATASPACE_NODE_METRICS") {
            config.metrics = v.parse().expect("DATASPACE_NODE_METRICS: true or false");
        }
        config.backup_dir = var("DATASPACE_NODE_BACKUP_DIR").map(Into::into);
        // RocksDB's open table files, to measure memory against read latency on a large store.
        if let Some(n) = var("DATASPACE_NODE_STORE_OPEN_FILES") {
            config.store_open_files = n
                .parse()
                .expect("DATASPACE_NODE_STORE_OPEN_FILES: a number");
        }
        // The write-ahead log's sync after each commit (on by default), to measure what it costs.
        if let Some(v) = var("DATASPACE_NODE_SYNC_COMMITS") {
            config.sync_commits = v
                .parse()
                .expect("DATASPACE_NODE_SYNC_COMMITS: true or false");
        }
        // The one-organisation runs measure the inbox from many clients of one organisation,
        // not its allowance: none unless the environment sets one (the flood phase does).
        config.inbox_max_concurrent_per_org = match var(INBOX_PER_ORG) {
            Some(n) => n
                .parse()
                .expect("DATASPACE_NODE_INBOX_MAX_CONCURRENT_PER_ORG: a number"),
            None => usize::MAX,
        };
        // The blocking work's slots, when the benchmark sets them (the flood phase's pass
        // without fair shares).
        if let Some(n) = var(BLOCKING_SLOTS) {
            config.blocking_max_concurrent = Some(
                n.parse()
                    .expect("DATASPACE_NODE_BLOCKING_MAX_CONCURRENT: a number"),
            );
        }
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            term.recv().await;
        };
        dataspace_node::run(listener, config, shutdown)
            .await
            .unwrap();
    });
}

/// The node's inbox allowance per organisation, when the benchmark sets one.
pub const INBOX_PER_ORG: &str = "DATASPACE_NODE_INBOX_MAX_CONCURRENT_PER_ORG";

/// The node's blocking work's slots, when the benchmark sets them.
pub const BLOCKING_SLOTS: &str = "DATASPACE_NODE_BLOCKING_MAX_CONCURRENT";

/// The node's base URL in every run (ids only: the benchmark talks to the port it listens on).
pub const BENCH_BASE_URL: &str = "http://bench-node.localhost";

/// Peak resident memory of a process (VmHWM), in MB.
pub fn peak_rss_mb(pid: u32) -> f64 {
    rss_mb(pid, "VmHWM:")
}

/// A process's memory figure from `/proc/<pid>/status` (`VmHWM:` peak, `VmRSS:` now), in MB.
pub fn rss_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Bytes of every file under `path`.
pub fn dir_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A new organisation and its first user, created with the operator key: the answer body.
pub async fn create_account(
    http: &reqwest::Client,
    base: &str,
    operator: &str,
    email: &str,
) -> Value {
    http.post(format!("{base}/authentication/login/create"))
        .header("x-api-key", operator)
        .json(&json!({"email": email, "password": PASSWORD}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A session of the node's operator account, created on first use (a kept data dir has it).
pub async fn operator_session(http: &reqwest::Client, base: &str) -> String {
    const EMAIL: &str = "operator@bench.example";
    let r = http
        .post(format!("{base}/operations/operator"))
        .header("x-api-key", OPERATOR_KEY)
        .json(&json!({"email": EMAIL, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert!(
        r.status() == 201 || r.status() == 409,
        "operator account: {}",
        r.status()
    );
    log_in_as(http, base, OPERATOR_KEY, EMAIL).await
}

/// What a kept data dir holds besides the store: the benchmark organisation's credentials and
/// what was loaded, so a later run measures on it without loading again.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Loaded {
    pub api_key: String,
    pub email: String,
    pub organization: String,
    pub consignments: usize,
    pub written: i64,
}

/// Every benchmark user's password.
pub const PASSWORD: &str = "bench password";

/// The kept data dir's record of what it holds.
pub const STATE_FILE: &str = "bench-state.json";

/// A session token for a kept organisation (the cookie `POST /authentication/login` sets).
pub async fn log_in(http: &reqwest::Client, base: &str, loaded: &Loaded) -> String {
    log_in_as(http, base, &loaded.api_key, &loaded.email).await
}

/// A session token for the user `email` of the key holder `api_key` (the benchmark's password).
pub async fn log_in_as(http: &reqwest::Client, base: &str, api_key: &str, email: &str) -> String {
    let r = http
        .post(format!("{base}/authentication/login"))
        .header("x-api-key", api_key)
        .json(&json!({"email": email, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "log-in to the kept benchmark organisation");
    let cookie = r
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    cookie
        .split(';')
        .next()
        .and_then(|kv| kv.split_once('='))
        .map(|(_, v)| v.to_owned())
        .unwrap_or_default()
}

/// Stops the node child however the run ends, before its temporary data dir goes away.
pub struct ChildGuard(std::process::Child);

impl ChildGuard {
    /// SIGTERM (graceful: the store is flushed), then wait.
    pub fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts this benchmark again as the node under test on `dir`: the child, its base URL and
/// its process id.
pub fn spawn(dir: &std::path::Path) -> (ChildGuard, String, u32) {
    spawn_with(dir, &[])
}

/// [`spawn`] with more environment (the replica's `DATASPACE_NODE_REPLICA_*`).
pub fn spawn_with(dir: &std::path::Path, env: &[(&str, String)]) -> (ChildGuard, String, u32) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--serve-node")
        .arg(dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the node as a child process");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let base = format!("http://{}", line.trim().trim_start_matches("listening "));
    let pid = child.id();
    (ChildGuard(child), base, pid)
}

/// Waits for the node's first healthy answer.
pub async fn wait_healthy(http: &reqwest::Client, base: &str) {
    loop {
        if let Ok(r) = http.get(format!("{base}/health")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
