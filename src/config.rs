//! Node configuration: one clap struct, every option with an environment fallback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// RocksDB table files kept open by default (`--store-open-files`). Left to Oxigraph it would
/// take the whole soft limit but 48, leaving client connections nothing sure; 512 is several
/// times what a store of 100,000 consignments holds (tables of 64 MB). Part of the reserve of
/// the file descriptor budget (`fd_limit`).
pub const STORE_OPEN_FILES: u32 = 512;

/// Options of `dataspace-node serve`.
#[derive(Args, Debug, Clone)]
pub struct Config {
    /// Address and port to listen on.
    #[arg(long, env = "DATASPACE_NODE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// Directory holding the store, secrets and blobs. Created when missing.
    #[arg(long, env = "DATASPACE_NODE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// The node operator's API key. When absent, one is generated on first start and kept in
    /// `<data-dir>/secrets/operator-api-key` (mode 0600).
    #[arg(long, env = "DATASPACE_NODE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Public URL of the node, used in DIDs and links. Defaults to `http://<bind>`.
    #[arg(long, env = "DATASPACE_NODE_BASE_URL")]
    pub base_url: Option<String>,

    /// Accept a base URL other than the one the data dir records (its first start's). The
    /// DIDs of the node and its organisations change with it: partners' policies, grants and
    /// tokens naming the old ones stop matching.
    #[arg(long, env = "DATASPACE_NODE_CHANGE_BASE_URL")]
    pub change_base_url: bool,

    /// Lifetime of a login session (its JWT), in seconds.
    #[arg(
        long,
        env = "DATASPACE_NODE_SESSION_LIFETIME_SECS",
        default_value_t = 3600
    )]
    pub session_lifetime_secs: u64,

    /// RocksDB table files kept open (each holds its index and filter blocks in memory; a
    /// read of a closed table opens it again, so fewer trade read latency for a little
    /// memory). Reserved from the file descriptor limit before connections.
    #[arg(long, env = "DATASPACE_NODE_STORE_OPEN_FILES", default_value_t = STORE_OPEN_FILES,
          value_parser = clap::value_parser!(u32).range(64..))]
    pub store_open_files: u32,

    /// Sync the store's write-ahead log after every commit, before answering (`false`: a
    /// killed process still loses nothing acknowledged, a power loss may lose the last
    /// moments' commits; saves one fdatasync per write, and one of the store's directory per
    /// new log). Linux only.
    #[arg(long, env = "DATASPACE_NODE_SYNC_COMMITS", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub sync_commits: bool,

    /// Most connections open at once; a connection beyond it is closed at once. Capped at
    /// start-up to what the file descriptor limit leaves beside RocksDB and the blob store.
    #[arg(long, env = "DATASPACE_NODE_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,

    /// Time a client has to send a request's headers, and then its body (408 beyond).
    #[arg(long, env = "DATASPACE_NODE_READ_TIMEOUT_SECS", default_value_t = 30)]
    pub read_timeout_secs: u64,

    /// Largest accepted request body, in bytes.
    #[arg(long, env = "DATASPACE_NODE_BODY_LIMIT_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub body_limit_bytes: usize,

    /// Login attempts allowed per email within the throttle window (four times as many per
    /// client address); an attempt counts from its start, a successful one is taken back.
    #[arg(long, env = "DATASPACE_NODE_LOGIN_MAX_FAILURES", default_value_t = 5)]
    pub login_max_failures: u32,

    /// Length of the login throttle window, in seconds.
    #[arg(long, env = "DATASPACE_NODE_LOGIN_WINDOW_SECS", default_value_t = 300)]
    pub login_window_secs: u64,

    /// Hosts the node may fetch a document's `uRIId` from, comma-separated: `host`,
    /// `host:port` or `*.domain`. Empty (the default): no document is ever fetched, http(s)
    /// URLs are kept as external references. Link-local and cloud metadata addresses are
    /// refused even for a listed host name, unless the address itself is listed.
    #[arg(long, env = "DATASPACE_NODE_FETCH_ALLOW", value_delimiter = ',')]
    pub fetch_allow: Vec<String>,

    /// Time limit of one document fetch (connect, redirects and body), in seconds.
    #[arg(long, env = "DATASPACE_NODE_FETCH_TIMEOUT_SECS", default_value_t = 10)]
    pub fetch_timeout_secs: u64,

    /// Largest document the node keeps (fetched or `data:`), in bytes.
    #[arg(long, env = "DATASPACE_NODE_DOCUMENT_MAX_BYTES", default_value_t = 20 * 1024 * 1024)]
    pub document_max_bytes: u64,

    /// Validity of the signed download link on single-document reads, in seconds.
    #[arg(long, env = "DATASPACE_NODE_LINK_TTL_SECS", default_value_t = 900)]
    pub link_ttl_secs: u64,

    /// Validity of the signed download links on list reads and in the consignment view, in
    /// seconds (shorter: lists are fetched often and their links are rarely followed).
    #[arg(long, env = "DATASPACE_NODE_LIST_LINK_TTL_SECS", default_value_t = 300)]
    pub list_link_ttl_secs: u64,

    /// Time limit of one SPARQL query's evaluation, in seconds (503 beyond).
    #[arg(long, env = "DATASPACE_NODE_SPARQL_TIMEOUT_SECS", default_value_t = 10)]
    pub sparql_timeout_secs: u64,

    /// Most results (rows or triples) one SPARQL query may return (400 beyond).
    #[arg(long, env = "DATASPACE_NODE_SPARQL_MAX_ROWS", default_value_t = 10_000)]
    pub sparql_max_rows: usize,

    /// Most memory one SPARQL query may make the node's heap grow by, in MiB (the query is
    /// stopped and answered 400 beyond).
    #[arg(
        long,
        env = "DATASPACE_NODE_SPARQL_MAX_MEMORY_MB",
        default_value_t = 512
    )]
    pub sparql_max_memory_mb: usize,

    /// Longest value (string or IRI) a SPARQL query may build with BIND or a projected
    /// expression, in bytes (the query is stopped and answered 400 beyond).
    #[arg(long, env = "DATASPACE_NODE_SPARQL_MAX_VALUE_BYTES", default_value_t = 1 << 20)]
    pub sparql_max_value_bytes: usize,

    /// SPARQL queries the node evaluates at once (429 with Retry-After beyond).
    #[arg(
        long,
        env = "DATASPACE_NODE_SPARQL_MAX_CONCURRENT",
        default_value_t = 4
    )]
    pub sparql_max_concurrent: usize,

    /// SPARQL queries one organisation may have evaluated at once (429 with Retry-After beyond).
    #[arg(
        long,
        env = "DATASPACE_NODE_SPARQL_MAX_CONCURRENT_PER_ORG",
        default_value_t = 2
    )]
    pub sparql_max_concurrent_per_org: usize,

    /// Inbox requests (posts and validations) one organisation may have in flight, counted
    /// from the moment their headers are read (429 with Retry-After beyond).
    #[arg(
        long,
        env = "DATASPACE_NODE_INBOX_MAX_CONCURRENT_PER_ORG",
        default_value_t = 4
    )]
    pub inbox_max_concurrent_per_org: usize,

    /// Count requests, activities and queries for `GET /metrics` (`false`: nothing is counted
    /// and `/metrics` answers 404).
    #[arg(long, env = "DATASPACE_NODE_METRICS", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub metrics: bool,

    /// Where online backups go (`POST /operations/backups`, `--backup-every`); unset: none.
    #[arg(long, env = "DATASPACE_NODE_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,

    /// Take a backup every this many seconds (needs --backup-dir).
    #[arg(long, env = "DATASPACE_NODE_BACKUP_EVERY", requires = "backup_dir",
          value_parser = clap::value_parser!(u64).range(60..))]
    pub backup_every: Option<u64>,

    /// Keep the newest this many backups in --backup-dir (older ones are removed after each
    /// scheduled backup).
    #[arg(long, env = "DATASPACE_NODE_BACKUP_KEEP", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub backup_keep: u64,

    /// Blocking work (store reads and writes, the inbox's checks, SPARQL evaluations) the
    /// node runs at once, shared out fairly between organisations; more waits its turn.
    /// Default: four per core.
    #[arg(long, env = "DATASPACE_NODE_BLOCKING_MAX_CONCURRENT")]
    pub blocking_max_concurrent: Option<usize>,

    /// Partner nodes: hosts (`host` or `host:port`) whose did:web this node resolves — to
    /// check their node tokens, send them notices and pull their datasets. `*` trusts any
    /// host. Empty (the default): no federation; policies name organisations of this node only.
    #[arg(
        long,
        env = "DATASPACE_NODE_FEDERATION_PARTNERS",
        value_delimiter = ','
    )]
    pub federation_partners: Vec<String>,

    /// Partner hosts (`host` or `host:port`) reached over plain HTTP instead of HTTPS; they
    /// are partners too. For loopback tests and closed networks.
    #[arg(
        long,
        env = "DATASPACE_NODE_FEDERATION_ALLOW_HTTP",
        value_delimiter = ','
    )]
    pub federation_allow_http: Vec<String>,

    /// Hosts (`host`, `host:port`, `*.domain`) webhook subscriptions may name with `http://`
    /// (every other destination is `https://`); a loopback, private or link-local address is
    /// reached only when the address itself is listed. For loopback tests and closed networks.
    #[arg(long, env = "DATASPACE_NODE_WEBHOOK_ALLOW_HTTP", value_delimiter = ',')]
    pub webhook_allow_http: Vec<String>,

    /// The first retry of a failed webhook delivery waits this long (milliseconds); each
    /// further one twice as long, up to an hour, plus up to a quarter at random.
    #[arg(
        long,
        env = "DATASPACE_NODE_WEBHOOK_RETRY_BASE_MS",
        default_value_t = 5000
    )]
    pub webhook_retry_base_ms: u64,

    /// A subscription whose deliveries failed this many times in a row is disabled (the
    /// default is about three days of retries at the default base).
    #[arg(
        long,
        env = "DATASPACE_NODE_WEBHOOK_MAX_FAILURES",
        default_value_t = 80
    )]
    pub webhook_max_failures: u32,

    /// Days a delivered webhook delivery stays in its subscription's delivery log (and can be
    /// replayed); older ones are removed at start-up and hourly. Undelivered ones always stay.
    #[arg(long, env = "DATASPACE_NODE_WEBHOOK_LOG_DAYS", default_value_t = 30)]
    pub webhook_log_days: u64,

    /// How long one webhook delivery attempt may take, connection included.
    #[arg(
        long,
        env = "DATASPACE_NODE_WEBHOOK_TIMEOUT_SECS",
        default_value_t = 15
    )]
    pub webhook_timeout_secs: u64,

    /// How long a read waits for a partner node's dataset before answering without it.
    #[arg(
        long,
        env = "DATASPACE_NODE_FEDERATION_TIMEOUT_MS",
        default_value_t = 2000
    )]
    pub federation_timeout_ms: u64,

    /// How long a pulled dataset may be reused by later reads (0: always pull); at most 1,024
    /// are kept, the oldest giving way.
    #[arg(
        long,
        env = "DATASPACE_NODE_FEDERATION_CACHE_SECS",
        default_value_t = 0
    )]
    pub federation_cache_secs: u64,

    /// Notices one partner node may send in any minute (429 with Retry-After beyond; its
    /// outbox tries again later).
    #[arg(long, env = "DATASPACE_NODE_FEDERATION_MAX_NOTICES_PER_MINUTE", default_value_t = 600,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub federation_max_notices_per_minute: u32,

    /// Consignments one partner node may share with one organisation of this node (an
    /// `Announce` beyond is refused with 403, nothing of it stored).
    #[arg(long, env = "DATASPACE_NODE_FEDERATION_MAX_REMOTE_RECORDS", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub federation_max_remote_records: u64,

    #[command(flatten)]
    pub replica: ReplicaConfig,
}

/// A SPARQL engine the node mirrors its contribution graphs and readable-graph markers into,
/// and answers analysts' queries from (`replica`). Unset: no replica.
#[derive(Args, Debug, Clone)]
pub struct ReplicaConfig {
    /// The replica's SPARQL 1.1 query endpoint (Virtuoso: `http://HOST:8890/sparql`).
    #[arg(long, env = "DATASPACE_NODE_REPLICA_QUERY_URL")]
    pub replica_query_url: Option<String>,

    /// The replica's SPARQL 1.1 update endpoint (Virtuoso: `http://HOST:8890/sparql-auth`,
    /// with Digest authentication). Defaults to the query endpoint.
    #[arg(long, env = "DATASPACE_NODE_REPLICA_UPDATE_URL")]
    pub replica_update_url: Option<String>,

    /// User for the replica's endpoints (HTTP Basic or Digest, as the replica asks).
    #[arg(long, env = "DATASPACE_NODE_REPLICA_USER")]
    pub replica_user: Option<String>,

    /// Password of --replica-user. Prefer the environment variable or
    /// --replica-password-file: a command line is visible to every user of the machine.
    #[arg(long, env = "DATASPACE_NODE_REPLICA_PASSWORD", hide_env_values = true)]
    pub replica_password: Option<String>,

    /// File holding the password of --replica-user (one line; a final newline is dropped).
    #[arg(
        long,
        env = "DATASPACE_NODE_REPLICA_PASSWORD_FILE",
        conflicts_with = "replica_password"
    )]
    pub replica_password_file: Option<PathBuf>,

    /// Longest replication lag, in milliseconds, at which `/sparql` still answers from the
    /// replica; beyond it the embedded store answers.
    #[arg(
        long,
        env = "DATASPACE_NODE_REPLICA_MAX_LAG_MS",
        default_value_t = 5000
    )]
    pub replica_max_lag_ms: u64,
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        Self {
            replica_query_url: None,
            replica_update_url: None,
            replica_user: None,
            replica_password: None,
            replica_password_file: None,
            replica_max_lag_ms: 5000,
        }
    }
}

impl Config {
    /// A configuration with every default, for a given data directory (tests, tools).
    pub fn with_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            bind: "127.0.0.1:0".parse().expect("literal address"),
            data_dir: data_dir.into(),
            api_key: None,
            base_url: None,
            change_base_url: false,
            session_lifetime_secs: 3600,
            body_limit_bytes: 10 * 1024 * 1024,
            max_connections: 10_000,
            store_open_files: STORE_OPEN_FILES,
            sync_commits: true,
            read_timeout_secs: 30,
            login_max_failures: 5,
            login_window_secs: 300,
            fetch_allow: Vec::new(),
            fetch_timeout_secs: 10,
            document_max_bytes: 20 * 1024 * 1024,
            link_ttl_secs: 900,
            list_link_ttl_secs: 300,
            sparql_timeout_secs: 10,
            sparql_max_rows: 10_000,
            sparql_max_memory_mb: 512,
            sparql_max_value_bytes: 1 << 20,
            sparql_max_concurrent: 4,
            sparql_max_concurrent_per_org: 2,
            inbox_max_concurrent_per_org: 4,
            metrics: true,
            backup_dir: None,
            backup_every: None,
            backup_keep: 7,
            blocking_max_concurrent: None,
            federation_partners: Vec::new(),
            federation_allow_http: Vec::new(),
            webhook_allow_http: Vec::new(),
            webhook_retry_base_ms: 5000,
            webhook_max_failures: 80,
            webhook_log_days: 30,
            webhook_timeout_secs: 15,
            federation_timeout_ms: 2000,
            federation_cache_secs: 0,
            federation_max_notices_per_minute: 600,
            federation_max_remote_records: 100_000,
            replica: ReplicaConfig::default(),
        }
    }

    pub fn session_lifetime(&self) -> Duration {
        Duration::from_secs(self.session_lifetime_secs)
    }

    pub fn login_window(&self) -> Duration {
        Duration::from_secs(self.login_window_secs)
    }
}
