//! Login throttling: at most `max_attempts` failed logins for one key (an email, a client
//! address) within `window`; further attempts for it get 429 until the window has passed.
//!
//! An attempt is counted when it starts, before its password is checked: the check takes
//! ~45 ms, and counting only failures after it let a burst of concurrent attempts all pass the
//! "is it locked?" test before any of them was counted (40 attempts, 32 password checks). A
//! login that succeeds takes its count back ([`LoginThrottle::release`] or
//! [`LoginThrottle::forget`]). Kept in memory: a restart forgets it, which only ever errs
//! towards letting a user in.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub struct LoginThrottle {
    max_attempts: u32,
    window: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    first_attempt: Instant,
    attempts: u32,
}

/// Entries are swept when the map grows past this, so a spray of addresses cannot grow it forever.
const SWEEP_AT: usize = 10_000;

impl LoginThrottle {
    pub fn new(max_attempts: u32, window: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            window,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts an attempt for `key`, or refuses it with `Err(seconds to wait)` when `key` is
    /// locked out. Checking and counting are one step under one lock.
    pub fn reserve(&self, key: &str) -> Result<(), u64> {
        self.reserve_at(key, Instant::now())
    }

    fn reserve_at(&self, key: &str, now: Instant) -> Result<(), u64> {
        let mut entries = self.entries();
        if entries.len() > SWEEP_AT {
            let window = self.window;
            entries.retain(|_, e| now.duration_since(e.first_attempt) < window);
        }
        let entry = entries.entry(key.to_owned()).or_insert(Entry {
            first_attempt: now,
            attempts: 0,
        });
        let ends = entry.first_attempt + self.window;
        if now >= ends {
            entry.first_attempt = now;
            entry.attempts = 0;
        } else if entry.attempts >= self.max_attempts {
            return Err((ends - now).as_secs().max(1));
        }
        entry.attempts += 1;
        Ok(())
    }

    /// Takes back one attempt [`LoginThrottle::reserve`] counted: it succeeded, or it was
    /// refused before any password was checked.
    pub fn release(&self, key: &str) {
        let mut entries = self.entries();
        if let Some(entry) = entries.get_mut(key) {
            entry.attempts = entry.attempts.saturating_sub(1);
            if entry.attempts == 0 {
                entries.remove(key);
            }
        }
    }

    /// Forgets every attempt for `key` (a user who logged in starts afresh).
    pub fn forget(&self, key: &str) {
        self.entries().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    #[test]
    fn concurrent_attempts_are_counted_before_any_is_checked() {
        let t = Arc::new(LoginThrottle::new(5, Duration::from_secs(60)));
        let start = Arc::new(Barrier::new(40));
        let threads: Vec<_> = (0..40)
            .map(|_| {
                let (t, start) = (t.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    t.reserve("a@b.c").is_ok()
                })
            })
            .collect();
        let admitted = threads
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert_eq!(admitted, 5);
        assert!(t.reserve("other@b.c").is_ok());
    }

    #[test]
    fn locks_after_max_attempts_until_the_window_has_passed() {
        let t = LoginThrottle::new(3, Duration::from_secs(300));
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(t.reserve_at("a@b.c", t0).is_ok());
        }
        assert_eq!(
            t.reserve_at("a@b.c", t0 + Duration::from_secs(100)),
            Err(200)
        );
        assert_eq!(
            t.reserve_at("a@b.c", t0 + Duration::from_millis(299_900)),
            Err(1)
        );
        assert!(t.reserve_at("a@b.c", t0 + Duration::from_secs(300)).is_ok());
    }

    #[test]
    fn a_released_attempt_frees_its_place_and_forget_clears_a_key() {
        let t = LoginThrottle::new(2, Duration::from_secs(60));
        assert!(t.reserve("a@b.c").is_ok());
        assert!(t.reserve("a@b.c").is_ok());
        assert!(t.reserve("a@b.c").is_err());
        t.release("a@b.c");
        assert!(t.reserve("a@b.c").is_ok());
        assert!(t.reserve("a@b.c").is_err());
        t.forget("a@b.c");
        assert!(t.reserve("a@b.c").is_ok());
        // Releasing what was never counted changes nothing.
        t.release("x@b.c");
        t.release("x@b.c");
        assert!(t.reserve("x@b.c").is_ok());
        assert!(t.reserve("x@b.c").is_ok());
        assert!(t.reserve("x@b.c").is_err());
    }
}
