//! A cap on one party's requests in flight (the inbox's, per organisation).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// At most `most` requests in flight per party; one beyond is refused (429), not queued.
pub struct Limit {
    most: usize,
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

/// A place among a party's requests in flight; given back when dropped.
pub struct Admitted {
    counts: Arc<Mutex<HashMap<String, usize>>>,
    key: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

impl Limit {
    pub fn new(most: usize) -> Self {
        Self {
            most: most.max(1),
            counts: Arc::default(),
        }
    }

    /// A place for one more request of `key`, or 429 with `Retry-After` when it has `most`.
    pub fn admit(&self, key: &str) -> Result<Admitted> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(key.to_owned()).or_default();
        if *n >= self.most {
            return Err(Error::TooManyRequests {
                retry_after_secs: 1,
            });
        }
        *n += 1;
        Ok(Admitted {
            counts: self.counts.clone(),
            key: key.to_owned(),
        })
    }
}
