//! Notifications to receiving organisations: numbered by one sequence per recipient (the SSE
//! event id, so `Last-Event-ID` says exactly what a reconnecting client has seen; one sequence
//! per recipient, so that the gaps in an organisation's numbers do not tell it how many
//! notifications other organisations received meanwhile; after a restart the recipient's next
//! follows its highest),
//! stored as one quad in the recipient's notification graph
//! (`<urn:dataspace-node:notification:N> dsn:notice "…"^^rdf:JSON`: the number is in the IRI,
//! the recipient is the graph, so two recipients' graphs may hold the same IRI), and
//! listed from a per-recipient index of sequence numbers kept in memory. Numbers are taken and
//! indexed under the writer lock, so they appear in commit order and a stream that has sent
//! `n` never later finds a smaller one.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde_json::Value;
use tokio::sync::watch;

use crate::error::Result;
use crate::store::snapshot::{Decoder, Encoder};
use crate::store::Query;
use crate::store::{graphs, Queries, Store};
use crate::vocab::dsn;

pub struct Notifications {
    /// The last number handed out to each recipient (by notification graph) since start-up;
    /// a recipient not in it continues after its highest committed number.
    handed: Mutex<HashMap<String, u64>>,
    /// By notification graph (one per recipient organisation).
    by_org: RwLock<HashMap<String, Vec<u64>>>,
    /// Counts commits that wrote notifications; streams wait on it, then read their own.
    published: watch::Sender<u64>,
}

/// Notification nodes are `urn:dataspace-node:notification:<number>`, in the recipient's graph.
const PREFIX: &str = "urn:dataspace-node:notification:";

/// The index key of `org`'s notifications: its notification graph.
fn key(org: &str) -> String {
    graphs::notifications(org).into_string()
}

pub fn node(seq: u64) -> NamedNode {
    NamedNode::new_unchecked(format!("{PREFIX}{seq}"))
}

/// The number in a notification node's IRI.
fn number_of(iri: &str) -> Option<u64> {
    iri.strip_prefix(PREFIX)?.parse().ok()
}

impl Notifications {
    /// Reads every stored notification's recipient graph and number. Blocking.
    pub fn load(store: &Store, queries: &Queries) -> Result<Self> {
        let mut by_org: HashMap<String, Vec<u64>> = HashMap::new();
        queries.each(store, Query::NotificationNumbers, &[], |row| {
            if let (Some(Term::NamedNode(graph)), Some(Term::NamedNode(n))) =
                (row.get("graph"), row.get("notification"))
            {
                if let Some(seq) = number_of(n.as_str()) {
                    by_org
                        .entry(graph.as_str().to_owned())
                        .or_default()
                        .push(seq);
                }
            }
            true
        })?;
        for seqs in by_org.values_mut() {
            seqs.sort_unstable();
            seqs.dedup();
        }
        Ok(Self::with(by_org))
    }

    fn with(by_org: HashMap<String, Vec<u64>>) -> Self {
        Self {
            handed: Mutex::new(HashMap::new()),
            by_org: RwLock::new(by_org),
            published: watch::channel(0).0,
        }
    }

    /// The numbers and their recipients, for the models snapshot.
    pub fn encode(&self) -> Vec<u8> {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        let mut e = Encoder::default();
        e.u64(map.len() as u64);
        for (graph, seqs) in map.iter() {
            e.str(graph);
            e.u64(seqs.len() as u64);
            for seq in seqs {
                e.u64(*seq);
            }
        }
        e.0
    }

    /// What [`Notifications::encode`] wrote; `None` when the bytes are not that.
    pub fn decode(mut d: Decoder<'_>) -> Option<Self> {
        let mut by_org = HashMap::new();
        for _ in 0..d.count(16)? {
            let graph = d.str()?.to_owned();
            let n = d.count(8)?;
            let seqs = (0..n).map(|_| d.u64()).collect::<Option<Vec<u64>>>()?;
            by_org.insert(graph, seqs);
        }
        d.is_empty().then(|| Self::with(by_org))
    }

    /// Writes a notification for `org` in the transaction; returns its number. Call under the
    /// writer lock and pass the number to [`Notifications::committed`] after the commit.
    pub fn write(&self, tx: &mut Transaction<'_>, org: &str, mut json: Value) -> Result<u64> {
        let seq = {
            let mut handed = self.handed.lock().unwrap_or_else(|p| p.into_inner());
            let k = key(org);
            let last = match handed.get(&k) {
                Some(last) => *last,
                None => self.latest(org),
            };
            handed.insert(k, last + 1);
            last + 1
        };
        json["id"] = Value::String(seq.to_string());
        // One quad per notification: routing writes one for every organisation it shares a
        // consignment with, inside the publisher's request (docs/PERFORMANCE.md).
        tx.insert(&Quad::new(
            node(seq),
            dsn("notice"),
            crate::vocab::json_literal(json.to_string()),
            GraphName::NamedNode(graphs::notifications(org)),
        ));
        Ok(seq)
    }

    /// Indexes committed notifications and wakes the streams. Under the writer lock.
    pub fn committed(&self, notices: &[(String, u64)]) {
        if notices.is_empty() {
            return;
        }
        let mut map = self.by_org.write().unwrap_or_else(|p| p.into_inner());
        for (org, seq) in notices {
            map.entry(key(org)).or_default().push(*seq);
        }
        drop(map);
        self.published.send_modify(|n| *n += 1);
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }

    /// `org`'s last committed number (0 before its first).
    pub fn latest(&self, org: &str) -> u64 {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        map.get(&key(org))
            .and_then(|s| s.last())
            .copied()
            .unwrap_or(0)
    }

    /// Up to `n` of `org`'s numbers, newest first, strictly below `before` when given.
    pub fn page(&self, org: &str, before: Option<u64>, n: usize) -> Vec<u64> {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        let Some(seqs) = map.get(&key(org)) else {
            return Vec::new();
        };
        let end = before.map_or(seqs.len(), |b| seqs.partition_point(|s| *s < b));
        seqs[..end].iter().rev().take(n).copied().collect()
    }

    /// Up to `n` of `org`'s numbers above `after`, oldest first: what a stream sends next.
    pub fn after(&self, org: &str, after: u64, n: usize) -> Vec<u64> {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        let Some(seqs) = map.get(&key(org)) else {
            return Vec::new();
        };
        let start = seqs.partition_point(|s| *s <= after);
        seqs[start..].iter().take(n).copied().collect()
    }

    /// The stored JSON of `org`'s notification `seq`. Blocking.
    pub fn json(&self, store: &Store, org: &str, seq: u64) -> Result<Option<Value>> {
        let found = store.value(&node(seq), &dsn("notice"), &graphs::notifications(org))?;
        Ok(match found {
            Some(Term::Literal(l)) => serde_json::from_str(l.value()).ok(),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::snapshot::Snapshot;

    #[test]
    fn numbers_come_back_from_their_encoding() {
        let n = Notifications::with(HashMap::new());
        n.committed(&[
            ("did:a".into(), 3),
            ("did:b".into(), 5),
            ("did:a".into(), 7),
        ]);
        let mut s = Snapshot::new("t".into());
        s.put("n", n.encode());
        let back = Notifications::decode(s.section("n").unwrap()).unwrap();
        assert_eq!(back.page("did:a", None, 9), vec![7, 3]);
        assert_eq!(back.after("did:b", 0, 9), vec![5]);
        assert_eq!(back.latest("did:a"), 7);
        assert_eq!(back.latest("did:b"), 5);
        assert_eq!(back.latest("did:c"), 0);
        let bytes = n.encode();
        s.put("n", bytes[..bytes.len() - 3].to_vec());
        assert!(Notifications::decode(s.section("n").unwrap()).is_none());
    }
}
