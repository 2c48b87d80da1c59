//! A SPARQL engine mirroring the node's contribution graphs and readable-graph markers, which
//! answers analysts' queries when it is close enough behind the store.
//!
//! - [`log`]: every commit that changed a consignment writes a log entry in its own
//!   transaction (a [`Journal`](crate::store::Journal)); the replica's position is kept next
//!   to it.
//! - [`sync`]: one background task ships the entries of one store snapshot at a time as
//!   SPARQL 1.1 Update (the triples the commits removed deleted exactly, the changed graphs
//!   inserted as the snapshot holds them, blank nodes as skolem IRIs, markers set to the
//!   snapshot's), then removes them; a replica whose position does not match the log is
//!   filled whole. `verify` compares the two.
//! - [`query`]: an analyst's query, isolated by `sparql` exactly as for the store, sent to the
//!   replica; [`client`]: its endpoints, with Basic or Digest authentication.
//!
//! The store stays the system of record: a replica that is down, too far behind or failing
//! leaves `/sparql` to the store.

pub mod client;
pub mod digest;
pub mod log;
pub mod query;
pub mod sync;
pub mod update;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::config::ReplicaConfig;
use crate::error::Result;
use crate::store::{Committed, ReadModel, Store};
pub use client::{Client, Failure};
pub use query::Outcome;

/// First retry after a failed shipment; doubled per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// After a batch, commits are let in for this long before the next one: one request carries
/// many of them (the replica's work per request — the position, the acknowledgement in the
/// store, the HTTP round trip — spread over them) at a small cost in lag.
const COALESCE: Duration = Duration::from_millis(25);
/// After a query the replica failed, queries go to the store for this long.
const QUERY_PAUSE: Duration = Duration::from_secs(2);

pub struct Replica {
    store: Arc<Store>,
    client: Arc<Client>,
    log: Arc<log::Log>,
    max_lag: Duration,
    state: Mutex<State>,
    wake: Notify,
}

struct State {
    /// The replica holds the store's state up to the shipped entries (position checked, or
    /// a full sync done) since this start.
    synced: bool,
    /// Since when the replica has not been synced (the lag while it is not).
    unsynced_since: i64,
    /// Logged entries not acknowledged yet: number and commit time (ms).
    unshipped: VecDeque<(u64, i64)>,
    /// Shipping failed since the last success (logged once per outage).
    failing: bool,
    /// Queries skip the replica until then (it just failed one).
    paused_until: Option<Instant>,
    /// The last batch was acknowledged whole (see `sync::ship`); false after a failure and
    /// at start-up.
    clean: bool,
    /// Per organisation, the log entry of the last commit that changed its readable markers
    /// (a grant given or revoked); `""` stands for every organisation (a circle changed).
    /// Until the replica has that entry, the organisation's queries go to the store.
    watermarks: HashMap<String, u64>,
    /// Organisations whose markers the commit being applied changed: its log entry, the
    /// commit's last event, gives their watermark.
    marked: Vec<String>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Replica {
    /// The replica of `config`, with its log registered on `store`; `None` when no replica is
    /// configured (then a log left from an earlier run is dropped). Blocking.
    pub fn open(store: &Arc<Store>, config: &ReplicaConfig) -> Result<Option<Arc<Self>>> {
        let Some(client) = Client::new(config)? else {
            log::forget(store)?;
            return Ok(None);
        };
        let (log, waiting) = log::Log::open(store.clone())?;
        let log = Arc::new(log);
        let unshipped = waiting.iter().map(|e| (e.seq, e.ms)).collect();
        let replica = Arc::new(Self {
            store: store.clone(),
            client: Arc::new(client),
            log,
            max_lag: Duration::from_millis(config.replica_max_lag_ms),
            state: Mutex::new(State {
                synced: false,
                unsynced_since: now_ms(),
                unshipped,
                failing: false,
                paused_until: None,
                clean: false,
                watermarks: HashMap::new(),
                marked: Vec::new(),
            }),
            wake: Notify::new(),
        });
        store.journal(&replica.log);
        store.register(&replica);
        Ok(Some(replica))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How far the replica is behind the store: since the oldest commit it does not have.
    pub fn lag_ms(&self) -> u64 {
        let state = self.state();
        let oldest = state.unshipped.front().map(|(_, ms)| *ms);
        let since = if state.synced {
            oldest
        } else {
            Some(oldest.map_or(state.unsynced_since, |ms| ms.min(state.unsynced_since)))
        };
        // At least 1 while anything is missing: a commit of this very millisecond is not
        // "no lag".
        since.map_or(0, |ms| (now_ms() - ms).max(1) as u64)
    }

    /// Logged commits the replica has not acknowledged yet.
    pub fn pending(&self) -> usize {
        self.state().unshipped.len()
    }

    /// Whether a query may go to the replica now.
    pub fn usable(&self) -> bool {
        let lag = self.lag_ms();
        let state = self.state();
        state.synced
            && lag <= self.max_lag.as_millis() as u64
            && state.paused_until.is_none_or(|t| Instant::now() >= t)
    }

    /// Whether `organization`'s query may go to the replica now: [`Replica::usable`], and the
    /// replica has every change of what the organisation may read — a query after a
    /// revocation never reads the replica's markers of before it.
    pub fn usable_for(&self, organization: &str) -> bool {
        if !self.usable() {
            return false;
        }
        let state = self.state();
        let Some(oldest) = state.unshipped.front().map(|(seq, _)| *seq) else {
            return true;
        };
        [organization, ""]
            .iter()
            .filter_map(|o| state.watermarks.get(*o))
            .all(|mark| *mark < oldest)
    }

    /// Runs `text` on the replica; a failure pauses the replica for queries a moment.
    pub async fn query(
        &self,
        text: &str,
        graph: bool,
        timeout: Duration,
        cap: usize,
    ) -> std::result::Result<Outcome, Failure> {
        let result = query::run(&self.client, text, graph, timeout, cap).await;
        match &result {
            // This query's own trouble: the store answers it, the replica the others.
            Err(Failure::TimedOut) | Err(Failure::Query(_)) | Ok(_) => {}
            Err(e) => {
                let mut state = self.state();
                let first = state.paused_until.is_none();
                state.paused_until = Some(Instant::now() + QUERY_PAUSE);
                if first {
                    tracing::warn!(error = %e, "the replica failed a query; the store answers");
                }
            }
        }
        result
    }

    /// Ships the log until the node closes: first brings the replica up to the store (its
    /// position checked against the log, else a full sync), then each batch of commits,
    /// retrying with backoff while the replica is down.
    pub async fn run(self: Arc<Self>, mut closing: tokio::sync::watch::Receiver<bool>) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let outcome = if self.state().synced {
                self.ship().await
            } else {
                self.bring_up().await
            };
            let wait = match outcome {
                Ok(shipped) => {
                    if shipped {
                        tokio::select! {
                            _ = tokio::time::sleep(COALESCE) => {}
                            _ = closing.changed() => return,
                        }
                    }
                    backoff = FIRST_BACKOFF;
                    let mut state = self.state();
                    if std::mem::take(&mut state.failing) {
                        tracing::info!("the replica is back; shipping resumed");
                    }
                    state.paused_until = None;
                    None
                }
                Err(e) => {
                    let mut state = self.state();
                    state.clean = false;
                    // A replica back from a crash may have lost what it acknowledged: its
                    // position is checked again before shipping resumes.
                    if std::mem::replace(&mut state.synced, false) {
                        state.unsynced_since = now_ms();
                    }
                    if !std::mem::replace(&mut state.failing, true) {
                        tracing::warn!(error = %e, "replication to the replica failed; retrying with backoff");
                    }
                    let wait = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    Some(wait)
                }
            };
            let sleep = wait.unwrap_or(Duration::from_secs(3600));
            tokio::select! {
                _ = self.wake.notified(), if wait.is_none() => {}
                _ = tokio::time::sleep(sleep) => {}
                _ = closing.changed() => return,
            }
        }
    }

    /// Ships what the log holds. A notification arriving meanwhile is kept by `Notify`, so
    /// the loop ships again at once.
    async fn ship(&self) -> Result<bool> {
        let (store, client) = (self.store.clone(), self.client.clone());
        let clean = std::mem::take(&mut self.state().clean);
        // Snapshot reads and requests built from them: on a blocking thread (see `sync`).
        let shipped = tokio::task::spawn_blocking(move || {
            let handle = tokio::runtime::Handle::current();
            sync::ship(&store, &client, &handle, clean)
        })
        .await??;
        if let Some(through) = shipped {
            self.shipped_through(through);
        }
        self.state().clean = true;
        Ok(shipped.is_some())
    }

    fn shipped_through(&self, through: u64) {
        let mut state = self.state();
        while state
            .unshipped
            .front()
            .is_some_and(|(seq, _)| *seq <= through)
        {
            state.unshipped.pop_front();
        }
        // Marks the replica has passed hold nothing back any more.
        state.watermarks.retain(|_, mark| *mark > through);
    }

    /// Checks the replica's position against the log: within it, shipping resumes from the
    /// store's position (re-sending is harmless: graphs are replaced, markers set); else
    /// (an empty replica, one restored from an older backup, another node's) a full sync.
    async fn bring_up(&self) -> Result<bool> {
        let theirs = sync::replica_position(&self.client)
            .await
            .map_err(sync::replica_error)?;
        let store = self.store.clone();
        let (epoch, shipped, last) = tokio::task::spawn_blocking(move || -> Result<_> {
            let reader = store.db().start_transaction()?;
            let shipped = log::shipped(&reader)?;
            let last = log::pending(&reader)?.last().map_or(shipped, |e| e.seq);
            Ok((log::epoch(&reader)?, shipped, last))
        })
        .await??;
        let resumable = theirs
            .as_ref()
            .is_some_and(|(e, p)| Some(e) == epoch.as_ref() && *p >= shipped && *p <= last);
        if !resumable {
            tracing::info!(
                replica = ?theirs,
                store = shipped,
                "the replica's position does not match the store's log; syncing it whole"
            );
            let (store, client) = (self.store.clone(), self.client.clone());
            let through = tokio::task::spawn_blocking(move || {
                let handle = tokio::runtime::Handle::current();
                sync::full(&store, &client, &handle)
            })
            .await??;
            self.shipped_through(through);
        }
        self.state().synced = true;
        self.ship().await
    }
}

/// Each logged commit wakes the shipper and starts counting its lag; a commit that changed
/// what organisations may read sets their watermark to its log entry.
impl ReadModel for Replica {
    fn apply(&self, event: &Committed) {
        let mut state = self.state();
        match event {
            Committed::Shared { org, .. } | Committed::Unshared { org, .. } => {
                state.marked.push(org.clone());
            }
            Committed::CircleChanged { .. } => state.marked.push(String::new()),
            Committed::ReplicationLogged { seq, ms } => {
                for org in std::mem::take(&mut state.marked) {
                    state.watermarks.insert(org, *seq);
                }
                state.unshipped.push_back((*seq, *ms));
                drop(state);
                self.wake.notify_one();
            }
            _ => {}
        }
    }
}

/// `dataspace-node replica sync` and `verify`: the node stopped, its store opened here.
pub mod command {
    use super::*;

    fn open(data_dir: &std::path::Path, config: &ReplicaConfig) -> Result<(Store, Arc<Client>)> {
        let client = Client::new(config)?
            .ok_or_else(|| crate::error::Error::bad_request("--replica-query-url is required"))?;
        let store = Store::open(&data_dir.join("store"))?;
        Ok((store, Arc::new(client)))
    }

    /// Fills the replica from the store. Returns what to print.
    pub async fn sync(data_dir: std::path::PathBuf, config: ReplicaConfig) -> Result<String> {
        tokio::task::spawn_blocking(move || {
            let (store, client) = open(&data_dir, &config)?;
            let handle = tokio::runtime::Handle::current();
            let through = sync::full(&store, &client, &handle)?;
            store.flush()?;
            Ok(format!(
                "replica synced with the store (log position {through})"
            ))
        })
        .await?
    }

    /// Compares the replica with the store: the differences, one per line (none: in sync).
    pub async fn verify(
        data_dir: std::path::PathBuf,
        config: ReplicaConfig,
    ) -> Result<(Vec<String>, usize)> {
        tokio::task::spawn_blocking(move || {
            let (store, client) = open(&data_dir, &config)?;
            let handle = tokio::runtime::Handle::current();
            let (differences, unshipped) = sync::verify(&store, &client, &handle)?;
            Ok((
                differences.iter().map(ToString::to_string).collect(),
                unshipped,
            ))
        })
        .await?
    }
}
