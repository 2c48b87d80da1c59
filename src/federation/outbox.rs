//! Notices to other nodes, written in the same transaction as the change that causes them (a
//! share by routing, a contribution to a consignment provided elsewhere) and delivered after
//! the commit by one background task, in order per receiving organisation: while a receiver is
//! down or failing, its next notice is tried again with backoff and the others wait behind it
//! (one attempt per backoff, not one per notice: a partner down for long would otherwise be sent
//! a request, and the log a warning, for each of thousands of notices every minute). Only the
//! notices' ids wait in memory; each is read from the store when it is sent, and picked up again
//! from there after a restart, in commit order (by the time each was queued). Delivered notices
//! are removed.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::store::{Committed, Events, ReadModel, Store};
use crate::vocab::{dsn, json_literal};

/// First retry after this; doubled per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

fn graph() -> GraphName {
    GraphName::NamedNode(NamedNode::new_unchecked("urn:dataspace-node:system:outbox"))
}

/// One notice: an AS2 activity `body` from this node's organisation `from` to organisation
/// `to` on another node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Notice {
    pub id: String,
    pub from: String,
    pub to: String,
    pub body: Value,
}

impl Notice {
    /// For an `Announce`, the consignment it announces (`dsn:announces`): what a withdrawal
    /// finds it by without reading the whole outbox under the writer lock.
    fn announces(&self) -> Option<Quad> {
        if self.body["type"] != "Announce" {
            return None;
        }
        let aig = self.body.pointer("/object/consignment/aigId")?.as_str()?;
        let hex = aig.strip_prefix("aig:")?;
        Some(Quad::new(
            NamedNode::new_unchecked(&self.id),
            dsn("announces"),
            crate::store::graphs::consignment(hex),
            graph(),
        ))
    }

    fn quad(&self) -> Quad {
        Quad::new(
            NamedNode::new_unchecked(&self.id),
            dsn("outboxNotice"),
            json_literal(serde_json::to_string(self).unwrap_or_default()),
            graph(),
        )
    }
}

/// What a delivery attempt found.
pub enum Delivery {
    Done,
    /// Worth trying again later (receiver down, 5xx, 429, timeout).
    Retry(String),
    /// The receiver refused it for good (4xx): retrying cannot help.
    Refused(String),
}

pub struct Outbox {
    tx: mpsc::UnboundedSender<Notice>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Notice>>>,
    /// Notices waiting for delivery, as the delivery task last counted them (`/metrics`).
    pub waiting: std::sync::atomic::AtomicUsize,
    /// Attempts that failed (to be tried again, or refused for good) since the start.
    pub failures: std::sync::atomic::AtomicU64,
}

impl Default for Outbox {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            tx,
            rx: Mutex::new(Some(rx)),
            waiting: Default::default(),
            failures: Default::default(),
        }
    }
}

impl Outbox {
    /// Stores `notice` in the write's transaction; once committed, the event hands it to the
    /// delivery task (see the [`ReadModel`] impl).
    pub fn queue(tx: &mut Transaction<'_>, notice: &Notice, events: &mut Events) {
        tx.insert(&notice.quad());
        if let Some(q) = notice.announces() {
            tx.insert(&q);
        }
        match serde_json::to_value(notice) {
            Ok(notice) => events.push(Committed::NoticeQueued { notice }),
            // Still stored: delivered after the next start.
            Err(e) => tracing::error!(error = %e, "a queued notice could not be handed on"),
        }
    }

    /// The receiver and id of every undelivered notice in the store, in the order they were
    /// committed. Blocking. The store returns them in the order of their ids' hashes; each
    /// notice's `published` is the time of the inbox write that queued it — strictly increasing
    /// from one write to the next (`Store::stamp`) — so sorting by it gives each receiver its
    /// notices in commit order again (routing notifies an organisation once per write).
    fn pending(store: &Store) -> Result<Vec<(String, String)>> {
        let p = dsn("outboxNotice");
        let mut out = Vec::new();
        for q in store
            .db()
            .quads_for_pattern(None, Some(p.as_ref()), None, Some(graph().as_ref()))
        {
            if let Term::Literal(l) = q?.object {
                match serde_json::from_str::<Notice>(l.value()) {
                    Ok(n) => {
                        let published = n.body["published"]
                            .as_str()
                            .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok());
                        out.push((published, n.to, n.id));
                    }
                    Err(e) => tracing::error!(error = %e, "unreadable outbox notice skipped"),
                }
            }
        }
        out.sort();
        Ok(out.into_iter().map(|(_, to, id)| (to, id)).collect())
    }

    /// The stored notice `id`, unless it is gone. Blocking.
    fn stored(store: &Store, id: &str) -> Result<Option<Notice>> {
        let (node, p) = (NamedNode::new_unchecked(id), dsn("outboxNotice"));
        for q in store.db().quads_for_pattern(
            Some(node.as_ref().into()),
            Some(p.as_ref()),
            None,
            Some(graph().as_ref()),
        ) {
            if let Term::Literal(l) = q?.object {
                match serde_json::from_str::<Notice>(l.value()) {
                    Ok(n) => return Ok(Some(n)),
                    Err(e) => tracing::error!(error = %e, "unreadable outbox notice skipped"),
                }
            }
        }
        Ok(None)
    }

    /// Removes, in `tx`, the undelivered `Announce`s of each (consignment record, receiving
    /// organisation) pair: a share withdrawn before its notice left must not reach the
    /// receiver. The delivery task finds them gone when their turn comes (see
    /// [`Self::stored`]). Found by their `dsn:announces`, which [`Self::queue`] writes.
    pub fn drop_announces(
        tx: &mut Transaction<'_>,
        pairs: &[(NamedNode, String)],
    ) -> Result<usize> {
        let (announces, notice) = (dsn("announces"), dsn("outboxNotice"));
        let mut gone = Vec::new();
        for (record, org) in pairs {
            for q in tx.quads_for_pattern(
                None,
                Some(announces.as_ref()),
                Some(record.as_ref().into()),
                Some(graph().as_ref()),
            ) {
                let q = q?;
                for stored in tx.quads_for_pattern(
                    Some(q.subject.as_ref()),
                    Some(notice.as_ref()),
                    None,
                    Some(graph().as_ref()),
                ) {
                    let stored = stored?;
                    let Term::Literal(l) = &stored.object else {
                        continue;
                    };
                    if serde_json::from_str::<Notice>(l.value()).is_ok_and(|n| n.to == *org) {
                        gone.push(stored);
                        gone.push(q.clone());
                    }
                }
            }
        }
        for q in &gone {
            tx.remove(q);
        }
        Ok(gone.len() / 2)
    }

    fn remove(store: &Store, notice: &Notice) -> Result<()> {
        store.write(|tx| {
            tx.remove(&notice.quad());
            if let Some(q) = notice.announces() {
                tx.remove(&q);
            }
            Ok(())
        })
    }

    /// Delivers notices until the node shuts down: the stored ones first, then each one
    /// committed, with `send` doing one attempt.
    pub async fn deliver<F, Fut>(
        &self,
        store: Arc<Store>,
        send: F,
        mut closing: tokio::sync::watch::Receiver<bool>,
    ) -> Result<()>
    where
        F: Fn(Notice) -> Fut,
        Fut: std::future::Future<Output = Delivery>,
    {
        let Some(mut rx) = self.rx.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Err(Error::internal("the outbox is already being delivered"));
        };
        let loading = {
            let store = store.clone();
            tokio::task::spawn_blocking(move || Self::pending(&store))
        };
        // Reading back a large outbox takes a while; a shutdown meanwhile does not wait for it.
        let loaded = tokio::select! {
            loaded = loading => loaded??,
            _ = closing.changed() => return Ok(()),
        };
        if !loaded.is_empty() {
            tracing::info!(
                notices = loaded.len(),
                "delivering notices left from before"
            );
        }
        let mut waiting = Waiting::default();
        let now = Instant::now();
        for (to, id) in loaded {
            waiting.push(now, to, id);
        }
        loop {
            // Checked between two sends: with many notices due (a partner down for long),
            // the loop would otherwise not see the shutdown until it had tried them all.
            if *closing.borrow() {
                return Ok(());
            }
            self.waiting.store(waiting.len(), Ordering::Relaxed);
            let now = Instant::now();
            if let Some((to, id)) = waiting.take_due(now) {
                self.attempt(&store, &send, &mut waiting, to, id).await?;
                continue;
            }
            let sleep = waiting.next_at().map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(now)
            });
            tokio::select! {
                received = rx.recv() => match received {
                    Some(n) => waiting.push(Instant::now(), n.to, n.id),
                    None => return Ok(()),
                },
                _ = tokio::time::sleep(sleep) => {}
                _ = closing.changed() => return Ok(()),
            }
        }
    }

    /// One attempt at notice `id` to `to`, its outcome applied: removed when delivered or
    /// refused, tried again later otherwise.
    async fn attempt<F, Fut>(
        &self,
        store: &Arc<Store>,
        send: &F,
        waiting: &mut Waiting,
        to: String,
        id: String,
    ) -> Result<()>
    where
        F: Fn(Notice) -> Fut,
        Fut: std::future::Future<Output = Delivery>,
    {
        let reading = store.clone();
        let notice = tokio::task::spawn_blocking(move || Self::stored(&reading, &id)).await??;
        let Some(notice) = notice else {
            waiting.done(Instant::now(), &to);
            return Ok(());
        };
        match send(notice.clone()).await {
            Delivery::Done => {
                let store = store.clone();
                let done = notice.clone();
                tokio::task::spawn_blocking(move || Self::remove(&store, &done)).await??;
                tracing::info!(notice = notice.id, to = notice.to, "notice delivered");
                waiting.done(Instant::now(), &to);
            }
            Delivery::Refused(why) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    notice = notice.id,
                    to = notice.to,
                    why,
                    "notice refused by the receiving node; dropped"
                );
                let store = store.clone();
                tokio::task::spawn_blocking(move || Self::remove(&store, &notice)).await??;
                waiting.done(Instant::now(), &to);
            }
            Delivery::Retry(why) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                let (backoff, behind) = waiting.retry(Instant::now(), &to);
                tracing::warn!(notice = notice.id, to = notice.to, why, retry_in = ?backoff, waiting_behind = behind, "notice not delivered");
            }
        }
        Ok(())
    }
}

/// The notices of one receiving organisation, oldest first, and when to try the first again.
struct Queue {
    ids: VecDeque<String>,
    backoff: Duration,
    /// Whether the receiver has a due time in [`Waiting::by_due`] or an attempt under way: a
    /// notice queued meanwhile must not give it a second due time.
    busy: bool,
}

/// Notices waiting, per receiving organisation. Receivers are due in order of their next
/// attempt, the earliest found in O(log n), not by a walk over all of them (a node whose
/// partner was down for long holds tens of thousands of notices).
#[derive(Default)]
struct Waiting {
    receivers: HashMap<String, Queue>,
    by_due: BTreeMap<(Instant, u64), String>,
    /// Ties on one instant keep their arrival order.
    seq: u64,
}

impl Waiting {
    /// Queues notice `id` to `to` behind the receiver's others; a receiver with none waiting
    /// is due at `now`.
    fn push(&mut self, now: Instant, to: String, id: String) {
        let queue = self.receivers.entry(to.clone()).or_insert_with(|| Queue {
            ids: VecDeque::new(),
            backoff: FIRST_BACKOFF,
            busy: false,
        });
        queue.ids.push_back(id);
        if !queue.busy {
            queue.busy = true;
            self.schedule(now, to);
        }
    }

    fn schedule(&mut self, at: Instant, to: String) {
        self.seq += 1;
        self.by_due.insert((at, self.seq), to);
    }

    /// The receiver due earliest by `now` and its oldest notice, which stays queued until
    /// [`Waiting::done`] or [`Waiting::retry`] says how the attempt went.
    fn take_due(&mut self, now: Instant) -> Option<(String, String)> {
        let (&(at, _), _) = self.by_due.first_key_value()?;
        if at > now {
            return None;
        }
        let (_, to) = self.by_due.pop_first()?;
        let id = self.receivers.get(&to)?.ids.front()?.clone();
        Some((to, id))
    }

    /// The receiver's oldest notice is settled: the next one, if any, is due at `now`.
    /// Notices waiting, all receivers together.
    fn len(&self) -> usize {
        self.receivers.values().map(|q| q.ids.len()).sum()
    }

    fn done(&mut self, now: Instant, to: &str) {
        let Some(queue) = self.receivers.get_mut(to) else {
            return;
        };
        queue.ids.pop_front();
        queue.backoff = FIRST_BACKOFF;
        if queue.ids.is_empty() {
            self.receivers.remove(to);
        } else {
            self.schedule(now, to.to_owned());
        }
    }

    /// The receiver's oldest notice failed: it is tried again after the backoff (doubled for
    /// the time after), the others behind it. Returns the wait and how many are behind.
    fn retry(&mut self, now: Instant, to: &str) -> (Duration, usize) {
        let Some(queue) = self.receivers.get_mut(to) else {
            return (Duration::ZERO, 0);
        };
        let wait = queue.backoff;
        queue.backoff = (wait * 2).min(MAX_BACKOFF);
        let behind = queue.ids.len() - 1;
        self.schedule(now + wait, to.to_owned());
        (wait, behind)
    }

    fn next_at(&self) -> Option<Instant> {
        self.by_due.first_key_value().map(|(&(at, _), _)| at)
    }
}

/// Notices queued by a committed write go to the delivery task at once.
impl ReadModel for Outbox {
    fn apply(&self, event: &Committed) {
        if let Committed::NoticeQueued { notice } = event {
            match Notice::deserialize(notice) {
                // The receiver is gone only when the node shuts down; the notice stays stored.
                Ok(n) => {
                    let _ = self.tx.send(n);
                }
                Err(e) => tracing::error!(error = %e, "a queued notice could not be read back"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(w: &mut Waiting, now: Instant) -> Vec<(String, String)> {
        std::iter::from_fn(|| {
            let (to, id) = w.take_due(now)?;
            w.done(now, &to);
            Some((to, id))
        })
        .collect()
    }

    fn pair(to: &str, id: &str) -> (String, String) {
        (to.to_owned(), id.to_owned())
    }

    /// A withdrawal drops the receiver's undelivered Announce, found by the `dsn:announces`
    /// queueing wrote; another receiver's stays.
    #[test]
    fn a_withdrawal_drops_the_receivers_announce_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let hex = "0123456789abcdef0123456789abcdef";
        let notice = |id: &str, to: &str| Notice {
            id: id.into(),
            from: "did:web:a.example:org:p".into(),
            to: to.into(),
            body: serde_json::json!({"type": "Announce",
                "object": {"consignment": {"aigId": format!("aig:{hex}")}}}),
        };
        let (gone, kept) = (
            notice("urn:uuid:n1", "did:web:b.example:org:x"),
            notice("urn:uuid:n2", "did:web:b.example:org:y"),
        );
        store
            .write(|tx| {
                let mut events = Events::default();
                Outbox::queue(tx, &gone, &mut events);
                Outbox::queue(tx, &kept, &mut events);
                Ok(())
            })
            .unwrap();
        let record = crate::store::graphs::consignment(hex);
        let dropped = store
            .write(|tx| Outbox::drop_announces(tx, &[(record, gone.to.clone())]))
            .unwrap();
        assert_eq!(dropped, 1);
        assert!(Outbox::stored(&store, &gone.id).unwrap().is_none());
        assert!(Outbox::stored(&store, &kept.id).unwrap().is_some());
    }

    #[test]
    fn each_receiver_gets_its_notices_in_order() {
        let mut w = Waiting::default();
        let t0 = Instant::now();
        w.push(t0, "b".into(), "b1".into());
        w.push(t0, "a".into(), "a1".into());
        w.push(t0, "b".into(), "b2".into());
        w.push(t0, "a".into(), "a2".into());
        assert_eq!(
            drain(&mut w, t0),
            vec![
                pair("b", "b1"),
                pair("a", "a1"),
                pair("b", "b2"),
                pair("a", "a2")
            ]
        );
        assert_eq!(w.next_at(), None);
        assert!(w.receivers.is_empty());
    }

    #[test]
    fn a_failing_receiver_waits_with_backoff_and_holds_back_only_its_own() {
        let mut w = Waiting::default();
        let t0 = Instant::now();
        for i in 0..1000 {
            w.push(t0, "down".into(), format!("d{i}"));
        }
        w.push(t0, "up".into(), "u1".into());
        // One attempt for the receiver that is down, however many notices it has, and however
        // many are queued while the attempt is under way.
        assert_eq!(w.take_due(t0), Some(pair("down", "d0")));
        w.push(t0, "down".into(), "d1000".into());
        assert_eq!(w.retry(t0, "down"), (FIRST_BACKOFF, 1000));
        assert_eq!(drain(&mut w, t0), vec![pair("up", "u1")]);
        assert_eq!(w.next_at(), Some(t0 + FIRST_BACKOFF));
        assert_eq!(w.take_due(t0 + FIRST_BACKOFF / 2), None);
        // The backoff doubles up to its cap, and the same notice comes back first.
        let mut at = t0 + FIRST_BACKOFF;
        let mut expected = FIRST_BACKOFF * 2;
        for _ in 0..12 {
            assert_eq!(w.take_due(at), Some(pair("down", "d0")));
            let (wait, _) = w.retry(at, "down");
            assert_eq!(wait, expected);
            at += wait;
            expected = (expected * 2).min(MAX_BACKOFF);
        }
        assert_eq!(expected, MAX_BACKOFF);
        // Back up: the rest follow in order, and the backoff starts over.
        w.push(at, "up".into(), "u2".into());
        let delivered = drain(&mut w, at);
        assert_eq!(delivered.len(), 1002);
        assert_eq!(delivered[0], pair("down", "d0"));
        assert_eq!(delivered[1], pair("up", "u2"));
        let down: Vec<&String> = delivered
            .iter()
            .filter(|(to, _)| to == "down")
            .map(|(_, id)| id)
            .collect();
        assert_eq!(
            down,
            (0..=1000)
                .map(|i| format!("d{i}"))
                .collect::<Vec<_>>()
                .iter()
                .collect::<Vec<_>>()
        );
        assert_eq!(w.next_at(), None);
        w.push(at, "down".into(), "d1001".into());
        assert_eq!(w.take_due(at), Some(pair("down", "d1001")));
        assert_eq!(w.retry(at, "down"), (FIRST_BACKOFF, 0));
    }
}
