//! Notices to other nodes, written in the same transaction as the change that causes them (a
//! share by routing, a contribution to a consignment provided elsewhere) and delivered after
//! the commit by one background task: retried with backoff while the receiver is down or
//! failing, and picked up again from the store after a restart. Delivered notices are removed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::store::{Committed, Events, ReadModel, Store};
use crate::vocab::{dsn, RDF_JSON};

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
    fn quad(&self) -> Quad {
        Quad::new(
            NamedNode::new_unchecked(&self.id),
            dsn("outboxNotice"),
            Literal::new_typed_literal(
                serde_json::to_string(self).unwrap_or_default(),
                NamedNode::new_unchecked(RDF_JSON),
            ),
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
}

impl Default for Outbox {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            tx,
            rx: Mutex::new(Some(rx)),
        }
    }
}

impl Outbox {
    /// Stores `notice` in the write's transaction; once committed, the event hands it to the
    /// delivery task (see the [`ReadModel`] impl).
    pub fn queue(tx: &mut Transaction<'_>, notice: &Notice, events: &mut Events) {
        tx.insert(&notice.quad());
        match serde_json::to_value(notice) {
            Ok(notice) => events.push(Committed::NoticeQueued { notice }),
            // Still stored: delivered after the next start.
            Err(e) => tracing::error!(error = %e, "a queued notice could not be handed on"),
        }
    }

    /// Every undelivered notice in the store. Blocking.
    fn pending(store: &Store) -> Result<Vec<Notice>> {
        let p = dsn("outboxNotice");
        let mut out = Vec::new();
        for q in store
            .db()
            .quads_for_pattern(None, Some(p.as_ref()), None, Some(graph().as_ref()))
        {
            if let Term::Literal(l) = q?.object {
                match serde_json::from_str::<Notice>(l.value()) {
                    Ok(n) => out.push(n),
                    Err(e) => tracing::error!(error = %e, "unreadable outbox notice skipped"),
                }
            }
        }
        Ok(out)
    }

    fn remove(store: &Store, notice: &Notice) -> Result<()> {
        store.write(|tx| {
            tx.remove(&notice.quad());
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
        for n in loaded {
            waiting.push(Instant::now(), FIRST_BACKOFF, n);
        }
        loop {
            // Checked between two sends: with many notices due (a partner down for long),
            // the loop would otherwise not see the shutdown until it had tried them all.
            if *closing.borrow() {
                return Ok(());
            }
            let now = Instant::now();
            if let Some((backoff, notice)) = waiting.take_due(now) {
                match send(notice.clone()).await {
                    Delivery::Done => {
                        let store = store.clone();
                        let done = notice.clone();
                        tokio::task::spawn_blocking(move || Self::remove(&store, &done)).await??;
                        tracing::info!(notice = notice.id, to = notice.to, "notice delivered");
                    }
                    Delivery::Refused(why) => {
                        tracing::error!(
                            notice = notice.id,
                            to = notice.to,
                            why,
                            "notice refused by the receiving node; dropped"
                        );
                        let store = store.clone();
                        tokio::task::spawn_blocking(move || Self::remove(&store, &notice))
                            .await??;
                    }
                    Delivery::Retry(why) => {
                        tracing::warn!(notice = notice.id, to = notice.to, why, retry_in = ?backoff, "notice not delivered");
                        let next = (backoff * 2).min(MAX_BACKOFF);
                        waiting.push(Instant::now() + backoff, next, notice);
                    }
                }
                continue;
            }
            let sleep = waiting.next_at().map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(now)
            });
            tokio::select! {
                received = rx.recv() => match received {
                    Some(n) => waiting.push(Instant::now(), FIRST_BACKOFF, n),
                    None => return Ok(()),
                },
                _ = tokio::time::sleep(sleep) => {}
                _ = closing.changed() => return Ok(()),
            }
        }
    }
}

/// Notices waiting for their next attempt, by when it is due: the earliest in O(log n), not by
/// a walk over all of them (a node whose partner was down for long holds tens of thousands).
#[derive(Default)]
struct Waiting {
    by_due: BTreeMap<(Instant, u64), (Duration, Notice)>,
    /// Ties on one instant keep their arrival order.
    seq: u64,
}

impl Waiting {
    fn push(&mut self, at: Instant, backoff: Duration, notice: Notice) {
        self.seq += 1;
        self.by_due.insert((at, self.seq), (backoff, notice));
    }

    /// The earliest notice due by `now`, with its backoff.
    fn take_due(&mut self, now: Instant) -> Option<(Duration, Notice)> {
        let (&(at, _), _) = self.by_due.first_key_value()?;
        if at > now {
            return None;
        }
        self.by_due.pop_first().map(|(_, v)| v)
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

    fn notice(id: &str) -> Notice {
        Notice {
            id: id.into(),
            from: String::new(),
            to: String::new(),
            body: Value::Null,
        }
    }

    #[test]
    fn the_earliest_due_notice_comes_first_and_nothing_before_its_time() {
        let mut w = Waiting::default();
        let t0 = Instant::now();
        let s = Duration::from_secs;
        w.push(t0 + s(30), s(1), notice("late"));
        w.push(t0, s(2), notice("a"));
        w.push(t0, s(3), notice("b"));
        w.push(t0 + s(10), s(4), notice("mid"));
        assert_eq!(w.next_at(), Some(t0));
        let ids = |w: &mut Waiting, now| {
            std::iter::from_fn(|| w.take_due(now))
                .map(|(_, n)| n.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&mut w, t0), vec!["a", "b"], "ties in arrival order");
        assert_eq!(w.next_at(), Some(t0 + s(10)));
        assert_eq!(ids(&mut w, t0 + s(9)), Vec::<String>::new());
        assert_eq!(ids(&mut w, t0 + s(60)), vec!["mid", "late"]);
        assert_eq!(w.next_at(), None);
    }
}
