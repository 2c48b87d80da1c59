//! The embedded Oxigraph store (RocksDB on disk), opened once and owned by the process.
//!
//! Every write goes through [`Store::write`], which serialises writers: Oxigraph's transactions
//! read a snapshot and commit a batch without conflict detection, so a read-check-write (is this
//! email taken? does this consignment exist?) is only safe when no other writer runs meanwhile.
//! The sync that makes a commit durable comes after the lock, shared by the writers that
//! committed meanwhile ([`group`]). Readers never take the lock; they read consistent snapshots.

pub mod activities;
pub mod ahead;
pub mod backup;
pub mod base_url;
pub mod bulk;
pub mod events;
pub mod format;
pub mod graphs;
mod group;
pub mod index;
pub mod info_logs;
pub mod memory;
pub mod parts;
pub mod queries;
pub mod records;
pub mod snapshot;
pub mod wal;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use oxigraph::store::Transaction;

use crate::config::STORE_OPEN_FILES as MAX_OPEN_FILES;
use crate::error::{Error, Result};

pub use events::{Change, Committed, Events, Journal, ReadModel};
pub use queries::{Queries, Query};

pub struct Store {
    db: oxigraph::store::Store,
    writer: Mutex<()>,
    /// Commits since the memtables were last flushed, and when that was.
    unflushed: AtomicU64,
    flushed: Mutex<Instant>,
    /// The last time [`Store::stamp`] handed out, in milliseconds since the epoch.
    stamped: AtomicI64,
    /// The in-memory models commit events are applied to. Weak: the models hold the store,
    /// and a cycle would keep a stopped node's store (and its RocksDB lock) alive.
    models: RwLock<Vec<Weak<dyn ReadModel>>>,
    /// What writes record in their own transaction (weak, as the models).
    journals: RwLock<Vec<Weak<dyn Journal>>>,
    /// The models snapshot token the store held when it was opened (deleted since).
    opened_token: Option<String>,
    /// Set by [`Store::seal`]: every later commit is refused.
    sealed: AtomicBool,
    /// The write-ahead log synced after every commit ([`wal`]); `None`: not synced.
    wal: Option<wal::Wal>,
    /// Commits waiting for the sync that covers them ([`group`]).
    group: group::Group,
    /// Commits made and the time the writer lock was held for them, in nanoseconds
    /// (`/metrics`).
    commits: AtomicU64,
    held_nanos: AtomicU64,
}

/// What `/metrics` reports of the write path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub commits: u64,
    pub syncs: u64,
    pub lock_held_nanos: u64,
}

/// Flush after this many commits (checked every two seconds, so under a steady stream a flush
/// follows about every two seconds)... Small memtables cost less memory and less to insert into
/// and to read through: against 1,000, peak RSS of the benchmark's node 110–117 MB instead of
/// 171–178 MB and its data dir 10–25% smaller at the end of a run, latencies within the noise
/// (docs/PERFORMANCE.md, "Flushing smaller memtables").
const FLUSH_AFTER_WRITES: u64 = 100;
/// ...or this long after the first unflushed one.
const FLUSH_AFTER: Duration = Duration::from_secs(30);

impl Store {
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, MAX_OPEN_FILES, true)
    }

    /// [`Store::open`] keeping at most `open_files` table files open, and syncing the
    /// write-ahead log after every commit or not ([`wal`]).
    pub fn open_with(path: &Path, open_files: u32, sync_commits: bool) -> Result<Self> {
        std::fs::create_dir_all(path)?;
        let db = open_db(path, open_files)?;
        let wal = if sync_commits && cfg!(target_os = "linux") {
            Some(wal::Wal::open(path)?)
        } else {
            None
        };
        bulk::remove_leftover_files(path)?;
        info_logs::prune(path, info_logs::KEPT)?;
        let notes = bulk::clean_up(&db)?;
        if notes > 0 {
            tracing::warn!(
                notes,
                "removed the graphs and subjects written ahead of a transaction that did not commit (a load or the node was stopped)"
            );
        }
        let opened_token = snapshot::take_token(&db)?;
        // The clean-up's and the token's commits, as durable as any later one.
        let store = Self::over(db, opened_token, false, wal);
        store.sync_log();
        Ok(store)
    }

    /// The store for reading only (measurements and checks beside a stopped node): the models
    /// snapshot's token stays, since nothing changes, and every commit is refused.
    pub fn open_read_only(path: &Path) -> Result<Self> {
        Ok(Self::over(open_db(path, MAX_OPEN_FILES)?, None, true, None))
    }

    fn over(
        db: oxigraph::store::Store,
        opened_token: Option<String>,
        sealed: bool,
        wal: Option<wal::Wal>,
    ) -> Self {
        Self {
            db,
            writer: Mutex::new(()),
            unflushed: AtomicU64::new(0),
            flushed: Mutex::new(Instant::now()),
            stamped: AtomicI64::new(0),
            models: RwLock::new(Vec::new()),
            journals: RwLock::new(Vec::new()),
            opened_token,
            sealed: AtomicBool::new(sealed),
            wal,
            group: group::Group::default(),
            commits: AtomicU64::new(0),
            held_nanos: AtomicU64::new(0),
        }
    }

    /// `remove` and `insert` in one transaction. Blocking.
    pub fn rewrite(&self, remove: &[Quad], insert: &[Quad]) -> Result<()> {
        if remove.is_empty() && insert.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            remove.iter().for_each(|q| {
                tx.remove(q);
            });
            insert.iter().for_each(|q| {
                tx.insert(q);
            });
            Ok(())
        })
    }

    /// The token of the models snapshot this store state matches, if any ([`snapshot`]).
    pub fn snapshot_token(&self) -> Option<&str> {
        self.opened_token.as_deref()
    }

    /// Writes a new snapshot token as the store's last commit and refuses every later one: the
    /// in-memory models stay as they are now, which the caller saves with the token.
    pub fn seal(&self) -> Result<String> {
        let _guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let token = uuid::Uuid::new_v4().to_string();
        let mut tx = self.db.start_transaction()?;
        tx.insert(&snapshot::token_quad(&token));
        tx.commit()?;
        // The models saved with the token must hold every commit before it, including those
        // whose writers released the lock and wait for their sync.
        let seq = self.group.committed(Arc::default());
        self.group
            .durable(seq, || self.sync_log(), |events| self.apply(events));
        self.sealed.store(true, Ordering::SeqCst);
        Ok(token)
    }

    /// A write's time, in milliseconds since the epoch: the clock, but strictly later than any
    /// stamp before it (also when the clock steps back). Taken inside a [`Store::write`], stamps
    /// increase in commit order — what the lists' newest-first order rests on.
    pub fn stamp(&self) -> i64 {
        let now = chrono::Utc::now().timestamp_millis();
        let previous = self
            .stamped
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(now.max(last + 1))
            })
            .unwrap_or_else(|last| last);
        now.max(previous + 1)
    }

    /// The last stamp given (or the floor set at start-up): saved with the models snapshot.
    pub fn stamped(&self) -> i64 {
        self.stamped.load(Ordering::SeqCst)
    }

    /// Makes later stamps follow `ms` (the newest time stored, at start-up).
    pub fn stamped_at_least(&self, ms: i64) {
        self.stamped.fetch_max(ms, Ordering::SeqCst);
    }

    /// Makes the last commit durable ([`wal`]). A failure stops the process: the commit is
    /// applied and readable but may not survive a power loss, and after a failed `fdatasync`
    /// Linux may report the next one a success with the data dropped — no later commit could
    /// be called durable. A restart recovers from what is on disk and rebuilds the models
    /// (as PostgreSQL does on a failed fsync).
    fn sync_log(&self) {
        if let Some(wal) = &self.wal {
            if let Err(e) = wal.sync() {
                tracing::error!(error = %e, "could not sync the store's write-ahead log: stopping");
                eprintln!(
                    "dataspace-node: could not sync the store's write-ahead log ({e}): stopping"
                );
                std::process::abort();
            }
        }
    }

    /// The write-ahead log the last commit was synced in (tests).
    #[cfg(test)]
    pub fn wal_in_use(&self) -> Option<std::path::PathBuf> {
        self.wal.as_ref().and_then(wal::Wal::current)
    }

    /// The underlying store, for reads (queries, pattern lookups).
    pub fn db(&self) -> &oxigraph::store::Store {
        &self.db
    }

    /// Runs `f` inside one transaction while holding the writer lock and commits it when `f`
    /// returns `Ok`. Nothing of a failed `f` is written. Blocking: call it off the async threads.
    pub fn write<T>(&self, f: impl FnOnce(&mut Transaction<'_>) -> Result<T>) -> Result<T> {
        self.commit(|tx, _| f(tx)).map(|(out, _)| out)
    }

    /// [`Store::write`] for a write whose effects in-memory models mirror: `f` collects
    /// [`Committed`] events, and once the transaction committed and a sync covering it
    /// finished, every registered [`ReadModel`] applies them, in order — the models change in
    /// commit order (see [`events`], [`group`]). Returns `f`'s result and its events.
    pub fn commit<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>, &mut Events) -> Result<T>,
    ) -> Result<(T, Events)> {
        self.commit_deferred(|tx, events, _| f(tx, events))
    }

    /// [`Store::commit`] for a write that may defer quads of graphs it creates to the bulk
    /// loader ([`bulk`]): they are ingested just before the transaction commits.
    pub fn commit_deferred<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>, &mut Events, &bulk::DeferredCell) -> Result<T>,
    ) -> Result<(T, Events)> {
        self.commit_in_turn((), f)
    }

    /// [`Store::commit_deferred`] for a writer holding a turn at the lock (the inbox's fair
    /// share between organisations): `turn` is dropped as soon as the writer lock is, so the
    /// next writer in turn commits while this one waits for its sync.
    pub fn commit_in_turn<T, G>(
        &self,
        turn: G,
        f: impl FnOnce(&mut Transaction<'_>, &mut Events, &bulk::DeferredCell) -> Result<T>,
    ) -> Result<(T, Events)> {
        // A poisoned lock only means another writer panicked; its transaction was never
        // committed, so the store is consistent and the lock can be taken over.
        let guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let held = Instant::now();
        if self.sealed.load(Ordering::SeqCst) {
            return Err(Error::Unavailable("the node is shutting down".into()));
        }
        let mut tx = self.db.start_transaction()?;
        let mut events = Events::default();
        let deferred = bulk::DeferredCell::default();
        let out = f(&mut tx, &mut events, &deferred)?;
        if !events.is_empty() {
            let journals = self.journals.read().unwrap_or_else(|p| p.into_inner());
            for journal in journals.iter().filter_map(Weak::upgrade) {
                journal.record(&mut tx, &mut events)?;
            }
        }
        let deferred = deferred.into_inner();
        if !deferred.is_empty() {
            for note in bulk::write(&self.db, deferred, || self.sync_log())? {
                tx.remove(&note);
            }
        }
        tx.commit()?;
        self.unflushed.fetch_add(1, Ordering::Relaxed);
        let events = Arc::new(events);
        let seq = self.group.committed(events.clone());
        let sync = || self.sync_log();
        let apply = |events: &Events| self.apply(events);
        // Synced before the models see it, so before anything is answered or sent because of
        // it. A commit whose models later writers read under the lock is synced and applied
        // before the lock passes on; any other shares the sync after it.
        let read_by_writers = events.iter().any(Committed::read_by_writers);
        if read_by_writers {
            self.group.durable(seq, sync, apply);
        }
        self.held(held);
        drop(guard);
        drop(turn);
        if !read_by_writers {
            self.group.durable(seq, sync, apply);
        }
        // The group let its share go once the models applied them: no copy is made.
        let events = Arc::try_unwrap(events).unwrap_or_else(|shared| (*shared).clone());
        Ok((out, events))
    }

    fn held(&self, since: Instant) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.held_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The models apply a commit's events, in order.
    fn apply(&self, events: &Events) {
        if events.is_empty() {
            return;
        }
        let models = self.models.read().unwrap_or_else(|p| p.into_inner());
        let models: Vec<Arc<dyn ReadModel>> = models.iter().filter_map(Weak::upgrade).collect();
        for event in events.iter() {
            for model in &models {
                model.apply(event);
            }
        }
    }

    /// Commits, syncs and the writer lock's hold since the store opened.
    pub fn write_stats(&self) -> WriteStats {
        WriteStats {
            commits: self.commits.load(Ordering::Relaxed),
            syncs: self.group.syncs(),
            lock_held_nanos: self.held_nanos.load(Ordering::Relaxed),
        }
    }

    /// Adds a model that follows every later commit's events. At start-up, before serving.
    /// The caller keeps `model` alive (the node holds every model).
    pub fn register(&self, model: &Arc<impl ReadModel + 'static>) {
        let model: Arc<dyn ReadModel> = model.clone();
        self.models
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&model));
    }

    /// Adds a journal every later write records in its transaction. At start-up.
    pub fn journal(&self, journal: &Arc<impl Journal + 'static>) {
        let journal: Arc<dyn Journal> = journal.clone();
        self.journals
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&journal));
    }

    /// The one object of `subject predicate ?o` in `graph` (the first, should there be more):
    /// the point look-up the node's single-valued facts are read with. Blocking.
    pub fn value(
        &self,
        subject: &NamedNode,
        predicate: &NamedNode,
        graph: &NamedNode,
    ) -> Result<Option<Term>> {
        Ok(self
            .db
            .quads_for_pattern(
                Some(subject.as_ref().into()),
                Some(predicate.as_ref()),
                None,
                Some(graph.as_ref().into()),
            )
            .next()
            .transpose()?
            .map(|q| q.object))
    }

    /// Cheap liveness check used by `/health`.
    pub fn ping(&self) -> Result<()> {
        self.db
            .contains_named_graph(graphs::accounts().as_ref())
            .map(|_| ())
            .map_err(Error::from)
    }

    /// Flushes memtables to disk; called on graceful shutdown so the next start replays no WAL.
    pub fn flush(&self) -> Result<()> {
        self.unflushed.store(0, Ordering::Relaxed);
        *self.flushed.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.db.flush().map_err(Error::from)
    }

    /// Flushes when enough has been written since the last flush. Oxigraph leaves RocksDB's
    /// defaults: up to two 64 MB memtables per column family (eleven of them) and a write-ahead
    /// log that is only dropped once every column family flushed — a node under steady intake
    /// grew to 2 GB of memory and 3 GB of logs within minutes. Regular flushes bound both.
    /// Blocking; returns whether it flushed.
    pub fn flush_if_due(&self) -> Result<bool> {
        let writes = self.unflushed.load(Ordering::Relaxed);
        let since = self
            .flushed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed();
        if writes >= FLUSH_AFTER_WRITES || (writes > 0 && since >= FLUSH_AFTER) {
            self.flush()?;
            // The flushed memtables were freed; without this the allocator keeps their pages.
            memory::release_free();
            return Ok(true);
        }
        Ok(false)
    }
}

fn open_db(path: &Path, open_files: u32) -> Result<oxigraph::store::Store> {
    let options = oxigraph::store::StoreOptions::default().with_max_open_files(open_files);
    Ok(oxigraph::store::Store::open_with_options(path, options)?)
}

/// Writes the single-valued fact `subject predicate object` in `graph` in place of whatever
/// objects it had: the write counterpart of [`Store::value`].
pub fn replace_value(
    tx: &mut Transaction<'_>,
    subject: &NamedNode,
    predicate: &NamedNode,
    object: impl Into<Term>,
    graph: &NamedNode,
) -> Result<()> {
    let old: Vec<Quad> = tx
        .quads_for_pattern(
            Some(subject.as_ref().into()),
            Some(predicate.as_ref()),
            None,
            Some(graph.as_ref().into()),
        )
        .collect::<std::result::Result<_, _>>()?;
    for q in &old {
        tx.remove(q);
    }
    tx.insert(&Quad::new(
        subject.clone(),
        predicate.clone(),
        object,
        GraphName::NamedNode(graph.clone()),
    ));
    Ok(())
}

#[cfg(test)]
mod tests;
