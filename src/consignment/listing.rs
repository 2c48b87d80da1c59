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

/// Sort key: milliseconds since the epoch, then the 128 bits of the aig id. Aig ids are
/// `aig:<32 hex>`, minted lowercase here and checked and lowered when a partner's arrive, so
/// the bits are the id; as bits a key holds no string (as strings, a node listing a million
/// took 54 MB more at rest, and decoding the snapshot allocated each one).
pub type Key = (i64, u128);

/// The list key of a record created at `ms` with aig id `aig`; `None` when `aig` is not one.
pub fn key(ms: i64, aig: &str) -> Option<Key> {
    id_bits(aig).map(|bits| (ms, bits))
}

/// The aig id (`aig:<32 hex>`) of a list key.
pub fn aig(key: &Key) -> String {
    format!("aig:{:032x}", key.1)
}

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
    /// Reads every record of the store's index that `local` says one of this node's
    /// organisations publishes (partners' records, which shares from other nodes leave in
    /// the index, are in no own list: the commits that build the listing while the node runs
    /// never add them). Blocking.
    pub fn load(store: &Store, queries: &Queries, local: impl Fn(&str) -> bool) -> Result<Self> {
        let listing = Self::default();
        queries.each(store, Query::ConsignmentRecords, &[], |row| {
            if let (Some(org), Some(aig), Some(at)) =
                (text(&row, "org"), aig_of(&row), text(&row, "created"))
            {
                if !local(&org) {
                    return true;
                }
                if let Some(key) = millis(&at).and_then(|ms| key(ms, &aig)) {
                    listing.insert(&org, key);
                }
            }
            true
        })?;
        Ok(listing)
    }

    pub fn insert(&self, org: &str, key: Key) {
        let mut map = self.by_org.write().unwrap_or_else(|p| p.into_inner());
        let keys = map.entry(org.to_owned()).or_default();
        keys.ids.insert(key.1);
        keys.order.insert(key);
    }

    /// Is the record with aig id bits `bits` in `org`'s list?
    pub fn contains(&self, org: &str, bits: u128) -> bool {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        map.get(org).is_some_and(|keys| keys.ids.contains(&bits))
    }

    /// Does `org` have a consignment of its own?
    pub fn holds_any(&self, org: &str) -> bool {
        let map = self.by_org.read().unwrap_or_else(|p| p.into_inner());
        map.get(org).is_some_and(|keys| !keys.order.is_empty())
    }

    pub fn remove(&self, org: &str, key: &Key) {
        if let Some(keys) = self
            .by_org
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(org)
        {
            if keys.order.remove(key) {
                keys.ids.remove(&key.1);
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
            for key in &keys.order {
                e.i64(key.0);
                e.str(&aig(key));
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
                    let k = key(d.i64()?, d.str()?)?;
                    keys.ids.insert(k.1);
                    keys.order.insert(k);
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
            Some(after) => keys.range(..*after).rev().take(n).copied().collect(),
            None => keys.iter().rev().take(n).copied().collect(),
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
            } => {
                if let Some(key) = key(*created_ms, aig) {
                    self.insert(publisher, key);
                }
            }
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
        for (org, ms, bits) in [("a", 3, 12), ("a", 1, id_bits(aig).unwrap()), ("b", -2, 7)] {
            l.insert(org, (ms, bits));
        }
        let bytes = l.encode();
        let mut e = crate::store::snapshot::Snapshot::new("t".into());
        e.put("l", bytes.clone());
        let back = Listing::decode(e.section("l").unwrap()).unwrap();
        assert_eq!(back.page("a", None, 9), l.page("a", None, 9));
        assert_eq!(back.page("b", None, 9), vec![(-2, 7)]);
        assert_eq!(super::aig(&back.page("a", None, 9)[1]), aig);
        assert!(back.contains("a", id_bits(aig).unwrap()));
        assert_eq!(back.newest(), Some(3));
        e.put("l", bytes[..bytes.len() - 1].to_vec());
        assert!(Listing::decode(e.section("l").unwrap()).is_none());
    }

    #[test]
    fn pages_walk_newest_first_without_repeats() {
        let l = Listing::default();
        for key in [(3, 0xc), (1, 0xa), (2, 0xb), (2, 0xbb)] {
            l.insert("org", key);
        }
        let first = l.page("org", None, 2);
        assert_eq!(first, vec![(3, 0xc), (2, 0xbb)]);
        let rest = l.page("org", first.last(), 10);
        assert_eq!(rest, vec![(2, 0xb), (1, 0xa)]);
        assert!(l.page("other", None, 5).is_empty());
    }

    #[test]
    fn membership_follows_inserts_and_removals() {
        let l = Listing::default();
        let aig = "aig:0123456789abcdef0123456789abcdef";
        let bits = id_bits(aig).unwrap();
        assert_eq!(id_bits("0123456789abcdef0123456789abcdef"), Some(bits));
        assert_eq!(id_bits("aig:0123"), None);
        assert_eq!(key(5, aig), Some((5, bits)));
        assert_eq!(key(5, "aig:0123"), None);
        assert!(!l.holds_any("org"));
        l.insert("org", (5, bits));
        assert!(l.contains("org", bits));
        assert!(!l.contains("other", bits));
        assert!(l.holds_any("org") && !l.holds_any("other"));
        l.remove("org", &(5, bits));
        assert!(!l.holds_any("org"), "none left after the removal");
        assert!(!l.contains("org", bits));
    }
}
