//! The scheduler's order, cancellation and progress, driven step by step: each waiter is
//! polled by hand, so what is served when is decided by the code alone, not by timing. Outside
//! a tokio runtime, so that no cooperative budget turns a ready waiter into a pending one.

use std::future::Future;
use std::pin::Pin;

use futures_util::FutureExt;

use super::*;
use crate::error::Error;

type Waiter = Pin<Box<dyn Future<Output = Slot> + Send>>;

/// A request for a slot of `key`, polled once so that it is queued (or served) now.
fn ask(fair: &Fair, key: &str) -> (Waiter, Option<Slot>) {
    let fair = fair.clone();
    let key = key.to_owned();
    let mut waiter: Waiter = Box::pin(async move { fair.slot(&key).await });
    let served = (&mut waiter).now_or_never();
    (waiter, served)
}

fn held(fair: &Fair) -> Slot {
    let (_, slot) = ask(fair, "holder");
    slot.expect("a free slot")
}

/// Checks what holds between any two steps: slots held within the limit and counted per
/// party, the turns naming exactly the parties with waiting work, no slot idle while work
/// waits.
fn check(fair: &Fair) {
    let state = fair.shared.lock();
    assert!(state.busy <= fair.slots());
    assert_eq!(
        state.busy,
        state.parties.values().map(|p| p.held).sum::<usize>()
    );
    let waiting: Vec<&String> = state
        .parties
        .iter()
        .filter(|(_, p)| !p.waiting.is_empty())
        .map(|(k, _)| k)
        .collect();
    assert_eq!(waiting.len(), state.turns.len());
    assert!(waiting.iter().all(|k| state.turns.contains(k)));
    if !waiting.is_empty() {
        assert_eq!(state.busy, fair.slots(), "a slot idle while work waits");
    }
    assert!(state
        .parties
        .values()
        .all(|p| p.held > 0 || !p.waiting.is_empty()));
}

#[test]
fn free_slots_are_taken_at_once_and_the_next_request_waits() {
    let fair = Fair::new(2);
    let (_, a) = ask(&fair, "a");
    let (_, b) = ask(&fair, "a");
    assert!(a.is_some() && b.is_some());
    let (mut third, served) = ask(&fair, "b");
    assert!(served.is_none());
    check(&fair);
    drop(a);
    assert!((&mut third).now_or_never().is_some());
    check(&fair);
}

/// Serves the waiters one slot at a time (each served slot freed before the next) and
/// returns the parties in the order they were served.
fn serve_in_turn(fair: &Fair, first: Slot, mut waiters: Vec<(&'static str, Waiter)>) -> String {
    let mut order = String::new();
    let mut current = first;
    while !waiters.is_empty() {
        drop(current);
        check(fair);
        let mut served = None;
        for (i, (key, waiter)) in waiters.iter_mut().enumerate() {
            if let Some(slot) = waiter.now_or_never() {
                assert!(served.is_none(), "two served for one freed slot");
                served = Some((i, *key, slot));
            }
        }
        let (i, key, slot) = served.expect("someone served");
        drop(waiters.remove(i));
        order.push_str(key);
        current = slot;
    }
    order
}

#[test]
fn parties_take_turns_and_a_party_is_served_in_arrival_order() {
    let fair = Fair::new(1);
    let first = held(&fair);
    let mut waiters = Vec::new();
    // Six of a, then two each of b and c: a asked first but gets one turn in three.
    for key in ["a", "a", "a", "a", "a", "a", "b", "c", "b", "c"] {
        let (waiter, served) = ask(&fair, key);
        assert!(served.is_none());
        waiters.push((key, waiter));
    }
    check(&fair);
    assert_eq!(serve_in_turn(&fair, first, waiters), "abcabcaaaa");
}

#[test]
fn the_next_slot_goes_to_the_party_holding_the_fewest() {
    let fair = Fair::new(3);
    let a1 = ask(&fair, "a").1.unwrap();
    let a2 = ask(&fair, "a").1.unwrap();
    let b1 = ask(&fair, "b").1.unwrap();
    // a floods; b and c arrive after it.
    let (mut a3, _) = ask(&fair, "a");
    let (mut b2, _) = ask(&fair, "b");
    let (mut c1, _) = ask(&fair, "c");
    check(&fair);
    // a's slot frees: a and b hold one each, c none, so c is next although it asked last.
    drop(a1);
    let c1 = (&mut c1).now_or_never().expect("c served");
    assert!((&mut a3).now_or_never().is_none() && (&mut b2).now_or_never().is_none());
    // b's frees: b holds none now, a one, so b — a waits behind itself, not others behind it.
    drop(b1);
    let b2 = (&mut b2).now_or_never().expect("b served");
    assert!((&mut a3).now_or_never().is_none());
    drop(c1);
    assert!((&mut a3).now_or_never().is_some());
    drop((a2, b2));
    check(&fair);
}

#[test]
fn a_waiter_dropped_leaves_the_queue() {
    let fair = Fair::new(1);
    let first = held(&fair);
    let (gone, _) = ask(&fair, "a");
    let (mut next, _) = ask(&fair, "b");
    drop(gone);
    check(&fair);
    drop(first);
    let slot = (&mut next).now_or_never().expect("b served, a having left");
    drop(slot);
    check(&fair);
    assert!(fair.shared.lock().parties.is_empty());
    assert_eq!(fair.shared.lock().busy, 0);
}

#[test]
fn a_waiter_dropped_once_served_gives_its_slot_back() {
    let fair = Fair::new(1);
    let first = held(&fair);
    let (served_unseen, _) = ask(&fair, "a");
    drop(first);
    // The slot is a's now, but a's client left before it was polled again.
    drop(served_unseen);
    check(&fair);
    let (_, slot) = ask(&fair, "b");
    assert!(slot.is_some(), "the slot came back");
}

#[test]
fn a_blocking_thread_waits_for_its_turn_in_order() {
    let fair = Fair::new(1);
    let first = held(&fair);
    // Queued in this order before the slot frees: the thread's "b" after "a".
    let (mut a, _) = ask(&fair, "a");
    let waiter = {
        let fair = fair.clone();
        std::thread::spawn(move || fair.slot_blocking("b"))
    };
    // Until the thread's request is queued (no time involved: the state says when).
    while fair.shared.lock().turns.len() < 2 {
        std::thread::yield_now();
    }
    drop(first);
    let a = (&mut a).now_or_never().expect("a first");
    drop(a);
    let b = waiter.join().expect("b served");
    drop(b);
    assert_eq!(fair.shared.lock().busy, 0);
}

#[tokio::test]
async fn run_uses_a_slot_for_the_work_and_gives_it_back() {
    let fair = Fair::new(1);
    let out = fair.run("a", || Ok(41 + 1)).await.unwrap();
    assert_eq!(out, 42);
    let failed = fair
        .run("a", || -> Result<()> { Err(Error::bad_request("no")) })
        .await;
    assert!(matches!(failed, Err(Error::BadRequest { .. })));
    assert_eq!(fair.shared.lock().busy, 0);
}

/// A deterministic mix of arrivals, departures and completions from parties of unequal
/// appetite: after every step the invariants hold, nobody waits forever (everything asked for
/// is served once the work drains), and no party is served twice in a row while another,
/// holding no more, waits.
#[test]
fn nobody_starves_under_a_mix_of_arrivals_drops_and_completions() {
    let fair = Fair::new(3);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let parties = ["flood", "flood", "flood", "flood", "b", "c", "d"];
    let mut waiting: Vec<(String, Waiter)> = Vec::new();
    let mut running: Vec<(String, Slot)> = Vec::new();
    for _ in 0..5000 {
        match next(10) {
            0..=4 => {
                let key = parties[next(parties.len() as u64) as usize];
                let (waiter, served) = ask(&fair, key);
                match served {
                    Some(slot) => running.push((key.into(), slot)),
                    None => waiting.push((key.into(), waiter)),
                }
            }
            5 if !waiting.is_empty() => {
                drop(waiting.remove(next(waiting.len() as u64) as usize));
            }
            _ if !running.is_empty() => {
                drop(running.remove(next(running.len() as u64) as usize));
                collect(&fair, &mut waiting, &mut running);
            }
            _ => {}
        }
        check(&fair);
    }
    while !running.is_empty() {
        drop(running.remove(0));
        collect(&fair, &mut waiting, &mut running);
        check(&fair);
    }
    assert!(waiting.is_empty(), "{} never served", waiting.len());
}

/// Moves the waiters just served to the running ones; checks that the one served held no
/// more than any party still waiting did.
fn collect(fair: &Fair, waiting: &mut Vec<(String, Waiter)>, running: &mut Vec<(String, Slot)>) {
    let held = |key: &str| fair.shared.lock().parties.get(key).map_or(0, |p| p.held);
    let mut i = 0;
    while i < waiting.len() {
        if let Some(slot) = (&mut waiting[i].1).now_or_never() {
            let (key, _) = waiting.remove(i);
            let before = held(&key) - 1;
            for (other, _) in waiting.iter().filter(|(k, _)| *k != key) {
                assert!(before <= held(other), "{key} served before {other}");
            }
            running.push((key, slot));
        } else {
            i += 1;
        }
    }
}

#[test]
fn a_party_beyond_its_limit_is_refused_and_others_are_not() {
    let limit = Limit::new(2);
    let a1 = limit.admit("a").unwrap();
    let _a2 = limit.admit("a").unwrap();
    assert!(matches!(
        limit.admit("a"),
        Err(Error::TooManyRequests {
            retry_after_secs: 1
        })
    ));
    let _b = limit.admit("b").unwrap();
    drop(a1);
    assert!(limit.admit("a").is_ok());
}

#[test]
fn while_several_parties_are_active_each_holds_at_most_its_share_of_the_cores() {
    let fair = Fair::new(8).sharing_cores(2);
    // Alone, the flooding party takes what it asks for.
    let flood: Vec<Slot> = (0..4).map(|_| ask(&fair, "flood").1.unwrap()).collect();
    // Another party asks: two are active, one core's worth each. It is served at once.
    let (_, other) = ask(&fair, "other");
    let other = other.expect("the other party's first slot");
    // The flood's next request waits although slots are free: it holds more than its share.
    let (mut waiting, served) = ask(&fair, "flood");
    assert!(served.is_none());
    assert_eq!(fair.shared.lock().busy, 5);
    // It gets a slot only once it holds none (its share is one).
    let mut flood = flood;
    for _ in 0..3 {
        drop(flood.pop());
        assert!((&mut waiting).now_or_never().is_none());
    }
    drop(flood.pop());
    let slot = (&mut waiting)
        .now_or_never()
        .expect("served within its share");
    drop((slot, other));
    assert_eq!(fair.shared.lock().busy, 0);
}
