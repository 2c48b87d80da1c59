//! The node's shared state: configuration, identity, store, queries and the services built on
//! them. Opened once per process; handlers get it as `State<Arc<Node>>`.

use std::sync::Arc;

use sha2::Digest;

use crate::accounts::Accounts;
use crate::auth::{Auth, Sessions};
use crate::config::Config;
use crate::consignment::codes::CodeLists;
use crate::consignment::listing::Listing;
use crate::documents::Documents;
use crate::error::Result;
use crate::fair::{Fair, Limit};
use crate::federation::Federation;
use crate::identity::NodeIdentity;
use crate::intake::Intake;
use crate::replica::Replica;
use crate::secrets;
use crate::sharing::Sharing;
use crate::sparql::Sparql;
use crate::store::snapshot::Snapshot;
use crate::store::{Queries, Store};
use crate::views::Views;
use crate::vocab::Vocabulary;

pub struct Node {
    pub config: Config,
    /// The data dir's format (`store::format`).
    pub format: u32,
    pub identity: Arc<NodeIdentity>,
    pub store: Arc<Store>,
    pub queries: Arc<Queries>,
    pub accounts: Arc<Accounts>,
    pub auth: Auth,
    pub intake: Intake,
    pub views: Views,
    pub sharing: Arc<Sharing>,
    pub documents: Arc<Documents>,
    pub sparql: Sparql,
    pub federation: Arc<Federation>,
    /// The Dataspace Protocol provider: connectors' catalog.
    pub dsp: Arc<crate::dsp::Dsp>,
    /// Organisations' webhook subscriptions.
    pub webhooks: Arc<crate::webhooks::Webhooks>,
    /// The SPARQL engine mirroring the contribution graphs, when one is configured.
    pub replica: Option<Arc<Replica>>,
    /// The own lists' order (also read by views and the SPARQL endpoint).
    pub listing: Arc<Listing>,
    /// The node's vocabulary, served at `/ns`.
    pub vocabulary: Vocabulary,
    /// Blocking work's slots, shared out between organisations (`crate::fair`).
    pub fair: Fair,
    /// What `/metrics` reports.
    pub metrics: crate::metrics::Metrics,
    /// Each organisation's inbox requests in flight.
    pub inbox_limit: Limit,
    /// Flips to `true` when the node shuts down: long-lived responses (notification streams)
    /// end, so the graceful shutdown does not wait for them forever.
    pub closing: tokio::sync::watch::Sender<bool>,
}

impl Node {
    /// Opens the store and loads or creates the node's secrets. Blocking.
    pub fn open(config: Config, base_url: &str) -> Result<Self> {
        // Where start-up's time goes, in the log: it is what an operator waits for.
        let started = std::time::Instant::now();
        std::fs::create_dir_all(&config.data_dir)?;
        let NodeSecrets {
            operator_key,
            session_secret,
        } = NodeSecrets::load(&config)?;

        let identity = Arc::new(NodeIdentity::new(base_url)?);
        let (store, queries) = store_of(&config)?;
        let format = store.check_format()?;
        store.check_base_url(identity.base_url(), config.change_base_url)?;
        let store_ms = started.elapsed().as_millis();
        let accounts = Arc::new(Accounts::open(
            store.clone(),
            queries.clone(),
            identity.clone(),
        )?);
        let auth = auth_of(&config, &operator_key, &session_secret, accounts.clone())?;
        let codes = Arc::new(CodeLists::load()?);
        let snapshot = Snapshot::take(&config.data_dir, store.snapshot_token());
        let snapshot_ms = started.elapsed().as_millis();
        let listing = Arc::new(listing_of(&store, &queries, snapshot.as_ref(), &accounts)?);
        let listing_ms = started.elapsed().as_millis();
        let cursor_key = sha2::Sha256::digest(format!("cursors\n{session_secret}").as_bytes());
        let documents = documents_of(&config, &identity, &store, &queries, &session_secret)?;
        let federation = federation_of(&config, &identity, &documents)?;
        let countries = Arc::new(crate::intake::load_countries()?);
        let replica = Replica::open(&store, &config.replica)?;
        let replica_ms = started.elapsed().as_millis();
        let sharing = Arc::new(Sharing::open(
            store.clone(),
            queries.clone(),
            countries,
            identity.clone(),
            federation.clone(),
            &cursor_key,
            snapshot.as_ref(),
        )?);
        let sharing_ms = started.elapsed().as_millis();
        let intake = Intake::new(
            store.clone(),
            queries.clone(),
            identity.clone(),
            codes.clone(),
            sharing.clone(),
            documents.clone(),
        )?;
        // The in-memory models that follow the writes' commit events.
        store.register(&listing);
        store.register(&sharing);
        store.register(&federation.outbox);
        let webhooks = webhooks_of(&config, &store, &cursor_key)?;
        let views = Views::new(
            store.clone(),
            queries.clone(),
            codes,
            listing.clone(),
            sharing.clone(),
            documents.clone(),
            intake.contexts().clone(),
            &cursor_key,
        )?;
        let sparql = sparql_of(
            &config,
            store.clone(),
            sharing.clone(),
            listing.clone(),
            replica.clone(),
        );
        let dsp = Arc::new(crate::dsp::Dsp::new(
            identity.clone(),
            store.clone(),
            sharing.clone(),
            federation.clone(),
            listing.clone(),
        ));
        store.register(&dsp);
        let vocabulary = Vocabulary::load()?;
        let from_snapshot = snapshot.is_some();
        // The snapshot's bytes (or the rebuild's query results) are freed; without this the
        // allocator keeps their pages and the node at rest holds them.
        drop(snapshot);
        crate::store::memory::release_free();
        tracing::info!(
            did = %identity.node_did(),
            base_url = identity.base_url(),
            models = if from_snapshot { "snapshot" } else { "rebuilt from the store" },
            store_ms,
            snapshot_ms,
            listing_ms,
            replica_ms,
            sharing_ms,
            total_ms = started.elapsed().as_millis(),
            "node opened (each _ms: time since the start of opening)"
        );
        Ok(Self {
            format,
            fair: fair_of(&config),
            metrics: crate::metrics::Metrics::new(config.metrics)?,
            inbox_limit: Limit::new(config.inbox_max_concurrent_per_org),
            config,
            identity,
            store,
            queries,
            accounts,
            auth,
            intake,
            views,
            sharing,
            documents,
            sparql,
            federation,
            dsp,
            webhooks,
            replica,
            listing,
            vocabulary,
            closing: tokio::sync::watch::channel(false).0,
        })
    }
}

impl Node {
    /// A backup into `--backup-dir` while the node serves ([`crate::backups`]). Blocking.
    pub fn backup(&self) -> Result<crate::backups::Manifest> {
        let dir = self.backup_dir()?;
        crate::backups::take(&self.store, &self.config.data_dir, dir)
    }

    /// The backups in `--backup-dir`, newest first.
    pub fn backups(&self) -> Result<Vec<crate::backups::Manifest>> {
        crate::backups::list(self.backup_dir()?)
    }

    fn backup_dir(&self) -> Result<&std::path::Path> {
        self.config.backup_dir.as_deref().ok_or_else(|| {
            crate::Error::NotFound("no --backup-dir is configured on this node".into())
        })
    }

    /// The metrics with the node's state read into their gauges, in the text format.
    pub fn metrics_now(&self) -> Result<String> {
        use std::sync::atomic::Ordering::Relaxed;
        let g = &self.metrics.gauges;
        if let Some(replica) = &self.replica {
            g.replica_lag_seconds.set(replica.lag_ms() as f64 / 1000.0);
            g.replica_pending.set(replica.pending() as i64);
        }
        let outbox = &self.federation.outbox;
        g.outbox_waiting.set(outbox.waiting.load(Relaxed) as i64);
        g.outbox_failures.set(outbox.failures.load(Relaxed) as i64);
        g.webhooks_waiting
            .set(self.webhooks.waiting.load(Relaxed) as i64);
        g.webhooks_failures
            .set(self.webhooks.failed_attempts.load(Relaxed) as i64);
        let store = crate::metrics::disk_usage(&self.config.data_dir.join("store"));
        g.store_bytes.set(store as i64);
        let w = self.store.write_stats();
        g.write_path(w.commits, w.syncs, w.lock_held_nanos);
        self.metrics.render()
    }

    /// The last write of a clean shutdown, once nothing else writes: the store sealed with a
    /// new token and flushed, then the in-memory models saved with that token for the next
    /// start ([`crate::store::snapshot`]). Blocking.
    pub fn close(&self) -> Result<()> {
        let token = self.store.seal()?;
        // Durable before the snapshot: a snapshot must never describe commits a power loss
        // could take back.
        self.store.flush()?;
        let mut snapshot = Snapshot::new(token);
        snapshot.put("listing", self.listing.encode());
        let mut stamp = crate::store::snapshot::Encoder::default();
        stamp.i64(self.store.stamped());
        snapshot.put("stamp", stamp.0);
        self.sharing.save(&mut snapshot);
        snapshot.save(&self.config.data_dir)?;
        Ok(())
    }
}

/// The own lists' order: from the snapshot when there is one, else from every record of this
/// node's organisations (those of its accounts: a partner's share leaves the partner's record
/// in the index, which the lists' commits never add either).
fn listing_of(
    store: &Store,
    queries: &Queries,
    snapshot: Option<&Snapshot>,
    accounts: &Accounts,
) -> Result<Listing> {
    let organizations = accounts.organizations();
    let local = |org: &str| organizations.contains(org);
    let saved = snapshot.and_then(|s| Listing::decode(s.section("listing")?));
    let (listing, stamped) = match saved {
        Some(listing) => {
            // The last stamp the node gave, saved at its clean shutdown.
            let stamped = snapshot.and_then(|s| s.section("stamp")?.i64());
            (listing, stamped)
        }
        None => {
            let listing = Listing::load(store, queries, local)?;
            (listing, crate::store::index::newest_update(store, queries)?)
        }
    };
    // Later stamps follow every time stored, so that a clock stepped back across the restart
    // never dates a new write before a stored one.
    store.stamped_at_least(listing.newest().unwrap_or(0).max(stamped.unwrap_or(0)));
    Ok(listing)
}

/// The secrets kept in `<data-dir>/secrets`, created at the first start.
struct NodeSecrets {
    operator_key: String,
    session_secret: String,
}

impl NodeSecrets {
    fn load(config: &Config) -> Result<Self> {
        let dir = config.data_dir.join("secrets");
        let operator_key = match &config.api_key {
            Some(key) if !key.trim().is_empty() => key.trim().to_owned(),
            _ => {
                let (key, created) = secrets::load_or_create(&dir, "operator-api-key", || {
                    secrets::random_token("dsn_op_")
                })?;
                if let Some(path) = created {
                    tracing::warn!(
                        path = %path.display(),
                        "generated the node operator API key; read it from this file (mode 0600)"
                    );
                }
                key
            }
        };
        let random = || secrets::random_token("");
        let (session_secret, _) = secrets::load_or_create(&dir, "session-signing-key", random)?;
        Ok(Self {
            operator_key,
            session_secret,
        })
    }
}

/// `--blocking-max-concurrent` slots, or four per core.
fn fair_of(config: &Config) -> Fair {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Fair::new(
        config
            .blocking_max_concurrent
            .unwrap_or_else(|| Fair::slots_for(cores)),
    )
    .sharing_cores(cores)
}

/// The analysts' endpoint with the configured limits.
fn sparql_of(
    config: &Config,
    store: Arc<Store>,
    sharing: Arc<Sharing>,
    listing: Arc<Listing>,
    replica: Option<Arc<Replica>>,
) -> Sparql {
    Sparql::new(
        store,
        sharing,
        listing,
        std::time::Duration::from_secs(config.sparql_timeout_secs),
        config.sparql_max_rows,
        crate::sparql::guard::Limits {
            max_value_bytes: config.sparql_max_value_bytes,
            max_memory_bytes: config.sparql_max_memory_mb << 20,
        },
        crate::sparql::Concurrency {
            node: config.sparql_max_concurrent.max(1),
            organization: config.sparql_max_concurrent_per_org.max(1),
        },
    )
    .with_replica(replica)
}

fn auth_of(
    config: &Config,
    operator_key: &str,
    session_secret: &str,
    accounts: Arc<Accounts>,
) -> Result<Auth> {
    Auth::new(
        operator_key,
        Sessions::new(session_secret.as_bytes(), config.session_lifetime()),
        config.login_max_failures,
        config.login_window(),
        accounts,
    )
}

/// Partner nodes, with the node's attestation key as its signing key.
fn federation_of(
    config: &Config,
    identity: &Arc<NodeIdentity>,
    documents: &Documents,
) -> Result<Arc<Federation>> {
    Ok(Arc::new(
        Federation::new(
            identity.clone(),
            documents.attestor().signing_key().clone(),
            &config.federation_partners,
            &config.federation_allow_http,
            std::time::Duration::from_millis(config.federation_timeout_ms),
            std::time::Duration::from_secs(config.federation_cache_secs),
            crate::federation::Limits {
                notices_per_minute: config.federation_max_notices_per_minute,
                remote_records: config.federation_max_remote_records,
            },
        )?
        .remember_tokens_in(&config.data_dir.join("seen-node-tokens"))?,
    ))
}

/// The webhook subscriptions and deliveries, following the commits and queueing in them; the
/// log pruned before serving, so that a caller reading it right after the start finds it so.
fn webhooks_of(
    config: &Config,
    store: &Arc<Store>,
    cursor_key: &[u8],
) -> Result<Arc<crate::webhooks::Webhooks>> {
    let days = std::time::Duration::from_secs(config.webhook_log_days.saturating_mul(86_400));
    let settings = crate::webhooks::Settings {
        retry_base: std::time::Duration::from_millis(config.webhook_retry_base_ms.max(1)),
        max_failures: config.webhook_max_failures.max(1),
        timeout: std::time::Duration::from_secs(config.webhook_timeout_secs.max(1)),
        keep_delivered: days,
    };
    let webhooks = Arc::new(crate::webhooks::Webhooks::open(
        store.clone(),
        &config.webhook_allow_http,
        settings,
        cursor_key,
    )?);
    store.register(&webhooks);
    store.journal(&webhooks);
    webhooks.prune()?;
    Ok(webhooks)
}

/// The store and the node's queries.
fn store_of(config: &Config) -> Result<(Arc<Store>, Arc<Queries>)> {
    let store = Arc::new(Store::open_with(
        &config.data_dir.join("store"),
        config.store_open_files,
        config.sync_commits,
    )?);
    Ok((store, Arc::new(Queries::load()?)))
}

/// Document bytes, links signed with a key derived from the session secret.
fn documents_of(
    config: &Config,
    identity: &NodeIdentity,
    store: &Arc<Store>,
    queries: &Arc<Queries>,
    session_secret: &str,
) -> Result<Arc<Documents>> {
    let link_key = sha2::Sha256::digest(format!("blob-links\n{session_secret}").as_bytes());
    Ok(Arc::new(Documents::open(
        config,
        &config.data_dir.join("secrets"),
        identity.node_did(),
        identity.base_url(),
        &link_key,
        store.clone(),
        queries.clone(),
    )?))
}
