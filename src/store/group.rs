//! Group commit: writers commit one at a time under the writer lock, and share the sync of
//! the write-ahead log after it. A writer is answered — and the read models see its events —
//! only once a sync that began after its commit has finished; the models still apply the
//! commits in commit order.
//!
//! Why it holds (docs/ARCHITECTURE.md, "Group commit" gives the whole argument): a commit's
//! number is taken under the writer lock right after RocksDB accepted its batch, so numbers
//! follow commit order. A sync first reads the highest number given, then syncs; everything
//! RocksDB appended to the log before the sync began is durable when it returns, so every
//! commit up to that number is. One sync runs at a time, and the writer running it applies,
//! in number order, the events of every commit it covers before the next sync may begin — so
//! the models see commits in commit order, each once. A writer whose commit came after a sync
//! began waits for the next one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::events::Events;

#[derive(Default)]
pub struct Group {
    state: Mutex<State>,
    done: Condvar,
    /// Syncs run since the store opened (`/metrics`).
    syncs: AtomicU64,
}

#[derive(Default)]
struct State {
    /// The last commit number given.
    committed: u64,
    /// Commits synced and applied to the models, up to this number.
    applied: u64,
    /// A sync (and the models' application after it) is under way.
    syncing: bool,
    /// Events of commits not yet applied, in commit order.
    queue: VecDeque<(u64, Arc<Events>)>,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a commit RocksDB accepted, with the events the models are to apply. Called
    /// under the writer lock, so numbers follow commit order. Returns the commit's number.
    /// The group lets its share of `events` go before [`Group::durable`] returns for it.
    pub fn committed(&self, events: Arc<Events>) -> u64 {
        let mut state = self.lock();
        state.committed += 1;
        let seq = state.committed;
        state.queue.push_back((seq, events));
        seq
    }

    /// The number of the last commit noted.
    #[cfg(test)]
    pub fn last(&self) -> u64 {
        self.lock().committed
    }

    /// Returns once commit `seq` is synced and its events applied: runs a sync (`sync`) and
    /// applies the events it covers (`apply`, in commit order) when no other writer is doing
    /// so, else waits for the one that is and, if that did not cover `seq`, runs the next.
    pub fn durable(&self, seq: u64, sync: impl Fn(), apply: impl Fn(&Events)) {
        let mut state = self.lock();
        loop {
            if state.applied >= seq {
                return;
            }
            if state.syncing {
                state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.syncing = true;
            let target = state.committed;
            drop(state);
            sync();
            self.syncs.fetch_add(1, Ordering::Relaxed);
            let covered: Vec<Arc<Events>> = {
                let mut state = self.lock();
                let n = state.queue.iter().take_while(|(s, _)| *s <= target).count();
                state.queue.drain(..n).map(|(_, events)| events).collect()
            };
            // Outside the state's lock: writers go on committing while the models catch up;
            // no other sync begins before `syncing` is cleared, so the order holds.
            for events in &covered {
                apply(events);
            }
            // Before the writers are woken: each gets its events back whole.
            drop(covered);
            state = self.lock();
            state.applied = target;
            state.syncing = false;
            self.done.notify_all();
        }
    }

    /// Syncs run since the store opened.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    /// Five writers: the first one's sync is held until the four others have committed. That
    /// sync covers only the first (it began before the others committed), the next covers the
    /// four others, and no writer returns before a finished sync covers its commit.
    #[test]
    fn one_sync_answers_every_writer_committed_before_it_and_none_before_its_sync() {
        let group = Arc::new(Group::default());
        let synced = Arc::new(AtomicU64::new(0));
        let held = Arc::new(Barrier::new(2));
        let committed = Arc::new(Barrier::new(5));
        let first = {
            let (g, synced, held, committed) = (
                group.clone(),
                synced.clone(),
                held.clone(),
                committed.clone(),
            );
            std::thread::spawn(move || {
                let seq = g.committed(Arc::default());
                let first_sync = AtomicU64::new(0);
                let sync = || {
                    // What a sync covers is read before it begins.
                    let covers = g.last();
                    if first_sync.fetch_add(1, Ordering::SeqCst) == 0 {
                        held.wait();
                        committed.wait();
                    }
                    synced.fetch_max(covers, Ordering::SeqCst);
                };
                g.durable(seq, sync, |_| {});
                assert!(synced.load(Ordering::SeqCst) >= seq);
            })
        };
        // The first writer's sync has begun: the others commit behind it.
        held.wait();
        let others: Vec<_> = (0..4)
            .map(|_| {
                let (g, synced, committed) = (group.clone(), synced.clone(), committed.clone());
                std::thread::spawn(move || {
                    let seq = g.committed(Arc::default());
                    committed.wait();
                    let sync = || {
                        synced.fetch_max(g.last(), Ordering::SeqCst);
                    };
                    g.durable(seq, sync, |_| {});
                    assert!(
                        synced.load(Ordering::SeqCst) >= seq,
                        "answered before its sync"
                    );
                })
            })
            .collect();
        first.join().unwrap();
        for w in others {
            w.join().unwrap();
        }
        assert_eq!(
            group.syncs(),
            2,
            "one sync for the first, one for the four others"
        );
    }

    /// Concurrent writers: the models get every commit's events once, in commit order, and
    /// fewer syncs than commits are made.
    #[test]
    fn events_are_applied_once_each_in_commit_order() {
        for _ in 0..20 {
            let group = Arc::new(Group::default());
            let writer = Arc::new(Mutex::new(0u64));
            let applied = Arc::new(Mutex::new(Vec::new()));
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (g, writer, applied) = (group.clone(), writer.clone(), applied.clone());
                    std::thread::spawn(move || {
                        for _ in 0..50 {
                            // As under the store's writer lock: the commit and its number are
                            // taken together.
                            let seq = {
                                let mut n = writer.lock().unwrap();
                                *n += 1;
                                let mut events = Events::default();
                                events.routing = Duration::from_nanos(*n);
                                g.committed(Arc::new(events))
                            };
                            g.durable(seq, std::thread::yield_now, |e| {
                                applied.lock().unwrap().push(e.routing)
                            });
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            let applied = applied.lock().unwrap();
            let expected: Vec<Duration> = (1..=400).map(Duration::from_nanos).collect();
            assert_eq!(*applied, expected);
            assert!(group.syncs() <= 400);
        }
    }
}
