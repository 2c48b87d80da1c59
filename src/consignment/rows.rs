//! List rows kept in memory between reads. A row is read from the store with one point
//! look-up per fact (six seeks over RocksDB's levels: ~20 ms for a 50-row page at 100,000
//! consignments, docs/PERFORMANCE.md); the pages callers read again and again (the first ones,
//! the ones a client is paging through) are served from here instead.
//!
//! Correctness does not rest on invalidation timing: every record has a version, bumped under
//! the writer lock after each commit that changes its row (`Update`, any `Add`); a cached row
//! is served only while its version is the record's current one. A reader that read the store
//! before a commit and caches its row after the bump caches it under the old version, which is
//! never served. Versions are kept per slot, [`SLOTS`] of them, a record's slot taken from its
//! id's bits: memory that does not grow with the records changed since start-up (a version per
//! record did, without bound, on a long-running node), at the price of a change to one record
//! also retiring the cached row of any other in its slot — about one cached row in sixteen
//! changes, read again. Rows are kept rendered (the JSON text a list answers, copied into
//! pages as it is). Bounded: two generations of at most [`CAPACITY`]/2 rows each, the older
//! dropped when the newer fills (rows read since stay in the newer one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Rows kept at most (a rendered row is a few KB).
pub const CAPACITY: usize = 4_096;

/// Version slots (a power of two): 512 KB.
pub const SLOTS: usize = 1 << 16;

/// One list row's facts as stored.
#[derive(Debug, Clone)]
pub struct Row {
    pub aig: String,
    pub created: String,
    pub updated: String,
    /// The ConsignmentSummary columns built at intake (JSON).
    pub summary: String,
    /// The latest supply-chain event: type code and time.
    pub status: Option<(String, String)>,
}

#[derive(Default)]
pub struct Rows {
    state: Mutex<State>,
}

struct State {
    /// How often rows of each slot's records changed since start-up.
    versions: Box<[u64]>,
    newer: HashMap<u128, (u64, Arc<str>)>,
    older: HashMap<u128, (u64, Arc<str>)>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            versions: vec![0; SLOTS].into_boxed_slice(),
            newer: HashMap::new(),
            older: HashMap::new(),
        }
    }
}

/// The version slot of record `bits` (the id's low bits: random in the ids the node mints).
fn slot(bits: u128) -> usize {
    (bits as usize) & (SLOTS - 1)
}

/// A read's ticket: the record's version when the read started.
#[derive(Debug, Clone, Copy)]
pub struct Version(u64);

impl Rows {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached row of record `bits`, or the version to cache a row read now under.
    pub fn get(&self, bits: u128) -> Result<Arc<str>, Version> {
        let mut state = self.state();
        let current = state.versions[slot(bits)];
        if let Some((v, row)) = state.newer.get(&bits) {
            if *v == current {
                return Ok(row.clone());
            }
        }
        if let Some((v, row)) = state.older.remove(&bits) {
            if v == current {
                state.insert(bits, v, row.clone());
                return Ok(row);
            }
        }
        Err(Version(current))
    }

    /// Record `bits`'s version now: what another cache of things derived from the record (a
    /// Dataspace Protocol dataset) keys its entries with.
    pub fn version(&self, bits: u128) -> u64 {
        self.state().versions[slot(bits)]
    }

    /// Caches a row read from the store (rendered) after [`Rows::get`] answered `version`.
    pub fn put(&self, bits: u128, version: Version, row: String) -> Arc<str> {
        let row: Arc<str> = row.into();
        let mut state = self.state();
        if state.versions[slot(bits)] == version.0 {
            state.insert(bits, version.0, row.clone());
        }
        row
    }

    /// Records whose rows a commit changed (aig hex). Under the writer lock, after the commit.
    pub fn changed<'a>(&self, records: impl IntoIterator<Item = &'a str>) {
        let mut state = self.state();
        for hex in records {
            if let Some(bits) = super::listing::id_bits(hex) {
                state.versions[slot(bits)] += 1;
                state.newer.remove(&bits);
                state.older.remove(&bits);
            }
        }
    }
}

impl State {
    fn insert(&mut self, bits: u128, version: u64, row: Arc<str>) {
        if self.newer.len() >= CAPACITY / 2 {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(bits, (version, row));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(summary: &str) -> String {
        format!("{{\"summary\":\"{summary}\"}}")
    }

    const HEX: &str = "000000000000000000000000000000ff";

    #[test]
    fn a_row_read_before_a_change_is_never_served_after_it() {
        let rows = Rows::default();
        let bits = 0xff;
        let ticket = rows.get(bits).unwrap_err();
        rows.put(bits, ticket, row("v0"));
        assert_eq!(&*rows.get(bits).unwrap(), row("v0"));

        // A reader starts, the record changes, the reader caches what it read before.
        let stale = rows.get(bits).map(|_| ()).err();
        assert!(stale.is_none(), "served from the cache");
        let ticket = Version(0);
        rows.changed([HEX]);
        rows.put(bits, ticket, row("stale"));
        let fresh = rows.get(bits).expect_err("the stale row is not served");
        rows.put(bits, fresh, row("v1"));
        assert_eq!(&*rows.get(bits).unwrap(), row("v1"));
    }

    #[test]
    fn a_change_retires_the_rows_of_its_slot_only() {
        let rows = Rows::default();
        let (a, same_slot, other) = (0xff_u128, 0xff_u128 + SLOTS as u128, 0xfe_u128);
        for bits in [a, same_slot, other] {
            let v = rows.get(bits).unwrap_err();
            rows.put(bits, v, row(""));
        }
        rows.changed([HEX]);
        assert!(rows.get(a).is_err());
        assert!(rows.get(same_slot).is_err(), "its slot's version moved");
        assert!(rows.get(other).is_ok());
    }

    #[test]
    fn bounded_and_recently_read_rows_survive() {
        let rows = Rows::default();
        for bits in 0..CAPACITY as u128 * 2 {
            let v = rows.get(bits).unwrap_err();
            rows.put(bits, v, row(""));
            // Record 0 is read all along: it stays.
            assert!(rows.get(0).is_ok(), "at {bits}");
        }
        let state = rows.state();
        assert!(state.newer.len() + state.older.len() <= CAPACITY);
    }
}
