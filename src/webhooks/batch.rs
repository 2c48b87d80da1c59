//! The deliveries one change queues, kept as one record until each has a state of its own.
//!
//! A change read by a hundred subscriptions queues a hundred deliveries in its own
//! transaction. Written one record (two quads) each, they cost a Create twice what its
//! description does; so the transaction writes one batch instead — the body once, and who is
//! to receive it. A delivery gets a record of its own (a [`Delivery`], indexed by its
//! subscription) the first time anything is written of it: its attempt's outcome, a retry, a
//! replay, a `full` body. That happens on the delivery task, off the request path and in
//! batches, and leaves the batch in the same write: a delivery is in exactly one of the two
//! places, and a batch with nobody left in it goes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use oxigraph::model::{Literal, NamedNode, Quad, Term};
use oxigraph::store::{StorageError, Transaction};
use serde::{Deserialize, Serialize};

use super::queue::{self, Delivery, FullRef};
use crate::error::Result;
use crate::vocab::{dsn, RDF_JSON};

fn node(id: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("urn:dataspace-node:delivery-batch:{id}"))
}

/// One change's deliveries not yet written on their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// 32 hex digits; a delivery's `webhook-id` is `msg_<id>_<n>`.
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub created: String,
    pub seq: u64,
    pub body: String,
    pub to: Vec<Pending>,
}

/// A delivery waiting in its batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub subscription: String,
    /// Its place in the batch as queued (the others may have left since).
    pub n: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<FullRef>,
}

impl Batch {
    pub fn delivery_id(&self, n: usize) -> String {
        format!("msg_{}_{n}", self.id)
    }

    pub fn quad(&self) -> Quad {
        Quad::new(
            node(&self.id),
            dsn("deliveryBatch"),
            Literal::new_typed_literal(
                serde_json::to_string(self).unwrap_or_default(),
                NamedNode::new_unchecked(RDF_JSON),
            ),
            queue::graph(),
        )
    }

    /// The delivery `p` is, as queued: not attempted yet.
    pub fn delivery(&self, p: &Pending) -> Delivery {
        Delivery {
            id: self.delivery_id(p.n),
            subscription: p.subscription.clone(),
            kind: self.kind.clone(),
            created: self.created.clone(),
            seq: self.seq,
            body: self.body.clone(),
            attempts: 0,
            last_status: None,
            last_error: None,
            next_attempt: None,
            delivered_at: None,
            resets: 0,
            full: p.full.clone(),
        }
    }

    /// Every delivery still waiting in it.
    pub fn deliveries(&self) -> impl Iterator<Item = Delivery> + '_ {
        self.to.iter().map(|p| self.delivery(p))
    }
}

/// The batch delivery `id` was queued in, if it was queued in one.
fn batch_of(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("msg_")?;
    let (batch, n) = rest.split_once('_')?;
    n.parse::<usize>().ok().map(|_| batch)
}

fn parse(
    quads: impl Iterator<Item = std::result::Result<Quad, StorageError>>,
) -> Result<Vec<(Quad, Batch)>> {
    let mut out = Vec::new();
    for q in quads {
        let q = q?;
        if let Term::Literal(l) = &q.object {
            match serde_json::from_str::<Batch>(l.value()) {
                Ok(b) => out.push((q, b)),
                Err(e) => tracing::error!(error = %e, "an unreadable delivery batch skipped"),
            }
        }
    }
    Ok(out)
}

fn batch_in(tx: &Transaction<'_>, id: &str) -> Result<Option<(Quad, Batch)>> {
    let (n, p, g) = (node(id), dsn("deliveryBatch"), queue::graph());
    let found = parse(tx.quads_for_pattern(
        Some(n.as_ref().into()),
        Some(p.as_ref()),
        None,
        Some(g.as_ref().into()),
    ))?;
    Ok(found.into_iter().next())
}

/// Every batch with deliveries waiting, as the store's latest commit has them.
pub fn all(db: &oxigraph::store::Store) -> Result<Vec<Batch>> {
    let (p, g) = (dsn("deliveryBatch"), queue::graph());
    let found = parse(db.quads_for_pattern(None, Some(p.as_ref()), None, Some(g.as_ref().into())))?;
    Ok(found.into_iter().map(|(_, b)| b).collect())
}

/// Every batch with deliveries waiting, as the transaction has them, with their quads.
pub fn all_in(tx: &Transaction<'_>) -> Result<Vec<(Quad, Batch)>> {
    let (p, g) = (dsn("deliveryBatch"), queue::graph());
    parse(tx.quads_for_pattern(None, Some(p.as_ref()), None, Some(g.as_ref().into())))
}

fn waiting_in(batch: &Batch, id: &str) -> Option<Delivery> {
    batch
        .to
        .iter()
        .find(|p| batch.delivery_id(p.n) == id)
        .map(|p| batch.delivery(p))
}

/// Delivery `id` as the transaction has it: its own record, or waiting in its batch.
pub fn found_in(tx: &Transaction<'_>, id: &str) -> Result<Option<Delivery>> {
    if let Some((_, d)) = queue::stored_in(tx, id)? {
        return Ok(Some(d));
    }
    let Some(batch) = batch_of(id) else {
        return Ok(None);
    };
    Ok(batch_in(tx, batch)?.and_then(|(_, b)| waiting_in(&b, id)))
}

/// Batches the delivery task read lately, parsed: a hundred subscriptions' first attempts
/// read the same batch a hundred times. A delivery written since has a record, looked up
/// first; one removed without a record belongs to a deleted subscription, which the task
/// checks before each attempt.
#[derive(Default)]
pub struct Recent(Mutex<VecDeque<Arc<Batch>>>);

/// How many parsed batches [`Recent`] keeps.
const RECENT: usize = 64;

impl Recent {
    /// Delivery `id` as the store's latest commit has it: its own record, or waiting in its
    /// batch.
    pub fn found_now(&self, db: &oxigraph::store::Store, id: &str) -> Result<Option<Delivery>> {
        if let Some((_, d)) = queue::stored_now(db, id)? {
            return Ok(Some(d));
        }
        let Some(batch) = batch_of(id) else {
            return Ok(None);
        };
        let kept = {
            let recent = self.0.lock().unwrap_or_else(|p| p.into_inner());
            recent.iter().find(|b| b.id == batch).cloned()
        };
        let b = match kept {
            Some(b) => b,
            None => {
                let (n, p, g) = (node(batch), dsn("deliveryBatch"), queue::graph());
                let found = parse(db.quads_for_pattern(
                    Some(n.as_ref().into()),
                    Some(p.as_ref()),
                    None,
                    Some(g.as_ref().into()),
                ))?;
                let Some((_, b)) = found.into_iter().next() else {
                    return Ok(None);
                };
                let b = Arc::new(b);
                let mut recent = self.0.lock().unwrap_or_else(|p| p.into_inner());
                if recent.len() >= RECENT {
                    recent.pop_front();
                }
                recent.push_back(b.clone());
                b
            }
        };
        Ok(waiting_in(&b, id))
    }
}

/// Deliveries `ids` as the transaction has them (those it has not are left out), each batch
/// read once.
pub fn found_all_in(tx: &Transaction<'_>, ids: &[&str]) -> Result<HashMap<String, Delivery>> {
    let mut out = HashMap::new();
    let mut by_batch: HashMap<&str, Vec<&str>> = HashMap::new();
    for id in ids {
        match batch_of(id) {
            Some(b) => by_batch.entry(b).or_default().push(id),
            None => {
                if let Some((_, d)) = queue::stored_in(tx, id)? {
                    out.insert((*id).to_owned(), d);
                }
            }
        }
    }
    for (batch, ids) in by_batch {
        let waiting = batch_in(tx, batch)?.map(|(_, b)| b);
        for id in ids {
            // Not waiting in its batch: written on its own since.
            let d = match waiting.as_ref().and_then(|b| waiting_in(b, id)) {
                Some(d) => Some(d),
                None => queue::stored_in(tx, id)?.map(|(_, d)| d),
            };
            if let Some(d) = d {
                out.insert(id.to_owned(), d);
            }
        }
    }
    Ok(out)
}

/// Writes deliveries read in `tx` as they are now: each replaces its own record, or gets one
/// and leaves its batch; each batch is read and rewritten once.
pub fn put_all(tx: &mut Transaction<'_>, deliveries: &[Delivery]) -> Result<()> {
    let mut by_batch: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    let mut recorded = Vec::new();
    for d in deliveries {
        match batch_of(&d.id) {
            Some(b) => by_batch.entry(b).or_default().push(d),
            None => recorded.push(d),
        }
    }
    for (batch, ds) in by_batch {
        let Some((old, mut b)) = batch_in(tx, batch)? else {
            recorded.extend(ds);
            continue;
        };
        let waiting: HashSet<String> = b.to.iter().map(|p| b.delivery_id(p.n)).collect();
        let mut leaving: HashSet<&str> = HashSet::new();
        for d in ds {
            // Waiting in its batch, so without a record: it gets one. Named twice, the later
            // replaces it as any record is replaced.
            if waiting.contains(&d.id) && leaving.insert(d.id.as_str()) {
                for q in d.quads() {
                    tx.insert(&q);
                }
            } else {
                recorded.push(d);
            }
        }
        if !leaving.is_empty() {
            let id = b.id.clone();
            b.to.retain(|p| !leaving.contains(format!("msg_{id}_{}", p.n).as_str()));
            rewrite(tx, &old, &b);
        }
    }
    for d in recorded {
        match queue::stored_in(tx, &d.id)? {
            Some((old, _)) => {
                tx.remove(&old);
                tx.insert(&d.quads()[0]);
            }
            None => {
                for q in d.quads() {
                    tx.insert(&q);
                }
            }
        }
    }
    Ok(())
}

/// Stores `b` in place of `old`, or nothing when nobody is left in it.
pub fn rewrite(tx: &mut Transaction<'_>, old: &Quad, b: &Batch) {
    tx.remove(old);
    if !b.to.is_empty() {
        tx.insert(&b.quad());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn batch(to: &[&str]) -> Batch {
        Batch {
            id: "0123456789abcdef0123456789abcdef".into(),
            kind: "consignment.created".into(),
            created: "2026-11-28T00:00:00Z".into(),
            seq: 1,
            body: "{}".into(),
            to: to
                .iter()
                .enumerate()
                .map(|(n, s)| Pending {
                    subscription: (*s).to_owned(),
                    n,
                    full: None,
                })
                .collect(),
        }
    }

    /// A delivery written leaves its batch in the same write, and the batch goes with the
    /// last: each delivery is found in exactly one place, as last written.
    #[test]
    fn a_delivery_written_leaves_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let b = batch(&["s1", "s2", "s3"]);
        store
            .write(|tx| {
                tx.insert(&b.quad());
                Ok(())
            })
            .unwrap();
        let ids: Vec<String> = (0..3).map(|n| b.delivery_id(n)).collect();
        let found = |id: &str| {
            Recent::default()
                .found_now(store.db(), id)
                .unwrap()
                .unwrap()
        };
        assert_eq!(found(&ids[1]).subscription, "s2");
        assert_eq!(found(&ids[1]).attempts, 0);

        let mut second = found(&ids[1]);
        second.attempts = 1;
        store.write(|tx| put_all(tx, &[second.clone()])).unwrap();
        assert_eq!(found(&ids[1]), second);
        let left = all(store.db()).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].deliveries().count(), 2);
        assert!(left[0].deliveries().all(|d| d.id != ids[1]));

        // Written twice in one write: the later wins, once.
        let (mut first, mut third) = (found(&ids[0]), found(&ids[2]));
        first.attempts = 2;
        third.delivered_at = Some("2026-11-28T00:00:01Z".into());
        store
            .write(|tx| {
                let mut again = third.clone();
                again.attempts = 9;
                put_all(tx, &[again])?;
                put_all(tx, &[first.clone(), third.clone()])
            })
            .unwrap();
        assert!(all(store.db()).unwrap().is_empty());
        assert_eq!(found(&ids[0]), first);
        assert_eq!(found(&ids[2]), third);
        let records = store
            .db()
            .quads_for_pattern(None, Some(dsn("delivery").as_ref()), None, None)
            .count();
        assert_eq!(records, 3);
    }

    #[test]
    fn a_delivery_id_names_its_batch() {
        let b = batch(&[]);
        let id = b.delivery_id(17);
        assert_eq!(batch_of(&id), Some(b.id.as_str()));
        assert_eq!(batch_of("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"), None);
        assert_eq!(batch_of("msg_abc_x"), None);
    }
}
