//! How many notices each partner node may send in a minute. A partner that may announce any
//! number of consignments filled an agency's lists and notifications with 1,500 forged shares
//! in moments; past the cap its notices get 429 with `Retry-After`, which its outbox honours by
//! trying again later, so an honest burst is delayed rather than lost.
//!
//! Counted over a sliding minute (the times of the notices admitted in it), so no minute ever
//! admits more than the cap — a fixed window lets twice the cap through across its edge. Kept
//! in memory: a restart forgets it, which only ever lets a partner send sooner.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);
/// Nodes whose minute is over are dropped when the map grows past this (with `*` as the
/// partner list, any node that signs a valid token gets an entry).
const SWEEP_AT: usize = 1_024;

pub struct NoticeRate {
    per_minute: usize,
    admitted: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl NoticeRate {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: (per_minute as usize).max(1),
            admitted: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a notice of partner node `node`, or refuses it with the seconds until the
    /// node may send one again.
    pub fn admit(&self, node: &str) -> Result<(), u64> {
        self.admit_at(node, Instant::now())
    }

    fn admit_at(&self, node: &str, now: Instant) -> Result<(), u64> {
        let mut admitted = self.admitted.lock().unwrap_or_else(|p| p.into_inner());
        if admitted.len() > SWEEP_AT {
            admitted.retain(|_, times| times.back().is_some_and(|t| now - *t < WINDOW));
        }
        let times = admitted.entry(node.to_owned()).or_default();
        while times.front().is_some_and(|t| now - *t >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= self.per_minute {
            let oldest = *times.front().expect("a full window holds a notice");
            let wait = WINDOW - (now - oldest);
            return Err(wait.as_secs_f64().ceil().max(1.0) as u64);
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_sends_at_most_the_cap_in_any_minute() {
        let rate = NoticeRate::new(3);
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        for secs in [0, 10, 20] {
            assert_eq!(rate.admit_at("did:web:c", at(secs)), Ok(()));
        }
        // Full until the first of them is a minute old.
        assert_eq!(rate.admit_at("did:web:c", at(30)), Err(30));
        assert_eq!(rate.admit_at("did:web:c", at(59)), Err(1));
        // Another node has a minute of its own.
        assert_eq!(rate.admit_at("did:web:d", at(30)), Ok(()));
        // The first leaves the window: room for one, not for three.
        assert_eq!(rate.admit_at("did:web:c", at(60)), Ok(()));
        assert_eq!(rate.admit_at("did:web:c", at(61)), Err(9));
        // A refused notice is not counted.
        assert_eq!(rate.admit_at("did:web:c", at(70)), Ok(()));
    }

    #[test]
    fn nodes_whose_minute_is_over_are_swept() {
        let rate = NoticeRate::new(1);
        let start = Instant::now();
        for n in 0..=SWEEP_AT {
            rate.admit_at(&format!("did:web:n{n}"), start).unwrap();
        }
        rate.admit_at("did:web:late", start + WINDOW).unwrap();
        assert_eq!(rate.admitted.lock().unwrap().len(), 1);
    }
}
