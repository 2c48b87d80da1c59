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

/// Stores batch `b` as the journal does, told to `orgs`.
fn put(store: &Store, b: &Batch, orgs: &[&str]) {
    store
        .write(|tx| {
            tx.insert(&b.quad());
            b.index(orgs).iter().for_each(|q| {
                tx.insert(q);
            });
            Ok(())
        })
        .unwrap();
}

/// The quads the deliveries' graph holds.
fn quads_left(store: &Store) -> usize {
    store
        .db()
        .quads_for_pattern(None, None, None, Some(queue::graph().as_ref().into()))
        .count()
}

/// What is written of deliveries lands in their places in the batch, each batch rewritten
/// once, and the log's index finds the batch by each organisation told.
#[test]
fn deliveries_written_stay_in_their_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let b = batch(&["s1", "s2", "s3"]);
    put(&store, &b, &["org:a", "org:b"]);
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
    assert_eq!(quads_left(&store), 0);
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

/// Successes are recorded beside their batch, not in it: reads apply them (a success whose
/// attempt began before a retry leaves its delivery to be sent), a rewrite folds them in and
/// drops their records, and none is recorded for a batch that is gone.
#[test]
fn successes_recorded_beside_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut b = batch(&["s1", "s2", "s3"]);
    // The third was asked for again after its attempt read it.
    b.to[2].state.resets = 1;
    put(&store, &b, &["org:a"]);
    let found = |n: usize| {
        Recent::default()
            .found_now(store.db(), &b.delivery_id(n))
            .unwrap()
            .unwrap()
            .state
    };
    let records = || {
        store
            .db()
            .quads_for_pattern(None, Some(dsn("delivered").as_ref()), None, None)
            .count()
    };
    let record = |done: Vec<Success>| store.write(|tx| record_successes(tx, &b.id, &done));
    let t = |s: &str| format!("2026-11-28T00:00:0{s}Z");
    assert!(record(vec![Success(0, 200, t("1"), 0), Success(2, 204, t("2"), 0)]).unwrap());
    assert!(record(vec![Success(1, 202, t("3"), 0)]).unwrap());
    assert_eq!(records(), 2);
    let first = found(0);
    assert_eq!((first.attempts, first.last_status), (1, Some(200)));
    assert_eq!(first.delivered_at, Some(t("1")));
    assert_eq!(found(1).delivered_at, Some(t("3")));
    let third = found(2);
    assert_eq!((third.attempts, third.last_status), (1, Some(204)));
    assert_eq!(third.delivered_at, None);

    // A rewrite keeps what the records said, in the batch itself.
    let gone = store
        .write(|tx| retain_in(tx, &b.id, |p| p.n != 2))
        .unwrap();
    assert_eq!(gone, 1);
    assert_eq!(records(), 0);
    assert_eq!(found(0), first);
    assert_eq!(found(1).delivered_at, Some(t("3")));
    assert_eq!(all(store.db()).unwrap()[0].to.len(), 2);

    store
        .write(|tx| {
            remove(tx, &b.id);
            Ok(())
        })
        .unwrap();
    assert!(!record(vec![Success(0, 200, t("4"), 0)]).unwrap());
    assert_eq!(quads_left(&store), 0);
}

#[test]
fn a_delivery_id_names_its_batch() {
    let b = batch(&[]);
    let id = b.delivery_id(17);
    assert_eq!(batch_of(&id), Some(b.id.as_str()));
    assert_eq!(batch_of("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"), None);
    assert_eq!(batch_of("msg_abc_x"), None);
}
