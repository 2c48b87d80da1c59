//! The delivery task: queued deliveries sent after their commit, off the request path, in
//! commit order per subscription (one attempt in flight per subscription; subscriptions in
//! parallel, so a slow or dead receiver holds back only its own). At least once: a delivery is
//! marked delivered only after a 2xx, and what was not is picked up from the store at the next
//! start. Only ids wait in memory.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::batch;
use super::queue::Delivery;
use super::send::{self, Answer};
use super::{put, stored, Webhooks};
use crate::consignment::{format_millis, now};
use crate::error::{Error, Result};

/// Succeeded deliveries are recorded together, this often,
const RECORD_EVERY: Duration = Duration::from_millis(50);
/// and at most this many in one write.
const RECORD_AT_ONCE: usize = 256;
/// Delivered deliveries past `--webhook-log-days` are removed this often (and at start-up,
/// before the node serves).
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Retries back off up to this interval.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// What a queue is told: a delivery queued, or a subscription to look at again (enabled,
/// a delivery to retry or replay).
#[derive(Debug, Clone)]
pub enum Wake {
    /// Deliveries queued: `(subscription, id)`, in commit order.
    Queued(Vec<(String, String)>),
    Again {
        subscription: String,
    },
}

/// How an attempt went, for the in-memory queue.
enum Outcome {
    /// Settled (delivered, or gone): the next one is due.
    Done,
    /// Try the same one again after this long.
    Retry(Duration),
    /// The subscription is disabled: nothing is sent until it is enabled.
    Paused,
    /// The subscription was deleted (its deliveries with it).
    Gone,
}

#[derive(Default)]
struct Queues {
    ids: HashMap<String, VecDeque<String>>,
    /// What `ids` holds, for the check on every push (a receiver down for long has
    /// thousands waiting).
    queued: HashSet<String>,
    /// Deliveries asked for again (a retry, a replay) while an attempt at them was under
    /// way: queued once more when that attempt settles.
    again: HashSet<String>,
    busy: HashMap<String, bool>,
    due: BTreeMap<(Instant, u64), String>,
    seq: u64,
}

impl Queues {
    fn push(&mut self, now: Instant, sub: &str, id: String) {
        if self.queued.insert(id.clone()) {
            self.ids.entry(sub.to_owned()).or_default().push_back(id);
        } else if self.in_flight(sub) == Some(&id) {
            self.again.insert(id);
        }
        self.wake(now, sub);
    }

    /// The delivery of `sub` an attempt is under way for.
    fn in_flight(&self, sub: &str) -> Option<&String> {
        let busy = self.busy.get(sub).copied().unwrap_or(false);
        busy.then(|| self.ids.get(sub).and_then(VecDeque::front))
            .flatten()
    }

    /// Makes `sub` due at `now` unless it already is or has an attempt under way.
    fn wake(&mut self, now: Instant, sub: &str) {
        let busy = self.busy.entry(sub.to_owned()).or_default();
        if !*busy && self.ids.get(sub).is_some_and(|q| !q.is_empty()) {
            *busy = true;
            self.schedule(now, sub);
        }
    }

    fn schedule(&mut self, at: Instant, sub: &str) {
        self.seq += 1;
        self.due.insert((at, self.seq), sub.to_owned());
    }

    fn take_due(&mut self, now: Instant) -> Option<(String, String)> {
        let (&(at, _), _) = self.due.first_key_value()?;
        if at > now {
            return None;
        }
        let (_, sub) = self.due.pop_first()?;
        match self.ids.get(&sub).and_then(|q| q.front()) {
            Some(id) => Some((sub, id.clone())),
            None => {
                self.busy.insert(sub, false);
                None
            }
        }
    }

    fn settle(&mut self, now: Instant, sub: &str, outcome: Outcome) {
        match outcome {
            Outcome::Done => {
                if let Some(id) = self.ids.get_mut(sub).and_then(VecDeque::pop_front) {
                    if self.again.remove(&id) {
                        self.ids.entry(sub.to_owned()).or_default().push_back(id);
                    } else {
                        self.queued.remove(&id);
                    }
                }
                self.busy.insert(sub.to_owned(), false);
                self.wake(now, sub);
            }
            Outcome::Retry(wait) => self.schedule(now + wait, sub),
            Outcome::Paused => {
                self.busy.insert(sub.to_owned(), false);
            }
            Outcome::Gone => {
                self.busy.remove(sub);
                for id in self.ids.remove(sub).unwrap_or_default() {
                    self.queued.remove(&id);
                    self.again.remove(&id);
                }
            }
        }
    }

    fn next_at(&self) -> Option<Instant> {
        self.due.first_key_value().map(|(&(at, _), _)| at)
    }
}

impl Webhooks {
    /// Delivers until the node shuts down: what the store holds undelivered first, then what
    /// commits queue.
    pub async fn deliver(self: Arc<Self>, mut closing: watch::Receiver<bool>) -> Result<()> {
        let Some(mut rx) = self
            .wake_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return Err(Error::internal("webhooks are already being delivered"));
        };
        let loading = {
            let this = self.clone();
            tokio::task::spawn_blocking(move || this.pending())
        };
        let loaded = tokio::select! {
            loaded = loading => loaded??,
            _ = closing.changed() => return Ok(()),
        };
        let mut queues = Queues::default();
        let start = Instant::now();
        for d in loaded {
            queues.push(start, &d.subscription, d.id);
        }
        let mut attempts: JoinSet<(String, Outcome)> = JoinSet::new();
        tokio::spawn(self.clone().record_delivered(closing.clone()));
        loop {
            // Closing, or the node gone (its sender dropped: a test's node, never shut down).
            if *closing.borrow() || closing.has_changed().is_err() {
                attempts.abort_all();
                let this = self.clone();
                // What was delivered since the last batch; anything lost is sent again.
                let _ = tokio::task::spawn_blocking(move || this.flush_delivered()).await;
                return Ok(());
            }
            self.waiting
                .store(queues.queued.len(), std::sync::atomic::Ordering::Relaxed);
            while let Some((sub, id)) = queues.take_due(Instant::now()) {
                let this = self.clone();
                attempts.spawn(async move {
                    let outcome = this.attempt(&sub, &id).await;
                    (sub, outcome)
                });
            }
            let sleep = queues.next_at().map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
            });
            tokio::select! {
                woken = rx.recv() => match woken {
                    Some(Wake::Queued(queued)) => {
                        let now = Instant::now();
                        for (subscription, id) in queued {
                            queues.push(now, &subscription, id);
                        }
                    }
                    Some(Wake::Again { subscription }) => {
                        queues.wake(Instant::now(), &subscription)
                    }
                    None => return Ok(()),
                },
                Some(done) = attempts.join_next(), if !attempts.is_empty() => {
                    if let Ok((sub, outcome)) = done {
                        queues.settle(Instant::now(), &sub, outcome);
                    }
                }
                _ = tokio::time::sleep(sleep) => {}
                _ = closing.changed() => {}
            }
        }
    }

    /// Every undelivered delivery of a subscription that still exists, in commit order.
    /// Blocking.
    fn pending(&self) -> Result<Vec<Delivery>> {
        let mut out: Vec<Delivery> = Vec::new();
        for b in batch::all(self.store.db())? {
            out.extend(b.deliveries(|p| {
                p.state.delivered_at.is_none() && self.subscription(&p.subscription).is_some()
            }));
        }
        out.sort_by_key(|d| d.seq);
        Ok(out)
    }

    /// One attempt at delivery `id` of subscription `sub`, its outcome recorded.
    async fn attempt(self: &Arc<Self>, sub: &str, id: &str) -> Outcome {
        let Some(s) = self.subscription(sub) else {
            return Outcome::Gone;
        };
        if !s.enabled() {
            return Outcome::Paused;
        }
        // A batch read lately answers without a blocking thread: a hundred subscriptions'
        // first attempts at one change would otherwise hand a hundred reads to the pool.
        let d = match self.recent.cached(id) {
            Some(found) => Ok(Ok(found)),
            None => {
                let reading = self.clone();
                let wanted = id.to_owned();
                tokio::task::spawn_blocking(move || reading.delivery(&wanted)).await
            }
        };
        let d = match d {
            Ok(Ok(Some(d))) if d.state.delivered_at.is_none() => d,
            Ok(Ok(_)) => return Outcome::Done,
            Ok(Err(e)) => return self.failed_internally(e.to_string()),
            Err(e) => return self.failed_internally(e.to_string()),
        };
        let d = if d.full.is_some() {
            let this = self.clone();
            match tokio::task::spawn_blocking(move || this.fill(d)).await {
                Ok(Ok(d)) => d,
                Ok(Err(e)) => return self.failed_internally(e.to_string()),
                Err(e) => return self.failed_internally(e.to_string()),
            }
        } else {
            d
        };
        let answer = send::send(&self.client, &self.allow_http, &s, &d).await;
        let resets = d.state.resets;
        if answer.delivered() && s.failures == 0 {
            let status = answer.status.unwrap_or(200);
            let mut done = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
            done.push((id.to_owned(), status, now(), resets));
            return Outcome::Done;
        }
        if !answer.delivered() {
            self.failed_attempts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let this = self.clone();
        let (sub, id) = (sub.to_owned(), id.to_owned());
        match tokio::task::spawn_blocking(move || this.record(&sub, &id, answer, resets)).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(e)) => self.failed_internally(e.to_string()),
            Err(e) => self.failed_internally(e.to_string()),
        }
    }

    /// Puts the object of a `full` delivery into its body, once, and stores the body: every
    /// later attempt and replay sends the same bytes. Blocking.
    fn fill(&self, mut d: Delivery) -> Result<Delivery> {
        let Some(full) = d.full.take() else {
            return Ok(d);
        };
        let object = self.full.get().and_then(|read| read(&full));
        if let Some(object) = object {
            let mut body: serde_json::Value = serde_json::from_str(&d.body)
                .map_err(|e| Error::internal(format!("a queued body is not JSON: {e}")))?;
            body["data"]["object"] = object;
            d.body = body.to_string();
        }
        let written = self
            .store
            .write(|tx| batch::put_all(tx, std::slice::from_ref(&d)))?;
        self.recent.forget(&written);
        Ok(d)
    }

    /// Records the deliveries that succeeded, in batches: one write every
    /// [`RECORD_EVERY`] instead of one (with its sync) per delivery, which at 100
    /// subscriptions queued the inbox's commits behind a hundred others. A crash before a
    /// batch is written sends its deliveries again (at least once).
    async fn record_delivered(self: Arc<Self>, mut closing: watch::Receiver<bool>) {
        // The start pruned already (`Node::open`).
        let mut pruned = Instant::now();
        loop {
            if pruned.elapsed() >= PRUNE_EVERY {
                pruned = Instant::now();
                let this = self.clone();
                if let Ok(Err(e)) = tokio::task::spawn_blocking(move || this.prune()).await {
                    tracing::error!(error = %e, "old webhook deliveries not removed");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(RECORD_EVERY) => {}
                _ = closing.changed() => return,
            }
            let this = self.clone();
            match tokio::task::spawn_blocking(move || this.flush_delivered()).await {
                Ok(Err(e)) => tracing::error!(error = %e, "webhook deliveries not recorded"),
                Err(e) => tracing::error!(error = %e, "webhook deliveries not recorded"),
                Ok(Ok(())) => {}
            }
        }
    }

    /// Writes the batch of succeeded deliveries. Blocking.
    pub(super) fn flush_delivered(&self) -> Result<()> {
        let done = std::mem::take(&mut *self.delivered.lock().unwrap_or_else(|p| p.into_inner()));
        if done.is_empty() {
            return Ok(());
        }
        // In writes of a bounded size: at a hundred subscriptions thousands succeed between
        // two batches, and this background work must not hold the writer lock for long.
        for chunk in done.chunks(RECORD_AT_ONCE) {
            let mut by_batch: HashMap<&str, Vec<batch::Success>> = HashMap::new();
            for (id, status, at, resets) in chunk {
                let Some((b, n)) = batch::place_of(id) else {
                    continue;
                };
                let success = batch::Success(n, *status, at.clone(), *resets);
                by_batch.entry(b).or_default().push(success);
            }
            let written = self.store.write(|tx| {
                let mut written = Vec::new();
                for (b, done) in &by_batch {
                    if batch::record_successes(tx, b, done)? {
                        written.push((*b).to_owned());
                    }
                }
                Ok(written)
            })?;
            self.recent.forget(&written);
        }
        Ok(())
    }

    fn failed_internally(&self, why: String) -> Outcome {
        tracing::error!(error = why, "webhook delivery could not be recorded");
        Outcome::Retry(self.settings.retry_base)
    }

    /// The stored delivery `id`. Blocking.
    pub fn delivery(&self, id: &str) -> Result<Option<Delivery>> {
        self.recent.found_now(self.store.db(), id)
    }

    /// Records an attempt's answer on the delivery and the subscription, in one write: the
    /// failure count, the last error, and the subscription disabled by a 410 or by too many
    /// failures in a row. Blocking.
    fn record(&self, sub: &str, id: &str, answer: Answer, resets: u32) -> Result<Outcome> {
        let (outcome, _) = self.store.commit(|tx, events| {
            let Some(mut d) = batch::found_in(tx, id)? else {
                return Ok(Outcome::Done);
            };
            let Some((old_sub, mut subscription)) = stored(tx, sub)? else {
                return Ok(Outcome::Paused);
            };
            let at = now();
            let failures = subscription.failures;
            d.state.attempts += 1;
            d.state.last_status = answer.status;
            d.state.last_error = answer.error.clone();
            let outcome = if answer.delivered() {
                if d.state.resets == resets {
                    d.state.delivered_at = Some(at.clone());
                }
                d.state.next_attempt = None;
                subscription.failures = 0;
                Outcome::Done
            } else {
                subscription.failures += 1;
                subscription.last_error = answer.error.clone();
                let gone = answer.status == Some(410);
                if gone || subscription.failures >= self.settings.max_failures {
                    subscription.state = "disabled".into();
                    subscription.disabled_at = Some(at.clone());
                    d.state.next_attempt = None;
                    Outcome::Paused
                } else {
                    let wait = self.backoff(d.state.attempts, answer.retry_after);
                    let next = chrono::Utc::now().timestamp_millis() + wait.as_millis() as i64;
                    d.state.next_attempt = Some(format_millis(next));
                    Outcome::Retry(wait)
                }
            };
            let written = batch::put_all(tx, std::slice::from_ref(&d))?;
            self.recent.forget(&written);
            if subscription.failures != failures || !subscription.enabled() {
                put(tx, Some(&old_sub), &subscription, events);
            }
            Ok(outcome)
        })?;
        Ok(outcome)
    }

    /// The wait before attempt `attempts + 1`: the base doubled per failed attempt, up to
    /// [`MAX_BACKOFF`], plus up to a quarter more at random (receivers that came back are not
    /// hit by every node at once); a receiver's `Retry-After` when it asks for longer.
    fn backoff(&self, attempts: u32, retry_after: Option<Duration>) -> Duration {
        let doubled = self
            .settings
            .retry_base
            .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
            .min(MAX_BACKOFF);
        let jitter = doubled.mul_f64(rand::thread_rng().gen_range(0.0..0.25));
        let wait = doubled + jitter;
        match retry_after {
            Some(asked) => asked.min(MAX_BACKOFF).max(wait),
            None => wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::{Settings, Webhooks};
    use crate::store::Store;

    /// The delivery task ends when the node's closing sender is gone without a signal (a
    /// node dropped, never shut down), instead of waking on the closed channel forever.
    #[tokio::test]
    async fn delivery_ends_when_the_node_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let settings = Settings {
            retry_base: Duration::from_secs(5),
            max_failures: 3,
            timeout: Duration::from_secs(15),
            keep_delivered: Duration::from_secs(86_400),
        };
        let hooks = Arc::new(Webhooks::open(store, &[], settings, &[7; 32]).unwrap());
        let (closing, closed) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(hooks.deliver(closed));
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(closing);
        // Generous: the task ends at its next turn; a spinning one never does.
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("the delivery task ended")
            .unwrap()
            .unwrap();
    }
}
