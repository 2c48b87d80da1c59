//! The deliveries one change queues, and how each went: one record per event, whatever the
//! number of subscriptions told.
//!
//! A change read by a hundred subscriptions queues a hundred deliveries in its own
//! transaction. A record (two quads) per delivery cost a Create twice what its description
//! does, and recording each success rewrote it again under the writer lock. So a change's
//! event is one batch — the body once, and for each subscription told its place `n` (its
//! `webhook-id` is `msg_<batch>_<n>`) and how its delivery went — plus one index quad per
//! organisation told, by which a subscription's log finds its batches.
//!
//! Successes, by far the most frequent outcome, are added beside the batch: one small record
//! ([`Success`]s) per batch per write of successes, which reads apply to the places. Rewriting
//! the batch for them wrote its JSON again several times per event, and Oxigraph never deletes
//! a string it stored: every version stayed on disk. Everything else written of a delivery (a
//! failed attempt's outcome, a retry, a replay, a `full` body, pruning) rewrites its batch with
//! the successes folded in and their records removed, each batch once per write however many
//! of its deliveries changed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use oxigraph::model::{NamedNode, NamedNodeRef, NamedOrBlankNodeRef, Quad, Term, TermRef};
use oxigraph::store::{StorageError, Transaction};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::queue::{self, Delivery, FullRef, State};
use crate::error::Result;
use crate::vocab::{dsn, json_literal};

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

/// A delivery that succeeded: its place, the receiver's status, when, and its `resets` as the
/// attempt read them (an attempt that began before a retry or replay leaves it to be sent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Success(pub usize, pub u16, pub String, pub u32);

impl Batch {
    /// Applies successes recorded beside the batch to its places, in the order written.
    fn apply(&mut self, done: &[Success]) {
        for Success(n, status, at, resets) in done {
            let Some(p) = self.to.iter_mut().find(|p| p.n == *n) else {
                continue;
            };
            p.state.attempts += 1;
            p.state.last_status = Some(*status);
            p.state.last_error = None;
            p.state.next_attempt = None;
            if p.state.resets == *resets {
                p.state.delivered_at = Some(at.clone());
            }
        }
    }

    pub fn delivery_id(&self, n: usize) -> String {
        format!("msg_{}_{n}", self.id)
    }

    pub fn quad(&self) -> Quad {
        Quad::new(
            node(&self.id),
            dsn("deliveryBatch"),
            json_literal(serde_json::to_string(self).unwrap_or_default()),
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

    /// The place of delivery `id`, if it is one of this batch's (without formatting each
    /// place's id: a hundred subscriptions' attempts look up a hundred places each).
    fn place(&self, id: &str) -> Option<usize> {
        let (batch, n) = place_of(id)?;
        (batch == self.id).then_some(n)
    }

    fn find(&self, id: &str) -> Option<&Pending> {
        let n = self.place(id)?;
        self.to.iter().find(|p| p.n == n)
    }

    /// Writes `d`'s state into its place; false when it has none here.
    fn set(&mut self, d: &Delivery) -> bool {
        let Some(n) = self.place(&d.id) else {
            return false;
        };
        let Some(p) = self.to.iter_mut().find(|p| p.n == n) else {
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
    place_of(id).map(|(batch, _)| batch)
}

/// The batch delivery `id` is in, and its place there.
pub fn place_of(id: &str) -> Option<(&str, usize)> {
    let rest = id.strip_prefix("msg_")?;
    let (batch, n) = rest.split_once('_')?;
    n.parse::<usize>().ok().map(|n| (batch, n))
}

/// The batches of `quads`, each with the successes recorded beside it applied.
fn parse(
    r: &impl Reads,
    quads: impl Iterator<Item = std::result::Result<Quad, StorageError>>,
) -> Result<Vec<(Quad, Batch)>> {
    let mut out = Vec::new();
    for q in quads {
        let q = q?;
        if let Term::Literal(l) = &q.object {
            match serde_json::from_str::<Batch>(l.value()) {
                Ok(mut b) => {
                    b.apply(&successes(r, q.subject.as_ref())?);
                    out.push((q, b));
                }
                Err(e) => tracing::error!(error = %e, "an unreadable delivery batch skipped"),
            }
        }
    }
    Ok(out)
}

/// The successes recorded beside batch node `batch`, in the order they were written (each
/// record's first success's time: records of one batch are written one at a time, under the
/// writer lock).
fn successes(r: &impl Reads, batch: NamedOrBlankNodeRef<'_>) -> Result<Vec<Success>> {
    let mut records: Vec<Vec<Success>> = Vec::new();
    for q in r.matching(Some(batch), dsn("delivered").as_ref(), None) {
        if let Term::Literal(l) = &q?.object {
            match serde_json::from_str::<Vec<Success>>(l.value()) {
                Ok(done) => records.push(done),
                Err(e) => tracing::error!(error = %e, "an unreadable delivery record skipped"),
            }
        }
    }
    records.sort_by(|a, b| a.first().map(|s| &s.2).cmp(&b.first().map(|s| &s.2)));
    Ok(records.into_iter().flatten().collect())
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
        r,
        r.matching(Some(n.as_ref().into()), p.as_ref(), None)
            .into_iter(),
    )?;
    Ok(found.into_iter().next())
}

/// Every batch.
pub fn all(r: &impl Reads) -> Result<Vec<Batch>> {
    let found = parse(
        r,
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
        out.extend(parse(r, found.into_iter())?);
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
            replace(tx, &old, &b);
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
    let Some((old, b)) = batch_at(tx, id)? else {
        return Ok(0);
    };
    Ok(retain(tx, &old, b, keep))
}

/// Keeps in batch `b`, read in this transaction from quad `old`, the deliveries `keep`
/// picks; how many went.
pub fn retain(
    tx: &mut Transaction<'_>,
    old: &Quad,
    mut b: Batch,
    keep: impl Fn(&Pending) -> bool,
) -> usize {
    let before = b.to.len();
    b.to.retain(|p| keep(p));
    let gone = before - b.to.len();
    if gone > 0 {
        rewrite(tx, old, &b);
    }
    gone
}

/// Stores `b` in place of `old`, with its index quads; or removes it with them when nobody is
/// left in it.
pub fn rewrite(tx: &mut Transaction<'_>, old: &Quad, b: &Batch) {
    if b.to.is_empty() {
        remove(tx, &b.id);
    } else {
        replace(tx, old, b);
    }
}

/// Stores `b` (read with its successes applied) in place of `old`, the successes' records
/// going: they are in it now.
fn replace(tx: &mut Transaction<'_>, old: &Quad, b: &Batch) {
    let n = node(&b.id);
    let recorded: Vec<Quad> = tx
        .matching(Some(n.as_ref().into()), dsn("delivered").as_ref(), None)
        .into_iter()
        .filter_map(std::result::Result::ok)
        .collect();
    for q in &recorded {
        tx.remove(q);
    }
    tx.remove(old);
    tx.insert(&b.quad());
}

/// Records successes of batch `id`'s deliveries beside it, in one small record (none when
/// the batch is gone: pruned, or its subscriptions deleted); whether it was recorded.
pub fn record_successes(tx: &mut Transaction<'_>, id: &str, done: &[Success]) -> Result<bool> {
    let n = node(id);
    // The index quads exist while the batch does, and hold no string to read.
    let exists = tx
        .matching(Some(n.as_ref().into()), dsn("deliveryTo").as_ref(), None)
        .into_iter()
        .next()
        .transpose()?
        .is_some();
    if !exists || done.is_empty() {
        return Ok(false);
    }
    let json = serde_json::to_string(done).map_err(crate::error::Error::internal)?;
    tx.insert(&Quad::new(
        n,
        dsn("delivered"),
        json_literal(json),
        queue::graph(),
    ));
    Ok(true)
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
mod tests;
