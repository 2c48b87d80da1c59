//! The store's write path: models in commit order, sealing, stamps, flushes, group commit.

use super::*;
use std::sync::atomic::AtomicU64;

use oxigraph::model::{GraphName, Quad};

#[derive(Default)]
struct Seen(Mutex<Vec<Committed>>);

impl ReadModel for Seen {
    fn apply(&self, event: &Committed) {
        self.0.lock().unwrap().push(event.clone());
    }
}

#[test]
fn models_see_committed_events_in_order_and_nothing_of_a_failed_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let seen = Arc::new(Seen::default());
    store.register(&seen);
    let row = |hex: &str| Committed::RowChanged {
        aig_hex: hex.into(),
    };
    let (_, events) = store
        .commit(|_, events| {
            events.push(row("a"));
            events.push(row("b"));
            Ok(())
        })
        .unwrap();
    assert_eq!(events.iter().count(), 2);
    let failed = store.commit(|_, events| {
        events.push(row("c"));
        Err::<(), _>(Error::Conflict("no".into()))
    });
    assert!(failed.is_err());
    store
        .commit(|_, events| {
            events.push(row("d"));
            Ok(())
        })
        .unwrap();
    assert_eq!(*seen.0.lock().unwrap(), vec![row("a"), row("b"), row("d")]);
    // A model the node dropped is no longer applied to, and keeps nothing alive.
    drop(seen);
    store
        .commit(|_, events| {
            events.push(row("e"));
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_sealed_token_is_spent_by_the_next_writer_and_kept_by_readers() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.snapshot_token(), None);
        let token = store.seal().unwrap();
        assert!(store.write(|_| Ok(())).is_err(), "sealed");
        drop(store);
        let reader = Store::open_read_only(dir.path()).unwrap();
        assert!(reader.write(|_| Ok(())).is_err(), "read only");
        drop(reader);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.snapshot_token(), Some(token.as_str()));
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.snapshot_token(), None, "spent by the open before");
}

#[test]
fn stamps_increase_strictly_even_within_a_millisecond() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let stamps: Vec<i64> = (0..10_000).map(|_| store.stamp()).collect();
    assert!(stamps.windows(2).all(|w| w[0] < w[1]));
    // A stored time ahead of the clock (it stepped back since) is followed, not repeated.
    let ahead = chrono::Utc::now().timestamp_millis() + 60_000;
    store.stamped_at_least(ahead);
    assert_eq!(store.stamp(), ahead + 1);
}

#[test]
fn flushes_once_enough_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(!store.flush_if_due().unwrap(), "nothing written");
    for i in 0..FLUSH_AFTER_WRITES {
        store
            .write(|tx| {
                let n = oxigraph::model::NamedNode::new_unchecked(format!("urn:x:{i}"));
                tx.insert(oxigraph::model::QuadRef::new(&n, &n, &n, &n));
                Ok(())
            })
            .unwrap();
        if i + 1 < FLUSH_AFTER_WRITES {
            assert_eq!(store.unflushed.load(Ordering::Relaxed), i + 1);
        }
    }
    assert!(store.flush_if_due().unwrap());
    assert!(!store.flush_if_due().unwrap(), "just flushed");
    assert_eq!(store.db().len().unwrap(), FLUSH_AFTER_WRITES as usize);
}

/// The number a commit took under the writer lock (its place in commit order), carried by
/// its event.
fn numbered(n: u64) -> Committed {
    Committed::RowChanged {
        aig_hex: n.to_string(),
    }
}

fn number(event: &Committed) -> u64 {
    match event {
        Committed::RowChanged { aig_hex } => aig_hex.parse().unwrap(),
        Committed::PolicyRemoved { uid } => uid.parse().unwrap(),
        other => panic!("{other:?}"),
    }
}

/// Runs `write(w, i)` for `per` values of `i` on each of `threads` threads at once.
fn at_once(threads: u64, per: u64, write: impl Fn(u64, u64) + Sync) {
    std::thread::scope(|s| {
        for w in 0..threads {
            let write = &write;
            s.spawn(move || (0..per).for_each(|i| write(w, i)));
        }
    });
}

/// Eight writers at once, 50 commits each: the models see every commit once, in commit order,
/// and each only once the log holding it was synced (the number of syncs run is read as the
/// model applies it: at least one began after the commit).
#[test]
fn concurrent_writers_reach_the_models_in_commit_order_each_after_a_sync_covering_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    #[derive(Default)]
    struct Synced {
        store: std::sync::OnceLock<Weak<Store>>,
        /// Syncs finished when each commit was made, by commit number.
        at_commit: Mutex<std::collections::HashMap<u64, u64>>,
        seen: Mutex<Vec<(u64, bool)>>,
    }
    impl ReadModel for Synced {
        fn apply(&self, event: &Committed) {
            let n = number(event);
            let store = self.store.get().unwrap().upgrade().unwrap();
            let before = self.at_commit.lock().unwrap()[&n];
            let synced = store.group.syncs() > before;
            self.seen.lock().unwrap().push((n, synced));
        }
    }
    let model = Arc::new(Synced::default());
    model.store.set(Arc::downgrade(&store)).unwrap();
    store.register(&model);
    let next = AtomicU64::new(0);
    at_once(8, 50, |w, i| {
        store
            .commit(|tx, events| {
                let n = next.fetch_add(1, Ordering::SeqCst) + 1;
                let s = NamedNode::new_unchecked(format!("urn:x:{w}:{i}"));
                tx.insert(oxigraph::model::QuadRef::new(&s, &s, &s, &s));
                model
                    .at_commit
                    .lock()
                    .unwrap()
                    .insert(n, store.group.syncs());
                events.push(numbered(n));
                Ok(())
            })
            .unwrap();
    });
    let seen = model.seen.lock().unwrap();
    let order: Vec<u64> = seen.iter().map(|(n, _)| *n).collect();
    assert_eq!(order, (1..=400).collect::<Vec<_>>());
    assert!(
        seen.iter().all(|(_, synced)| *synced),
        "applied before a sync"
    );
    let stats = store.write_stats();
    assert_eq!(stats.commits, 400);
    assert!(stats.syncs <= 400);
    assert_eq!(store.db().len().unwrap(), 400);
}

/// A commit whose model a later writer reads under the lock (a policy's, routing reads the
/// policies) is applied before the lock passes on: each writer, under the lock, finds every
/// such commit before it in the model — also while other writers' commits wait for their
/// shared sync.
#[test]
fn a_commit_later_writers_read_is_in_the_models_before_the_next_writer_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let seen = Arc::new(Seen::default());
    store.register(&seen);
    let next = AtomicU64::new(0);
    at_once(8, 40, |_, _| {
        store
            .commit(|_, events| {
                let n = next.fetch_add(1, Ordering::SeqCst) + 1;
                let read: Vec<u64> = seen
                    .0
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|e| e.read_by_writers())
                    .map(number)
                    .collect();
                // Every third commit is one later writers read.
                let expected: Vec<u64> = (1..n).filter(|k| k.is_multiple_of(3)).collect();
                assert_eq!(read, expected, "commit {n} under the lock");
                events.push(if n.is_multiple_of(3) {
                    Committed::PolicyRemoved { uid: n.to_string() }
                } else {
                    numbered(n)
                });
                Ok(())
            })
            .unwrap();
    });
    let all: Vec<u64> = seen.0.lock().unwrap().iter().map(number).collect();
    assert_eq!(all, (1..=320).collect::<Vec<_>>());
}

/// Sealing makes every commit before it durable and applied, whether or not its writer has
/// been answered yet: the models saved with the token hold them all.
#[test]
fn sealing_applies_every_commit_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let seen = Arc::new(Seen::default());
    store.register(&seen);
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut made = 0;
                for i in 0..100u64 {
                    let done = store.commit(|_, events| {
                        events.push(numbered(w * 1000 + i));
                        Ok(())
                    });
                    if done.is_err() {
                        break;
                    }
                    made += 1;
                }
                made
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(5));
    store.seal().unwrap();
    let applied_at_seal = seen.0.lock().unwrap().len();
    let made: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(
        applied_at_seal, made,
        "every commit before the seal is in the models"
    );
    assert_eq!(store.write_stats().commits as usize, made);
}

/// What a write put ahead of the lock is gone at the next open when no transaction took it
/// (the process died in between), taken by the transaction that settles it, and removed by
/// one that settles it without taking it.
#[test]
fn quads_written_ahead_are_the_transactions_or_gone() {
    let dir = tempfile::tempdir().unwrap();
    let graph = |n: u32| NamedNode::new_unchecked(format!("urn:dataspace-node:contribution:{n}"));
    let quads = |n: u32| -> Vec<Quad> {
        (0..5)
            .map(|i| {
                let s = NamedNode::new_unchecked(format!("urn:x:{n}:{i}"));
                Quad::new(s.clone(), s.clone(), s, GraphName::NamedNode(graph(n)))
            })
            .collect()
    };
    let in_graph = |store: &Store, n: u32| {
        store
            .db()
            .quads_for_pattern(None, None, None, Some(graph(n).as_ref().into()))
            .count()
    };
    {
        let store = Store::open(dir.path()).unwrap();
        // Taken: the transaction owns them, the note goes.
        let ahead = store.write_ahead(&graph(1), quads(1)).unwrap();
        assert_eq!(in_graph(&store, 1), 5, "readable before the transaction");
        store
            .write(|tx| {
                assert_eq!(ahead.adopt(), 5);
                ahead.settle(tx)
            })
            .unwrap();
        // Settled without being taken (a failed task, a replay): removed with the note.
        let ahead = store.write_ahead(&graph(2), quads(2)).unwrap();
        store.write(|tx| ahead.settle(tx)).unwrap();
        // A write that failed: discarded at once.
        let ahead = store.write_ahead(&graph(3), quads(3)).unwrap();
        store.discard(&ahead).unwrap();
        // No transaction at all: the process stops here.
        store.write_ahead(&graph(4), quads(4)).unwrap();
        assert_eq!(in_graph(&store, 4), 5);
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(in_graph(&store, 1), 5);
    for n in 2..=4 {
        assert_eq!(in_graph(&store, n), 0, "graph {n}");
    }
    let notes = store
        .db()
        .quads_for_pattern(None, None, None, Some(bulk::notes_graph().as_ref().into()))
        .count();
    assert_eq!(notes, 0);
    // No empty graph stays listed either.
    let listed: Vec<String> = store
        .db()
        .named_graphs()
        .map(|g| g.unwrap().to_string())
        .filter(|g| g.contains(":contribution:"))
        .collect();
    assert_eq!(listed, ["<urn:dataspace-node:contribution:1>"]);
    // Sealed: nothing is written ahead either.
    store.seal().unwrap();
    assert!(store.write_ahead(&graph(5), quads(5)).is_err());
}
