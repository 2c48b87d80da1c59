//! Fair shares of the node's blocking work between the parties that ask for it (organisations,
//! the operator, partner nodes), and a cap on one party's inbox work in flight.
//!
//! [`Fair`] admits blocking work into a fixed number of slots — about what the machine runs at
//! once. While a slot is free, work takes it at once. When none is, work waits (asynchronously:
//! no thread is held) in its party's queue, and each slot that frees goes to the waiting party
//! with the fewest slots held, parties tied taking turns: a party that sends thirty-two requests
//! at once waits behind itself, and another's request gets the next slot. A waiter dropped (its
//! client gone) leaves the queue; a slot is given back when its work ends, whoever waited for
//! it. While several parties are active, each holds at most its share of the cores' worth of
//! slots ([`Fair::sharing_cores`]). The same order gives the inbox's writes their turns at the writer lock, one slot waited
//! for on a blocking thread ([`Fair::slot_blocking`]). Why order, fairness and progress hold:
//! docs/ARCHITECTURE.md, "Fair shares of the blocking work".

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::Result;

mod limit;
pub use limit::{Admitted, Limit};

/// Slots of blocking work shared out between parties.
#[derive(Clone)]
pub struct Fair {
    shared: Arc<Shared>,
}

struct Shared {
    slots: usize,
    /// The machine's cores, when shares of them are kept ([`Fair::sharing_cores`]).
    cores: Option<usize>,
    state: Mutex<State>,
}

/// A party that asked for a slot within this long counts as active.
const ACTIVE: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    /// Slots held.
    busy: usize,
    /// Parties holding slots or waiting for one (no others).
    parties: HashMap<String, Party>,
    /// The parties with waiting work, in turn order: a party served goes to the back.
    turns: VecDeque<String>,
    next_id: u64,
    /// When each party last asked for a slot (kept for [`ACTIVE`]).
    asked: HashMap<String, Instant>,
}

#[derive(Default)]
struct Party {
    held: usize,
    /// Waiting work, first come first served within the party.
    waiting: VecDeque<(u64, oneshot::Sender<()>)>,
}

/// A slot held; given back when dropped.
pub struct Slot {
    shared: Arc<Shared>,
    key: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.give_back(&self.key, self.shared.slots, self.shared.cores);
    }
}

/// Work waiting for a slot: dropped before it got one, it leaves the queue; dropped after
/// the slot was handed to it but before it saw so, it gives the slot back.
struct Waiting {
    shared: Arc<Shared>,
    key: String,
    id: u64,
    served: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        let mut state = self.shared.lock();
        if !state.withdraw(&self.key, self.id) {
            state.give_back(&self.key, self.shared.slots, self.shared.cores);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent after every statement that could panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Fair {
    /// `slots` pieces of work at once (at least one).
    pub fn new(slots: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                slots: slots.max(1),
                cores: None,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Keeps shares of the `cores`: while several parties are active, one holds at most its
    /// part of the cores' worth of slots (at least one), so that a party flooding the node
    /// leaves cores to the others instead of only slots (threads sharing two busy cores with
    /// four of the flood's ran several times slower). Alone, a party may take every slot.
    pub fn sharing_cores(self, cores: usize) -> Self {
        let shared = Shared {
            slots: self.shared.slots,
            cores: Some(cores.max(1)),
            state: Mutex::new(State::default()),
        };
        Self {
            shared: Arc::new(shared),
        }
    }

    /// Slots for `cores` cores: four each. Blocking work is not all CPU (RocksDB reads that
    /// miss the cache, a commit's sync, inbox work waiting for the writer lock), and with four
    /// per core one organisation's inbox work (`--inbox-max-concurrent-per-org`, 4) leaves
    /// slots free on a two-core machine.
    pub fn slots_for(cores: usize) -> usize {
        cores.max(1) * 4
    }

    pub fn slots(&self) -> usize {
        self.shared.slots
    }

    /// A slot for work of party `key`: at once while one is free, else when its turn comes.
    /// Cancellation-safe: dropped while waiting, the request leaves the queue.
    pub async fn slot(&self, key: &str) -> Slot {
        match self.ask(key) {
            Ok(slot) => slot,
            Err((mut waiting, ready)) => {
                // The sender is only ever dropped after sending: a waiter leaves the queue
                // through `Waiting` alone.
                let _ = ready.await;
                waiting.served = true;
                self.held(key)
            }
        }
    }

    /// [`Fair::slot`] for code on a blocking thread (never in async code): the thread waits
    /// for the turn.
    pub fn slot_blocking(&self, key: &str) -> Slot {
        match self.ask(key) {
            Ok(slot) => slot,
            Err((mut waiting, ready)) => {
                let _ = ready.blocking_recv();
                waiting.served = true;
                self.held(key)
            }
        }
    }

    /// A free slot, or the request queued: how it learns of its turn.
    fn ask(&self, key: &str) -> std::result::Result<Slot, (Waiting, oneshot::Receiver<()>)> {
        let mut state = self.shared.lock();
        let cap = state.note_asked(key, self.shared.cores, Instant::now());
        let held = state.parties.get(key).map_or(0, |p| p.held);
        if state.busy < self.shared.slots && held < cap {
            state.busy += 1;
            state.parties.entry(key.to_owned()).or_default().held += 1;
            return Ok(self.held(key));
        }
        state.next_id += 1;
        let id = state.next_id;
        let (tx, rx) = oneshot::channel();
        let party = state.parties.entry(key.to_owned()).or_default();
        party.waiting.push_back((id, tx));
        if party.waiting.len() == 1 {
            state.turns.push_back(key.to_owned());
        }
        let waiting = Waiting {
            shared: self.shared.clone(),
            key: key.to_owned(),
            id,
            served: false,
        };
        Err((waiting, rx))
    }

    fn held(&self, key: &str) -> Slot {
        Slot {
            shared: self.shared.clone(),
            key: key.to_owned(),
        }
    }

    /// Runs `f` on tokio's blocking pool once party `key` has a slot; the slot goes with the
    /// work, so a caller gone meanwhile does not free it before the work ends.
    pub async fn run<T: Send + 'static>(
        &self,
        key: &str,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let slot = self.slot(key).await;
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            f()
        })
        .await?
    }
}

impl State {
    /// Notes that `key` asked now; the most slots one party may hold while the parties
    /// active now share the cores (no bound without cores, or with one party active).
    fn note_asked(&mut self, key: &str, cores: Option<usize>, now: Instant) -> usize {
        self.asked.insert(key.to_owned(), now);
        self.cap(cores, now)
    }

    fn cap(&mut self, cores: Option<usize>, now: Instant) -> usize {
        let Some(cores) = cores else {
            return usize::MAX;
        };
        self.asked.retain(|_, at| now.duration_since(*at) < ACTIVE);
        match self.asked.len() {
            0 | 1 => usize::MAX,
            active => (cores / active).max(1),
        }
    }

    /// Party `key`'s slot freed: it goes to the next waiting party, or becomes free.
    fn give_back(&mut self, key: &str, slots: usize, cores: Option<usize>) {
        if let Some(party) = self.parties.get_mut(key) {
            party.held = party.held.saturating_sub(1);
            if party.held == 0 && party.waiting.is_empty() {
                self.parties.remove(key);
            }
        }
        self.busy = self.busy.saturating_sub(1);
        self.fill(slots, cores);
    }

    /// Hands free slots to waiting parties below their share, as long as both last: a party
    /// whose share grew (another went quiet) is given the slots it may hold now.
    fn fill(&mut self, slots: usize, cores: Option<usize>) {
        let cap = self.cap(cores, Instant::now());
        while self.busy < slots {
            let Some(next) = self.next_turn(cap) else {
                return;
            };
            let party = self
                .parties
                .get_mut(&next)
                .expect("a party with waiting work");
            let (_, ready) = party.waiting.pop_front().expect("waiting work");
            party.held += 1;
            self.busy += 1;
            if !party.waiting.is_empty() {
                self.turns.push_back(next);
            }
            // A receiver already gone is a waiter being dropped: it finds itself out of
            // the queue and gives the slot back.
            let _ = ready.send(());
        }
    }

    /// The waiting party holding the fewest slots (below `cap`), the earliest in turn order
    /// among those; taken out of the turns.
    fn next_turn(&mut self, cap: usize) -> Option<String> {
        let held = |key: &String| self.parties.get(key).map_or(0, |p| p.held);
        let (at, _) = self
            .turns
            .iter()
            .enumerate()
            .filter(|(_, key)| held(key) < cap)
            .min_by_key(|&(i, key)| (held(key), i))?;
        self.turns.remove(at)
    }

    /// Takes waiter `id` of party `key` out of the queue; false when it was not there (it
    /// was given a slot).
    fn withdraw(&mut self, key: &str, id: u64) -> bool {
        let Some(party) = self.parties.get_mut(key) else {
            return false;
        };
        let Some(at) = party.waiting.iter().position(|(w, _)| *w == id) else {
            return false;
        };
        party.waiting.remove(at);
        if party.waiting.is_empty() {
            self.turns.retain(|k| k != key);
            if party.held == 0 {
                self.parties.remove(key);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests;
