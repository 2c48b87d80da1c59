//! The order of the consignment lists: per organisation, its records by (creation time,
//! aig id), newest first. Creation times are store stamps ([`Store::stamp`]), strictly
//! increasing in commit order, so the order is commit order; the aig id only breaks ties among
//! records written before stamps. A SPARQL `ORDER BY` would sort all of an organisation's records for
//! every page (290 ms at 5,000); this index is built from the store's record index at
//! start-up and kept current after each committed `Create`, so a page is a range walk plus
//! one summary look-up per row. It also answers "is this record one of the organisation's?"
//! in constant time, which the SPARQL endpoint asks for every graph a query touches.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::RwLock;

use oxigraph::model::Term;

use crate::error::Result;
use crate::rdf::text;
use crate::store::snapshot::{Decoder, Encoder};
use crate::store::Query;
use crate::store::{Committed, Queries, ReadModel, Store};

/// Sort key: milliseconds since the epoch, then the aig id.
pub type Key = (i64, String);

#[derive(Default)]
pub struct Listing {
    by_org: RwLock<HashMap<String, Keys>>,
    /// The rows of the lists, as recently read.
    pub rows: super::rows::Rows,
}

#[derive(Default)]
struct Keys {
    order: BTreeSet<Key>,
    /// The same records by the 128 bits of their aig id.
    ids: HashSet<u128>,
}

/// The 128 bits of an aig id (`aig:<32 hex>` or the bare hex).
pub fn id_bits(aig: &str) -> Option<u128> {
    let hex = aig.strip_prefix("aig:").unwrap_or(aig);
    if hex.len() != 32 {
        return None;
    }
    u128::from_str_radix(hex, 16).ok()
}

pub fn millis(date_time: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(date_time)
        .ok()
        .map(|d| d.timestamp_millis())
}

/// The list key's aig id (`aig:<hex>`) of a row's `?record` (`urn:dataspace-node:consignment:<hex>`).
pub fn aig_of(row: &oxigraph::sparql::QuerySolution) -> Option<String> {
    match row.get("record") {
        Some(Term::NamedNode(n)) => {
            crate::store::graphs::consignment_hex(n.as_str()).map(|hex| format!("aig:{hex}"))
        }
        _ => None,
    }
}

impl Listing {
    /// Reads every record of the store's index. Blocking.
    pub fn load(store: &Store, queries: &Queries) -> Result<Self> {
        let listing = Self::default();
        queries.each(store, Query::ConsignmentRecords, &[], |row| {
            if let (Some(org), Some(aig), Some(at)) =
                (text(&row, "org"), aig_of(&row), text(&row, "created"))
            {
                if let Some(ms) = millis(&at) {
                    listing.insert(&org, (ms, aig));
                }
            }
            true
        })?;
        Ok(listing)
    }

    pub fn insert(&self, org: &str, key: Key) {
        let mut map = self.by_org.write().unwrap_or_else(|p| p.into_inner());
        let keys = map.entry(org.to_owned()).or_default();
        if let Some(bits) = id_bits(&key.1) {
            keys.ids.insert(bits);
        }
        keys.order.insert(key);
    }

    /// Is the record with aig id bits `bits` in `org`'s list?
    pub fn contains(&self, org: &str, bits: u128) -> bool {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        map.get(org).is_some_and(|keys| keys.ids.contains(&bits))
    }

    pub fn remove(&self, org: &str, key: &Key) {
        if let Some(keys) = self
            .by_org
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(org)
        {
            if keys.order.remove(key) {
                if let Some(bits) = id_bits(&key.1) {
                    keys.ids.remove(&bits);
                }
            }
        }
    }

    /// The whole order, for the models snapshot ([`crate::store::snapshot`]).
    pub fn encode(&self) -> Vec<u8> {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        let mut e = Encoder::default();
        e.u64(map.len() as u64);
        for (org, keys) in map.iter() {
            e.str(org);
            e.u64(keys.order.len() as u64);
            for (ms, aig) in &keys.order {
                e.i64(*ms);
                e.str(aig);
            }
        }
        e.0
    }

    /// The order [`Listing::encode`] wrote; `None` when the bytes are not such an order.
    pub fn decode(mut d: Decoder<'_>) -> Option<Self> {
        let listing = Self::default();
        {
            let mut map = listing.by_org.write().unwrap_or_else(|p| p.into_inner());
            for _ in 0..d.count(16)? {
                let org = d.str()?.to_owned();
                let mut keys = Keys::default();
                for _ in 0..d.count(16)? {
                    let key = (d.i64()?, d.str()?.to_owned());
                    if let Some(bits) = id_bits(&key.1) {
                        keys.ids.insert(bits);
                    }
                    keys.order.insert(key);
                }
                map.insert(org, keys);
            }
        }
        d.is_empty().then_some(listing)
    }

    /// The newest creation time listed.
    pub fn newest(&self) -> Option<i64> {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        map.values()
            .filter_map(|k| k.order.last().map(|(ms, _)| *ms))
            .max()
    }

    /// Up to `n` keys of `org`, newest first, strictly after `after` when given.
    pub fn page(&self, org: &str, after: Option<&Key>, n: usize) -> Vec<Key> {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        let Some(keys) = map.get(org).map(|k| &k.order) else {
            return Vec::new();
        };
        match after {
            Some(after) => keys.range(..after.clone()).rev().take(n).cloned().collect(),
            None => keys.iter().rev().take(n).cloned().collect(),
        }
    }
}

/// An organisation's own list follows its Creates; the row cache drops rows a write changed.
impl ReadModel for Listing {
    fn apply(&self, event: &Committed) {
        match event {
            Committed::ConsignmentCreated {
                publisher,
                created_ms,
                aig,
            } => self.insert(publisher, (*created_ms, aig.clone())),
            Committed::RowChanged { aig_hex } => self.rows.changed([aig_hex.as_str()]),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_comes_back_from_its_encoding() {
        let l = Listing::default();
        let aig = "aig:0123456789abcdef0123456789abcdef";
        for (org, ms, id) in [("a", 3, "c"), ("a", 1, aig), ("b", -2, "x")] {
            l.insert(org, (ms, id.into()));
        }
        let bytes = l.encode();
        let mut e = crate::store::snapshot::Snapshot::new("t".into());
        e.put("l", bytes.clone());
        let back = Listing::decode(e.section("l").unwrap()).unwrap();
        assert_eq!(back.page("a", None, 9), l.page("a", None, 9));
        assert_eq!(back.page("b", None, 9), vec![(-2, "x".to_owned())]);
        assert!(back.contains("a", id_bits(aig).unwrap()));
        assert_eq!(back.newest(), Some(3));
        e.put("l", bytes[..bytes.len() - 1].to_vec());
        assert!(Listing::decode(e.section("l").unwrap()).is_none());
    }

    #[test]
    fn pages_walk_newest_first_without_repeats() {
        let l = Listing::default();
        for (ms, id) in [(3, "c"), (1, "a"), (2, "b"), (2, "bb")] {
            l.insert("org", (ms, id.into()));
        }
        let first = l.page("org", None, 2);
        assert_eq!(first, vec![(3, "c".to_string()), (2, "bb".to_string())]);
        let rest = l.page("org", first.last(), 10);
        assert_eq!(rest, vec![(2, "b".to_string()), (1, "a".to_string())]);
        assert!(l.page("other", None, 5).is_empty());
    }

    #[test]
    fn membership_follows_inserts_and_removals() {
        let l = Listing::default();
        let aig = "aig:0123456789abcdef0123456789abcdef";
        let bits = id_bits(aig).unwrap();
        assert_eq!(id_bits("0123456789abcdef0123456789abcdef"), Some(bits));
        assert_eq!(id_bits("aig:0123"), None);
        l.insert("org", (5, aig.into()));
        assert!(l.contains("org", bits));
        assert!(!l.contains("other", bits));
        l.remove("org", &(5, aig.into()));
        assert!(!l.contains("org", bits));
    }
}
