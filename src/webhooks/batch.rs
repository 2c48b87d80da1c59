//! The deliveries one change queues, and how each went: one record per event, whatever the
//! number of subscriptions told.
//!
//! A change read by a hundred subscriptions queues a hundred deliveries in its own
//! transaction. A record (two quads) per delivery cost a Create twice what its description
//! does, and recording each success rewrote it again under the writer lock. So a change's
//! event is one batch — the body once, and for each subscription told its place `n` (its
//! `webhook-id` is `msg_<batch>_<n>`) and how its delivery went — plus one index quad per
//! organisation told, by which a subscription's log finds its batches. Everything written of a
//! delivery later (an attempt's outcome, a retry, a replay, a `full` body) rewrites its batch,
//! each batch once per write however many of its deliveries changed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use oxigraph::model::{Literal, NamedNode, NamedNodeRef, NamedOrBlankNodeRef, Quad, Term, TermRef};
use oxigraph::store::{StorageError, Transaction};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::queue::{self, Delivery, FullRef, State};
use crate::error::Result;
use crate::vocab::{dsn, RDF_JSON};

fn node(id: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("urn:dataspace-node:delivery-batch:{id}"))
}

/// The index node of organisation `org`'s batches (a digest: organisation ids are not all
/// IRIs).
fn told(org: &str) -> NamedNode {
    let digest = Sha256::digest(org.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    NamedNode::new_unchecked(format!("urn:dataspace-node:deliveries-to:{hex}"))
}

/// One change's event: its body, and its deliveries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// 32 hex digits.
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub created: String,
    /// Commit order across the node: deliveries of a subscription go out in this order.
    pub seq: u64,
    pub body: String,
    pub to: Vec<Pending>,
}

/// One subscription's delivery of the batch's event, and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub subscription: String,
    /// Its place in the batch.
    pub n: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<FullRef>,
    /// The body with the `full` object in it, once read (the batch's otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(flatten)]
    pub state: State,
}

impl Pending {
    /// Subscription `subscription`, at place `n`, not attempted yet.
    pub fn queued(subscription: &str, n: usize, full: Option<FullRef>) -> Self {
        Self {
            subscription: subscription.to_owned(),
            n,
            full,
            body: None,
            state: State::default(),
        }
    }
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

    /// The index quads by which organisations `orgs` (those of the subscriptions told) find
    /// the batch.
    pub fn index(&self, orgs: &[&str]) -> Vec<Quad> {
        orgs.iter()
            .map(|org| Quad::new(node(&self.id), dsn("deliveryTo"), told(org), queue::graph()))
            .collect()
    }

    /// Delivery `p`, as it stands.
    pub fn delivery(&self, p: &Pending) -> Delivery {
        Delivery {
            id: self.delivery_id(p.n),
            subscription: p.subscription.clone(),
            kind: self.kind.clone(),
            created: self.created.clone(),
            seq: self.seq,
            body: p.body.clone().unwrap_or_else(|| self.body.clone()),
            state: p.state.clone(),
            full: p.full.clone(),
        }
    }

    /// The deliveries whose places `keep` picks (each delivery built carries a copy of the
    /// body, so the places are picked first).
    pub fn deliveries<'a>(
        &'a self,
        keep: impl Fn(&Pending) -> bool + 'a,
    ) -> impl Iterator<Item = Delivery> + 'a {
        self.to
            .iter()
            .filter(move |p| keep(p))
            .map(|p| self.delivery(p))
    }

    fn find(&self, id: &str) -> Option<&Pending> {
        self.to.iter().find(|p| self.delivery_id(p.n) == id)
    }

    /// Writes `d`'s state into its place; false when it has none here.
    fn set(&mut self, d: &Delivery) -> bool {
        let prefix = format!("msg_{}_", self.id);
        let Some(p) = self
            .to
            .iter_mut()
            .find(|p| d.id == format!("{prefix}{}", p.n))
        else {
            return false;
        };
        p.body = (d.body != self.body).then(|| d.body.clone());
        p.full = d.full.clone();
        p.state = d.state.clone();
        true
    }
}

/// The batch delivery `id` is in.
pub fn batch_of(id: &str) -> Option<&str> {
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

/// The store's latest commit or a transaction, as far as reading the deliveries' graph goes.
pub trait Reads {
    fn matching(
        &self,
        s: Option<NamedOrBlankNodeRef<'_>>,
        p: NamedNodeRef<'_>,
        o: Option<TermRef<'_>>,
    ) -> Vec<std::result::Result<Quad, StorageError>>;
}

/// The same read on both: their `quads_for_pattern` share a signature, not a trait.
macro_rules! reads {
    ($t:ty) => {
        impl Reads for $t {
            fn matching(
                &self,
                s: Option<NamedOrBlankNodeRef<'_>>,
                p: NamedNodeRef<'_>,
                o: Option<TermRef<'_>>,
            ) -> Vec<std::result::Result<Quad, StorageError>> {
                let g = queue::graph();
                self.quads_for_pattern(s, Some(p), o, Some(g.as_ref().into()))
                    .collect()
            }
        }
    };
}

reads!(oxigraph::store::Store);
reads!(Transaction<'_>);

fn batch_at(r: &impl Reads, id: &str) -> Result<Option<(Quad, Batch)>> {
    let (n, p) = (node(id), dsn("deliveryBatch"));
    let found = parse(
        r.matching(Some(n.as_ref().into()), p.as_ref(), None)
            .into_iter(),
    )?;
    Ok(found.into_iter().next())
}

/// Every batch.
pub fn all(r: &impl Reads) -> Result<Vec<Batch>> {
    let found = parse(
        r.matching(None, dsn("deliveryBatch").as_ref(), None)
            .into_iter(),
    )?;
    Ok(found.into_iter().map(|(_, b)| b).collect())
}

/// The batches that told organisation `org` of something, with their quads.
pub fn told_to(r: &impl Reads, org: &str) -> Result<Vec<(Quad, Batch)>> {
    let index = told(org);
    let mut out = Vec::new();
    for q in r.matching(
        None,
        dsn("deliveryTo").as_ref(),
        Some(index.as_ref().into()),
    ) {
        let node = q?.subject;
        let found = r.matching(Some(node.as_ref()), dsn("deliveryBatch").as_ref(), None);
        out.extend(parse(found.into_iter())?);
    }
    Ok(out)
}

/// Batches the delivery task read lately, parsed: a hundred subscriptions' first attempts
/// read the same batch a hundred times. Every write of a batch through [`Recent::forget`]s it;
/// an attempt that read it just before works from what it read, which at least once allows
/// (an attempt that began before a retry or replay does not mark it delivered).
#[derive(Default)]
pub struct Recent(Mutex<VecDeque<Arc<Batch>>>);

/// How many parsed batches [`Recent`] keeps.
const RECENT: usize = 64;

impl Recent {
    /// Delivery `id` as the store's latest commit has it.
    pub fn found_now(&self, db: &oxigraph::store::Store, id: &str) -> Result<Option<Delivery>> {
        let Some(batch) = batch_of(id) else {
            return Ok(None);
        };
        let b = match self.kept(batch) {
            Some(b) => b,
            None => {
                let Some((_, b)) = batch_at(db, batch)? else {
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
        Ok(b.find(id).map(|p| b.delivery(p)))
    }

    /// Delivery `id` when its batch is kept (`None` when it is not): no store read, so no
    /// blocking thread needed.
    pub fn cached(&self, id: &str) -> Option<Option<Delivery>> {
        let b = self.kept(batch_of(id)?)?;
        Some(b.find(id).map(|p| b.delivery(p)))
    }

    fn kept(&self, batch: &str) -> Option<Arc<Batch>> {
        let recent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        recent.iter().find(|b| b.id == batch).cloned()
    }

    /// Batches just written: read again next time.
    pub fn forget(&self, ids: &[String]) {
        let mut recent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        recent.retain(|b| !ids.contains(&b.id));
    }
}

/// Delivery `id` as the transaction has it.
pub fn found_in(tx: &Transaction<'_>, id: &str) -> Result<Option<Delivery>> {
    let Some(batch) = batch_of(id) else {
        return Ok(None);
    };
    Ok(batch_at(tx, batch)?.and_then(|(_, b)| b.find(id).map(|p| b.delivery(p))))
}

/// Deliveries `ids` as the transaction has them (those it has not are left out), each batch
/// read once.
pub fn found_all_in(tx: &Transaction<'_>, ids: &[&str]) -> Result<HashMap<String, Delivery>> {
    let mut by_batch: HashMap<&str, Vec<&str>> = HashMap::new();
    for id in ids {
        if let Some(b) = batch_of(id) {
            by_batch.entry(b).or_default().push(id);
        }
    }
    let mut out = HashMap::new();
    for (batch, ids) in by_batch {
        let Some((_, b)) = batch_at(tx, batch)? else {
            continue;
        };
        for id in ids {
            if let Some(p) = b.find(id) {
                out.insert(id.to_owned(), b.delivery(p));
            }
        }
    }
    Ok(out)
}

/// Writes deliveries as they are now into their batches, each batch rewritten once; the ids
/// of the batches written.
pub fn put_all(tx: &mut Transaction<'_>, deliveries: &[Delivery]) -> Result<Vec<String>> {
    let mut by_batch: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in deliveries {
        if let Some(b) = batch_of(&d.id) {
            by_batch.entry(b).or_default().push(d);
        }
    }
    let mut written = Vec::new();
    for (batch, ds) in by_batch {
        let Some((old, mut b)) = batch_at(tx, batch)? else {
            continue;
        };
        let mut changed = false;
        for d in ds {
            changed |= b.set(d);
        }
        if changed {
            tx.remove(&old);
            tx.insert(&b.quad());
            written.push(b.id);
        }
    }
    Ok(written)
}

/// Keeps in batch `id` the deliveries `keep` picks, as the transaction has them; how many
/// went.
pub fn retain_in(
    tx: &mut Transaction<'_>,
    id: &str,
    keep: impl Fn(&Pending) -> bool,
) -> Result<usize> {
    let Some((old, mut b)) = batch_at(tx, id)? else {
        return Ok(0);
    };
    let before = b.to.len();
    b.to.retain(|p| keep(p));
    let gone = before - b.to.len();
    if gone > 0 {
        rewrite(tx, &old, &b);
    }
    Ok(gone)
}

/// Stores `b` in place of `old`, with its index quads; or removes it with them when nobody is
/// left in it.
pub fn rewrite(tx: &mut Transaction<'_>, old: &Quad, b: &Batch) {
    if b.to.is_empty() {
        remove(tx, &b.id);
    } else {
        tx.remove(old);
        tx.insert(&b.quad());
    }
}

/// Removes batch `id` and its index quads.
pub fn remove(tx: &mut Transaction<'_>, id: &str) {
    let (n, g) = (node(id), queue::graph());
    let gone: Vec<Quad> = tx
        .quads_for_pattern(Some(n.as_ref().into()), None, None, Some(g.as_ref().into()))
        .filter_map(std::result::Result::ok)
        .collect();
    for q in &gone {
        tx.remove(q);
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
                .map(|(n, s)| Pending::queued(s, n, None))
                .collect(),
        }
    }

    /// What is written of deliveries lands in their places in the batch, each batch rewritten
    /// once, and the log's index finds the batch by each organisation told.
    #[test]
    fn deliveries_written_stay_in_their_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let b = batch(&["s1", "s2", "s3"]);
        store
            .write(|tx| {
                tx.insert(&b.quad());
                b.index(&["org:a", "org:b"]).iter().for_each(|q| {
                    tx.insert(q);
                });
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
        assert_eq!(found(&ids[1]).state.attempts, 0);

        let (mut first, mut second) = (found(&ids[0]), found(&ids[1]));
        first.state.attempts = 2;
        first.body = "{\"full\":1}".into();
        second.state.delivered_at = Some("2026-11-28T00:00:01Z".into());
        let written = store
            .write(|tx| put_all(tx, &[first.clone(), second.clone()]))
            .unwrap();
        assert_eq!(written, vec![b.id.clone()]);
        assert_eq!(found(&ids[0]), first);
        assert_eq!(found(&ids[1]), second);
        assert_eq!(found(&ids[2]).state.attempts, 0);
        assert_eq!(found(&ids[2]).body, "{}");
        assert_eq!(all(store.db()).unwrap().len(), 1);
        assert_eq!(told_to(store.db(), "org:a").unwrap().len(), 1);
        assert_eq!(told_to(store.db(), "org:b").unwrap().len(), 1);
        assert!(told_to(store.db(), "org:c").unwrap().is_empty());

        // Nobody left: the batch goes with its index.
        store
            .write(|tx| {
                let (old, mut left) = batch_at(tx, &b.id)?.unwrap();
                left.to.clear();
                rewrite(tx, &old, &left);
                Ok(())
            })
            .unwrap();
        let left = store
            .db()
            .quads_for_pattern(None, None, None, Some(queue::graph().as_ref().into()))
            .count();
        assert_eq!(left, 0);
    }

    /// The kept batches answer without the store until a write of theirs is forgotten.
    #[test]
    fn kept_batches_answer_until_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let b = batch(&["s1", "s2"]);
        store
            .write(|tx| {
                tx.insert(&b.quad());
                Ok(())
            })
            .unwrap();
        let recent = Recent::default();
        let id = b.delivery_id(1);
        assert_eq!(recent.cached(&id), None);
        let read = recent.found_now(store.db(), &id).unwrap();
        assert_eq!(recent.cached(&id), Some(read));
        assert_eq!(recent.cached(&b.delivery_id(7)), Some(None));
        recent.forget(std::slice::from_ref(&b.id));
        assert_eq!(recent.cached(&id), None);
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
