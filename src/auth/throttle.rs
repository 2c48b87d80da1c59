//! Login throttling: after `max_failures` failed logins for one email or from one client
//! address within `window`, further attempts for it get 429 until the window has passed.
//! Kept in memory: a restart forgets it, which only ever errs towards letting a user in.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct LoginThrottle {
    max_failures: u32,
    window: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    first_failure: Instant,
    failures: u32,
}

/// Entries are swept when the map grows past this, so a spray of addresses cannot grow it forever.
const SWEEP_AT: usize = 10_000;

impl LoginThrottle {
    pub fn new(max_failures: u32, window: Duration) -> Self {
        Self {
            max_failures: max_failures.max(1),
            window,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// `Err(seconds to wait)` when any of `keys` is locked out now.
    pub fn check(&self, keys: &[String]) -> Result<(), u64> {
        let now = Instant::now();
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let wait = keys
            .iter()
            .filter_map(|k| entries.get(k))
            .filter(|e| e.failures >= self.max_failures)
            .filter_map(|e| (e.first_failure + self.window).checked_duration_since(now))
            .max();
        match wait {
            Some(d) => Err(d.as_secs().max(1)),
            None => Ok(()),
        }
    }

    pub fn record_failure(&self, keys: &[String]) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() > SWEEP_AT {
            let window = self.window;
            entries.retain(|_, e| now.duration_since(e.first_failure) < window);
        }
        for key in keys {
            let entry = entries.entry(key.clone()).or_insert(Entry {
                first_failure: now,
                failures: 0,
            });
            if now.duration_since(entry.first_failure) >= self.window {
                entry.first_failure = now;
                entry.failures = 0;
            }
            entry.failures += 1;
        }
    }

    pub fn forget(&self, key: &str) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_after_max_failures_and_releases_after_window() {
        let t = LoginThrottle::new(3, Duration::from_millis(200));
        let keys = vec!["email:a@b.c".to_string()];
        for _ in 0..3 {
            assert!(t.check(&keys).is_ok());
            t.record_failure(&keys);
        }
        assert!(t.check(&keys).is_err());
        assert!(t.check(&["email:other@b.c".to_string()]).is_ok());
        std::thread::sleep(Duration::from_millis(250));
        assert!(t.check(&keys).is_ok());
    }

    #[test]
    fn forget_clears_a_key() {
        let t = LoginThrottle::new(1, Duration::from_secs(60));
        let keys = vec!["email:a@b.c".to_string()];
        t.record_failure(&keys);
        assert!(t.check(&keys).is_err());
        t.forget("email:a@b.c");
        assert!(t.check(&keys).is_ok());
    }
}
