//! Webhook subscriptions: an organisation's systems told of changes to the consignments it
//! may read, by signed HTTP requests (Standard Webhooks).
//!
//! `subscription` is the model and the checks of what callers send. Subscriptions are stored
//! in the system graph `urn:dataspace-node:system:webhooks`, one JSON literal each (with its
//! signing secrets: they must be usable to sign, so they cannot be kept as hashes; no read
//! path answers them and nothing logs them), and mirrored in memory through commit events, so
//! reads and the writes that queue deliveries see them in commit order.

pub mod batch;
pub mod deliver;
pub mod log;
pub mod queue;
pub mod send;
pub mod subscription;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use oxigraph::model::{NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde_json::{Map, Value};

use crate::consignment::cursor::{Cursors, Position};
use crate::consignment::{now, Page};
use crate::documents::source::AllowList;
use crate::error::{Error, Result};
use crate::store::{Committed, Events, ReadModel, Store};
use crate::vocab::{dsn, json_literal};

pub use deliver::Wake;
pub use queue::FullRef;

/// Reads the object a `full` delivery carries, as its subscriber's REST read shows it at the
/// revision (`None` when the subscriber can no longer read it: the delivery carries the ids
/// only). Given by the node (the reads sit in a layer above). Blocking.
pub type FullHook = Box<dyn Fn(&FullRef) -> Option<Value> + Send + Sync>;
pub use send::Settings;
pub use subscription::{Changes, Filter, Secret, Subscription, EVENTS};

/// More than this many subscriptions of one organisation is a 409: each one costs work in
/// every commit that touches a consignment the organisation reads.
pub const MAX_PER_ORGANIZATION: usize = 100;

pub fn graph() -> NamedNode {
    NamedNode::new_unchecked("urn:dataspace-node:system:webhooks")
}

fn subject(id: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("urn:dataspace-node:subscription:{id}"))
}

fn quad(s: &Subscription) -> Quad {
    Quad::new(
        subject(&s.id),
        dsn("subscription"),
        json_literal(serde_json::to_string(s).unwrap_or_default()),
        graph(),
    )
}

fn not_found(id: &str) -> Error {
    Error::NotFound(format!("no subscription {id}"))
}

pub struct Webhooks {
    store: Arc<Store>,
    allow_http: Arc<AllowList>,
    cursors: Cursors,
    subscriptions: RwLock<HashMap<String, Arc<Subscription>>>,
    settings: Settings,
    client: reqwest::Client,
    /// The last delivery sequence number given (microseconds since the epoch, or one more).
    seq: AtomicU64,
    wake_tx: tokio::sync::mpsc::UnboundedSender<Wake>,
    wake_rx: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Wake>>>,
    full: std::sync::OnceLock<FullHook>,
    /// Batches the delivery task read lately.
    recent: batch::Recent,
    /// Deliveries that succeeded and are not recorded yet: `(id, status, when, resets)`,
    /// `resets` as the attempt read it.
    delivered: Mutex<Vec<(String, u16, String, u32)>>,
    /// Deliveries waiting, as the delivery task last counted them (`/metrics`).
    pub waiting: std::sync::atomic::AtomicUsize,
    /// Attempts that were not delivered since the start (`/metrics`).
    pub failed_attempts: AtomicU64,
}

impl Webhooks {
    /// The stored subscriptions, read once; commits keep them current. Blocking.
    pub fn open(
        store: Arc<Store>,
        allow_http: &[String],
        settings: Settings,
        cursor_key: &[u8],
    ) -> Result<Self> {
        let allow_http = Arc::new(
            AllowList::parse(allow_http)
                .map_err(|e| Error::internal(format!("--webhook-allow-http: {e}")))?,
        );
        let mut subscriptions = HashMap::new();
        let p = dsn("subscription");
        for q in store.db().quads_for_pattern(
            None,
            Some(p.as_ref()),
            None,
            Some(graph().as_ref().into()),
        ) {
            if let Term::Literal(l) = q?.object {
                match serde_json::from_str::<Subscription>(l.value()) {
                    Ok(s) => {
                        subscriptions.insert(s.id.clone(), Arc::new(s));
                    }
                    Err(e) => tracing::error!(error = %e, "unreadable subscription skipped"),
                }
            }
        }
        let (wake_tx, wake_rx) = tokio::sync::mpsc::unbounded_channel();
        Ok(Self {
            client: send::client(allow_http.clone(), settings.timeout),
            store,
            allow_http,
            cursors: Cursors::new(cursor_key),
            subscriptions: RwLock::new(subscriptions),
            settings,
            seq: AtomicU64::new(0),
            wake_tx,
            wake_rx: Mutex::new(Some(wake_rx)),
            full: std::sync::OnceLock::new(),
            recent: batch::Recent::default(),
            delivered: Mutex::default(),
            waiting: Default::default(),
            failed_attempts: AtomicU64::new(0),
        })
    }

    /// How `full` deliveries read their object (once, at start-up).
    pub fn read_full_with(&self, hook: FullHook) {
        let _ = self.full.set(hook);
    }

    /// A sequence number above every one given before, across restarts too (the clock's
    /// microseconds, or one more than the last): deliveries sort into commit order by it.
    fn next_seq(&self) -> u64 {
        let now = chrono::Utc::now().timestamp_micros().max(0) as u64;
        let previous = self
            .seq
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(now.max(last + 1))
            })
            .unwrap_or_else(|last| last);
        now.max(previous + 1)
    }

    /// The subscriptions as of the last commit (the writes' journal reads them under the
    /// writer lock, so in commit order).
    /// The subscriptions `keep` picks, cloned (the others are not: every commit asks for the
    /// enabled ones).
    pub fn matching(&self, keep: impl Fn(&Subscription) -> bool) -> Vec<Arc<Subscription>> {
        let map = self.subscriptions.read().unwrap_or_else(|p| p.into_inner());
        map.values().filter(|s| keep(s)).cloned().collect()
    }

    pub fn subscription(&self, id: &str) -> Option<Arc<Subscription>> {
        let map = self.subscriptions.read().unwrap_or_else(|p| p.into_inner());
        map.get(id).cloned()
    }

    /// Organisation `org`'s subscription `id`; another's is as absent as a missing one.
    pub fn owned(&self, org: &str, id: &str) -> Result<Arc<Subscription>> {
        self.subscription(id)
            .filter(|s| s.organization == org)
            .ok_or_else(|| not_found(id))
    }

    /// `POST /subscriptions`: the stored subscription, with its secret (the only answer that
    /// carries it). Blocking.
    pub fn create(&self, org: &str, body: &Map<String, Value>) -> Result<Value> {
        let changes = Changes::parse(body, true, &self.allow_http)?;
        let secret = Secret::generate();
        let mut s = Subscription {
            id: uuid::Uuid::new_v4().to_string(),
            organization: org.to_owned(),
            url: changes.url.unwrap_or_default(),
            events: changes.events.unwrap_or_default(),
            filter: changes.filter.unwrap_or_default(),
            full: changes.full.unwrap_or(false),
            description: changes.description.flatten(),
            state: "enabled".into(),
            created: now(),
            updated: None,
            last_error: None,
            disabled_at: None,
            failures: 0,
            secrets: vec![secret.clone()],
        };
        self.store.commit(|tx, events| {
            // Counted under the writer lock: concurrent creations cannot pass the limit.
            let held = {
                let map = self.subscriptions.read().unwrap_or_else(|p| p.into_inner());
                map.values().filter(|h| h.organization == org).count()
            };
            if held >= MAX_PER_ORGANIZATION {
                return Err(Error::Conflict(format!(
                    "an organisation may hold at most {MAX_PER_ORGANIZATION} subscriptions"
                )));
            }
            // A stamp, not the clock: strictly later than every earlier creation, so the list's
            // newest-first order is the order of creation even within a millisecond.
            s.created = crate::consignment::format_millis(self.store.stamp());
            put(tx, None, &s, events);
            Ok(())
        })?;
        let mut out = s.public();
        out["secret"] = Value::String(secret.secret);
        Ok(out)
    }

    /// `GET /subscriptions`: the organisation's, newest first.
    pub fn page(&self, org: &str, limit: usize, cursor: Option<&str>) -> Result<Page> {
        let before = match cursor {
            Some(c) => {
                let p = self.cursors.decode(c, "subscriptions", org, "own")?;
                Some((p.at, p.id))
            }
            None => None,
        };
        let mut mine: Vec<Arc<Subscription>> = self
            .matching(|s| s.organization == org)
            .into_iter()
            .filter(|s| {
                before
                    .as_ref()
                    .is_none_or(|b| (&s.created, &s.id) < (&b.0, &b.1))
            })
            .collect();
        mine.sort_by(|a, b| (&b.created, &b.id).cmp(&(&a.created, &a.id)));
        let more = mine.len() > limit;
        mine.truncate(limit);
        let cursor = match (more, mine.last()) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list: "subscriptions".into(),
                org: org.to_owned(),
                scope: "own".into(),
                at: last.created.clone(),
                id: last.id.clone(),
            })),
            _ => None,
        };
        Ok(Page::new(mine.iter().map(|s| s.public()).collect(), cursor))
    }

    /// `PATCH /subscriptions/{id}`. Enabling again starts the failure count over. Blocking.
    pub fn change(&self, org: &str, id: &str, body: &Map<String, Value>) -> Result<Value> {
        let changes = Changes::parse(body, false, &self.allow_http)?;
        self.update(org, id, |s| {
            if let Some(url) = changes.url {
                s.url = url;
            }
            if let Some(events) = changes.events {
                s.events = events;
            }
            if let Some(filter) = changes.filter {
                s.filter = filter;
            }
            if let Some(full) = changes.full {
                s.full = full;
            }
            if let Some(description) = changes.description {
                s.description = description;
            }
            match changes.state.as_deref() {
                Some("enabled") if !s.enabled() => {
                    s.state = "enabled".into();
                    s.failures = 0;
                    s.disabled_at = None;
                }
                Some("disabled") if s.enabled() => {
                    s.state = "disabled".into();
                    s.disabled_at = Some(now());
                }
                _ => {}
            }
        })
        .map(|s| s.public())
    }

    /// `POST /subscriptions/{id}/rotate-secret`: a new secret; the one it replaces keeps
    /// signing for a day beside it, older ones stop. Blocking.
    pub fn rotate(&self, org: &str, id: &str) -> Result<Value> {
        let secret = Secret::generate();
        let fresh = secret.clone();
        let s = self.update(org, id, move |s| {
            let until = chrono::Utc::now().timestamp_millis() + subscription::ROTATION_OVERLAP_MS;
            let previous = s.secrets.iter().find(|k| k.until.is_none()).cloned();
            s.secrets = vec![fresh];
            if let Some(mut previous) = previous {
                previous.until = Some(until);
                s.secrets.push(previous);
            }
        })?;
        let mut out = s.public();
        out["secret"] = Value::String(secret.secret);
        Ok(out)
    }

    /// `DELETE /subscriptions/{id}`. Blocking.
    pub fn delete(&self, org: &str, id: &str) -> Result<()> {
        self.store.commit(|tx, events| {
            let (old, _) = stored(tx, id)?
                .filter(|(_, s)| s.organization == org)
                .ok_or_else(|| not_found(id))?;
            tx.remove(&old);
            // Its deliveries go with it: nothing is sent for it afterwards.
            for (old, b) in batch::told_to(tx, org)? {
                batch::retain(tx, &old, b, |p| p.subscription != id);
            }
            events.push(Committed::SubscriptionRemoved { id: id.to_owned() });
            Ok(())
        })?;
        Ok(())
    }

    /// Reads, changes and stores organisation `org`'s subscription `id` in one write.
    fn update(
        &self,
        org: &str,
        id: &str,
        change: impl FnOnce(&mut Subscription),
    ) -> Result<Subscription> {
        let (s, _) = self.store.commit(|tx, events| {
            let (old, mut s) = stored(tx, id)?
                .filter(|(_, s)| s.organization == org)
                .ok_or_else(|| not_found(id))?;
            change(&mut s);
            s.updated = Some(now());
            put(tx, Some(&old), &s, events);
            Ok(s)
        })?;
        Ok(s)
    }
}

/// The stored quad and subscription `id`, read in `tx`.
fn stored(tx: &Transaction<'_>, id: &str) -> Result<Option<(Quad, Subscription)>> {
    let (s, p) = (subject(id), dsn("subscription"));
    for q in tx.quads_for_pattern(
        Some(s.as_ref().into()),
        Some(p.as_ref()),
        None,
        Some(graph().as_ref().into()),
    ) {
        let q = q?;
        if let Term::Literal(l) = &q.object {
            let sub = serde_json::from_str::<Subscription>(l.value())
                .map_err(|e| Error::internal(format!("unreadable subscription {id}: {e}")))?;
            return Ok(Some((q, sub)));
        }
    }
    Ok(None)
}

/// Stores `s` in `tx` in place of `old`, and tells the in-memory copy once committed.
fn put(tx: &mut Transaction<'_>, old: Option<&Quad>, s: &Subscription, events: &mut Events) {
    if let Some(old) = old {
        tx.remove(old);
    }
    tx.insert(&quad(s));
    match serde_json::to_value(s) {
        Ok(state) => events.push(Committed::SubscriptionStored { state }),
        Err(e) => tracing::error!(error = %e, "a stored subscription could not be handed on"),
    }
}

impl ReadModel for Webhooks {
    fn apply(&self, event: &Committed) {
        let lock = || {
            self.subscriptions
                .write()
                .unwrap_or_else(|p| p.into_inner())
        };
        match event {
            Committed::SubscriptionStored { state } => {
                match serde_json::from_value::<Subscription>(state.clone()) {
                    Ok(s) => {
                        let again = s.enabled().then(|| s.id.clone());
                        lock().insert(s.id.clone(), Arc::new(s));
                        // Enabled again: what waited is sent. The task is gone only at shutdown.
                        if let Some(subscription) = again {
                            let _ = self.wake_tx.send(Wake::Again { subscription });
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "a subscription could not be read back"),
                }
            }
            Committed::SubscriptionRemoved { id } => {
                lock().remove(id);
            }
            Committed::DeliveriesQueued { queued } => {
                let _ = self.wake_tx.send(Wake::Queued(queued.clone()));
            }
            _ => {}
        }
    }
}
