//! The command line.

use clap::Parser;

#[derive(Parser)]
#[command(
    about = "One table of the node's figures through its HTTP API, each next to a baseline measured in the same run"
)]
pub struct Args {
    /// Creates posted one at a time (concurrency 1).
    #[arg(long, default_value_t = 2000)]
    pub sequential: usize,
    /// Creates posted by 16 concurrent clients.
    #[arg(long, default_value_t = 8000)]
    pub concurrent: usize,
    /// Concurrent clients for the second run.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Consignments in the store for the read measurements (loaded through HTTP; the inbox
    /// runs count towards it).
    #[arg(long, default_value_t = 0)]
    pub consignments: usize,
    /// Requests per read measurement.
    #[arg(long, default_value_t = 200)]
    pub reads: usize,
    /// Requests of the SPARQL aggregate (through the endpoint, and raw on the store); by
    /// default `--reads`, at most 20. Over 100,000 consignments each takes seconds; at
    /// 1,000,000 the aggregate outgrows the node's memory (0: not measured; the replica, with
    /// `--replica`, is where analysts run it at that size).
    #[arg(long)]
    pub sparql_reads: Option<usize>,
    /// Sharing policies stored (through HTTP) after the reads, before a second Create run that
    /// measures routing. Two of them match the benchmark consignment (a KE border agency, the
    /// KEMBA terminal); the rest name other
    /// countries and UN/LOCODEs, as on a busy node. 0 skips the routing measurement.
    #[arg(long, default_value_t = 10_000)]
    pub policies: usize,
    /// Clients of one organisation flooding the inbox while another organisation's view p99
    /// and Create p50 are measured (`--reads` of each), next to the same figures idle just
    /// before — after the main run, on its store, the node started again with its default
    /// allowance per organisation and slots, then with neither binding (the turns at the
    /// writer lock stay); 0 skips the section.
    #[arg(long, default_value_t = 32)]
    pub flood_clients: usize,
    /// How many of those policies match the benchmark consignment (0, 1 or 2).
    #[arg(long, default_value_t = 2)]
    pub matching: usize,
    /// Documents added (one at a time, each new content, as a `data:` URL) after the runs.
    #[arg(long, default_value_t = 0)]
    pub documents: usize,
    /// Size of each added document, in bytes.
    #[arg(long, default_value_t = 100_000)]
    pub document_bytes: usize,
    /// Updates and event `Add`s posted one at a time, and again by the concurrent clients; 0
    /// skips those runs.
    #[arg(long, default_value_t = 500)]
    pub changes: usize,
    /// Updates posted to every tenth (`--updated-every`) consignment of the inbox fill-up right
    /// after its Create (`--updates 3`: three Updates on 10% of the consignments, what a store
    /// with history holds). Not with `--bulk`.
    #[arg(long, default_value_t = 0)]
    pub updates: usize,
    /// Which fill-up consignments `--updates` revises: every this many (1: all of them).
    #[arg(long, default_value_t = 10)]
    pub updated_every: usize,
    /// Keep the node's data in this directory instead of a temporary one. When it already holds
    /// a loaded benchmark store (`bench-state.json`), the load is skipped and the reads,
    /// SPARQL, routing and memory are measured on it after a restart (the inbox runs only on a
    /// fresh store): load 100,000 consignments once, then measure as often as needed.
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
    /// Load the consignments beyond what the data dir holds with the node's bulk load
    /// (`dataspace-node load`, after 2,000 inbox Creates whose rate it is compared with)
    /// instead of the inbox; the run then measures them as a kept store. With `--data-dir`,
    /// later runs reuse what was loaded.
    #[arg(long)]
    pub bulk: bool,
    /// Activities per transaction of the `--bulk` load (`dataspace-node load --batch`). Each
    /// batch's new graphs reach RocksDB as one more level-0 file, and every compaction of
    /// level 0 rewrites level 1 whole (hashed keys overlap everything), so on a large store
    /// fewer, larger batches cost less compaction per activity.
    #[arg(long, default_value_t = 500)]
    pub bulk_batch: usize,
    /// After the main run, mirror its store into this SPARQL engine (`virtuoso`: started here
    /// from Debian's `virtuoso-opensource-7-bin`) and measure the replica: initial sync, the
    /// aggregate on the replica against the store and straight on Virtuoso, replication lag
    /// under Creates, Create with replication on and off.
    #[arg(long)]
    pub replica: Option<String>,
    /// Creates of the replica phase (each run: replication on, then off).
    #[arg(long, default_value_t = 1000)]
    pub replica_creates: usize,
    /// Creates per second of a second lag measurement, paced (the full-speed run shows what
    /// a burst does; this one a steady rate the replica may keep up with).
    #[arg(long, default_value_t = 50.0)]
    pub replica_rate: f64,
    /// Sequential Creates per webhook measurement (0: the webhook section is skipped): Create
    /// p50 with 0, 1 and 100 subscriptions, and deliveries at the concurrent Create rate.
    #[arg(long, default_value_t = 300)]
    pub webhook_creates: usize,
    /// Only the webhook section (on a fresh node of its own).
    #[arg(long)]
    pub webhooks_only: bool,
    /// Loads of each console page in headless chromium (the list, a consignment, the
    /// notifications, the SPARQL page), timed to the page's data on screen, on the main run's
    /// store; 0 skips the console section. Needs chromium and chromedriver (`.ci/setup.sh`).
    #[arg(long, default_value_t = 0)]
    pub console_loads: usize,
    /// Consignments shared with a Dataspace Protocol connector (and a local agency) in the DSP
    /// section, on the main run's store: catalog against shared list pages, negotiations and
    /// transfers (up to 100) timed to the connector's callback, pulls against linked-data
    /// reads (0 skips the section).
    #[arg(long, default_value_t = 100)]
    pub dsp_rounds: usize,
    /// Only the DSP section (on a fresh node of its own).
    #[arg(long)]
    pub dsp_only: bool,
    /// Sequential Creates of each side of the metrics measurement (`--metrics false`, and
    /// `/metrics` counting and scraped every second), in four passes each; 0 skips the operations section: that and
    /// an online backup under four clients' Creates, on the main run's store).
    #[arg(long, default_value_t = 1000)]
    pub operations_creates: usize,
    /// Seconds of Creates measured before the backup starts (the backup's baseline window).
    #[arg(long, default_value_t = 15)]
    pub backup_idle_secs: u64,
    /// Niceness of the load the benchmark makes on behalf of other machines — the flooding
    /// clients of the fairness section, the webhook receiver — so that, on the node's own
    /// cores, it takes what the node leaves, as it would on machines of its own (0: the same
    /// priority as the node).
    #[arg(long, default_value_t = 0)]
    pub others_nice: i32,
    /// Where the figures are written as JSON (to compare runs).
    #[arg(long, default_value = "bench-results.json")]
    pub json: std::path::PathBuf,
    /// Internal: run the node under test in this process (the benchmark starts itself as a
    /// child so that the node's memory and start-up are its own).
    #[arg(long, hide = true)]
    pub serve_node: Option<std::path::PathBuf>,
    /// Passed by `cargo bench` to every benchmark target; nothing to do here.
    #[arg(long, hide = true)]
    pub bench: bool,
}
