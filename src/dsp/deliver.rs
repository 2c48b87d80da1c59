//! Sends what negotiations and transfers have queued for their consumers: each message once
//! its change committed (woken by the commit's `DspQueued` event), never from a request
//! handler; again with backoff while the consumer's callback fails; at start-up whatever a
//! stop left queued. An acknowledged message moves its process to the state it announced. A
//! consumer unreachable for [`MAX_ATTEMPTS`] attempts, or whose callback is no longer
//! allowed, has its process terminated.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::process::{Outgoing, Process};
use super::Dsp;
use crate::consignment::now;
use crate::error::Result;
use crate::store::{Committed, ReadModel};

/// Attempts before a process whose consumer never answers is terminated (about 20 minutes).
pub const MAX_ATTEMPTS: u32 = 24;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

fn backoff(attempts: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << attempts.min(10))
        .min(MAX_BACKOFF)
}

/// What wakes the delivery task: a process with a message to send, or a share withdrawn
/// (whose transfers end).
#[derive(Debug)]
pub enum Wake {
    Queued(String),
    Unshared { org: String, hex: String },
}

impl ReadModel for Dsp {
    fn apply(&self, event: &Committed) {
        // The receiver is gone only when the node shuts down; what it would do is stored.
        match event {
            Committed::DspQueued { pid } => {
                let _ = self.wake_tx.send(Wake::Queued(pid.clone()));
            }
            Committed::Unshared { org, aig, .. } => {
                let hex = aig.strip_prefix("aig:").unwrap_or(aig).to_owned();
                let _ = self.wake_tx.send(Wake::Unshared {
                    org: org.clone(),
                    hex,
                });
            }
            _ => {}
        }
    }
}

impl Dsp {
    /// The delivery task, until the node closes.
    pub async fn deliver(self: Arc<Self>, mut closing: watch::Receiver<bool>) -> Result<()> {
        let Some(mut wake) = self
            .wake_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return Ok(());
        };
        let store = self.store.clone();
        let stored = tokio::task::spawn_blocking(move || Process::all(&store)).await??;
        let mut due: HashMap<String, Instant> = stored
            .into_iter()
            .filter(|p| p.outgoing.is_some())
            .map(|p| (p.provider_pid, Instant::now()))
            .collect();
        loop {
            let next = due.values().min().copied();
            tokio::select! {
                woken = wake.recv() => match woken {
                    Some(Wake::Queued(pid)) => { due.insert(pid, Instant::now()); }
                    Some(Wake::Unshared { org, hex }) => {
                        let dsp = self.clone();
                        let ended = tokio::task::spawn_blocking(move || {
                            dsp.share_withdrawn(&org, &hex)
                        });
                        if let Ok(Err(e)) = ended.await {
                            tracing::error!(error = %e, "transfers of a revoked share not ended");
                        }
                    }
                    None => return Ok(()),
                },
                _ = async { tokio::time::sleep_until(next.unwrap_or_else(Instant::now)).await },
                    if next.is_some() => {}
                _ = closing.changed() => return Ok(()),
            }
            let now = Instant::now();
            let ready: Vec<String> = due
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(pid, _)| pid.clone())
                .collect();
            for pid in ready {
                due.remove(&pid);
                match self.attempt(&pid).await {
                    Ok(Some(retry)) => {
                        due.insert(pid, Instant::now() + retry);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::error!(pid, error = %e, "a DSP message could not be handled");
                        due.insert(pid, Instant::now() + MAX_BACKOFF);
                    }
                }
            }
        }
    }

    /// Sends `pid`'s queued message once; the wait before the next attempt if it failed.
    async fn attempt(&self, pid: &str) -> Result<Option<Duration>> {
        let (store, id) = (self.store.clone(), pid.to_owned());
        let Some(p) = tokio::task::spawn_blocking(move || Process::load(&store, &id)).await??
        else {
            return Ok(None);
        };
        let Some(out) = p.outgoing.clone() else {
            return Ok(None);
        };
        let target = format!("{}/{}", p.callback.trim_end_matches('/'), out.path);
        let sent = match self.federation.callback_of(&p.participant, &target) {
            Ok(url) => {
                self.federation
                    .call_back(&url, &out.body, &p.participant)
                    .await
            }
            Err(why) => {
                tracing::warn!(pid, why, "a DSP callback is not allowed: terminating");
                self.settle(pid, out, None).await?;
                return Ok(None);
            }
        };
        match sent {
            Ok(()) => {
                self.settle(pid, out, Some(true)).await?;
                Ok(None)
            }
            Err(why) => {
                let attempts = out.attempts + 1;
                tracing::warn!(pid, why, attempts, "a DSP message was not acknowledged");
                if attempts >= MAX_ATTEMPTS {
                    self.settle(pid, out, None).await?;
                    return Ok(None);
                }
                self.settle(pid, out, Some(false)).await?;
                Ok(Some(backoff(attempts)))
            }
        }
    }

    /// Records how sending `sent` went, if the process still has that message queued:
    /// acknowledged (`Some(true)`: its state is reached), failed (`Some(false)`: counted), or
    /// given up (`None`: terminated).
    async fn settle(&self, pid: &str, sent: Outgoing, acked: Option<bool>) -> Result<()> {
        let (store, pid) = (self.store.clone(), pid.to_owned());
        tokio::task::spawn_blocking(move || {
            store.commit(|tx, events| {
                let Some(mut p) = Process::load_in(tx, &pid)? else {
                    return Ok(());
                };
                if p.outgoing.as_ref() != Some(&sent) {
                    return Ok(());
                }
                match acked {
                    Some(true) => {
                        p.state = sent.then.clone();
                        p.outgoing = None;
                    }
                    Some(false) => {
                        if let Some(o) = p.outgoing.as_mut() {
                            o.attempts += 1;
                        }
                    }
                    None => {
                        p.state = "TERMINATED".into();
                        p.outgoing = None;
                    }
                }
                p.updated = now();
                // A counted failure is no new message: the task keeps its own retry time.
                let mut quiet = crate::store::Events::default();
                if acked == Some(false) {
                    p.save(tx, &mut quiet)
                } else {
                    p.save(tx, events)
                }
            })
        })
        .await??;
        Ok(())
    }
}
