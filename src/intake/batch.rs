//! Many activities of one caller in few transactions: the write of the bulk load
//! (`dataspace-node load`). Each activity gets the inbox's checks and its write — the same
//! `prepare` and `write` as [`Intake::process`], in file order — so the store ends as if each
//! had been posted; only the commits are shared: one per run of `Create`s (their new
//! contribution graphs, records and payloads through the bulk loader, `store::bulk`), one per
//! run of other kinds. A line sees what the lines before it in its run wrote: a repeated line
//! is a replay (Oxigraph's transactions read their own writes, and the log entries are in the
//! transaction), ids taken are in the transaction or the commit's claims of deferred records;
//! an `Update` or `Add` after a run of `Create`s waits for that run's commit.
//!
//! Unlike the inbox, a failed activity leaves nothing: no failed log entry. The load reports it
//! and a load of the same file later applies it once it is mended (lines applied before are
//! replays then, answered with their entries).

use serde_json::{json, Value};

use super::activity::Kind;
use super::log::TaskError;
use super::prepare::Prepared;
use super::process::{Failures, Pending, Taken};
use super::{Intake, Timings};
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::store::Events;

/// What became of one activity of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Loaded {
    /// Applied now: its log entry's id.
    Applied(String),
    /// Applied before (the same activity by the same organisation): the entry's id.
    Replayed(String),
    /// Refused, with what the inbox would have said: a request error (`status`, `message`,
    /// `properties`) or the failed task's error (`ValidationError` with its detail, conflict,
    /// not found).
    Refused(Value),
}

/// A line that passed the checks outside the transaction.
struct Ready {
    index: usize,
    prepared: Prepared,
    content: Taken,
    started_at: String,
}

impl Intake {
    /// Checks `bodies` and applies those that pass, in order (a run of `Create`s, or of other
    /// kinds, per transaction). `Err` only for failures of the node
    /// itself (the transaction being written is then dropped, those before stay). Blocking; a
    /// document's content is taken on this thread, which must be inside the async runtime
    /// (a blocking-pool thread).
    pub fn process_batch(&self, caller: &Caller, bodies: &[Vec<u8>]) -> Result<Vec<Loaded>> {
        let mut outcomes: Vec<Option<Loaded>> = vec![None; bodies.len()];
        let mut ready = Vec::new();
        let t = std::time::Instant::now();
        let all = self.prepare_all(caller, bodies);
        let prepared_in = t.elapsed();
        for (index, prepared) in all.into_iter().enumerate() {
            let started_at = crate::consignment::now();
            let prepared = match prepared {
                Err(e) => {
                    outcomes[index] = Some(Loaded::Refused(request_error(&e)));
                    continue;
                }
                Ok(p) => p,
            };
            // Replays first, as the inbox answers them: a line applied before is one, even
            // when today's checks would refuse it.
            if let Some(entry) = self.entry(&caller.organization, &prepared.entry_id)? {
                if !entry.failed() {
                    outcomes[index] = Some(Loaded::Replayed(prepared.entry_id.clone()));
                    continue;
                }
            }
            if !prepared.failures.is_empty() {
                outcomes[index] = Some(refused(&TaskError::validation(&prepared.failures)));
                continue;
            }
            let mut content = self.take_content(caller, &prepared.activity)?;
            if content.is_none() && adds_document(&prepared) && !ready.is_empty() {
                // Its consignment may be one this batch creates: the content is taken once the
                // lines before are committed, as it would be had they been posted first.
                self.commit_ready(caller, std::mem::take(&mut ready), &mut outcomes)?;
                content = self.take_content(caller, &prepared.activity)?;
            }
            if let Some(Err(message)) = &content {
                outcomes[index] = Some(refused(&TaskError::document(message.clone())));
                continue;
            }
            ready.push(Ready {
                index,
                prepared,
                content,
                started_at,
            });
        }
        let checked_in = t.elapsed() - prepared_in;
        let t = std::time::Instant::now();
        self.commit_ready(caller, ready, &mut outcomes)?;
        tracing::debug!(
            lines = bodies.len(),
            prepare_ms = prepared_in.as_millis() as u64,
            check_ms = checked_in.as_millis() as u64,
            commit_ms = t.elapsed().as_millis() as u64,
            "batch applied"
        );
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("every line has an outcome"))
            .collect())
    }

    /// `ready` written in order, as the inbox writes each: a run of `Create`s in one
    /// transaction whose new contribution graphs go to the bulk loader (`store::bulk`), any
    /// other run in one plain transaction (an `Update` or `Add` may read what a `Create`
    /// before it wrote, so it waits for that run's commit).
    fn commit_ready(
        &self,
        caller: &Caller,
        ready: Vec<Ready>,
        outcomes: &mut [Option<Loaded>],
    ) -> Result<()> {
        let creates = |r: &Ready| r.prepared.activity.kind == Kind::Create;
        let mut rest = ready.as_slice();
        while let Some(first) = rest.first() {
            let kind = creates(first);
            let n = rest.iter().take_while(|r| creates(r) == kind).count();
            let (run, after) = rest.split_at(n);
            self.store.commit_deferred(|tx, events, deferred| {
                let deferred = kind.then_some(deferred);
                for r in run {
                    let pending = Pending {
                        caller,
                        prepared: &r.prepared,
                        content: &r.content,
                        started_at: &r.started_at,
                        deferred,
                        ahead: None,
                    };
                    let mut own = Events::default();
                    let (entry, created) = self.write(&pending, tx, &mut own, Failures::Dropped)?;
                    let error = entry.tasks.iter().find_map(|t| t.error.as_ref());
                    outcomes[r.index] = Some(match (error, created) {
                        (Some(error), _) => refused(error),
                        (None, true) => Loaded::Applied(entry.id.clone()),
                        (None, false) => Loaded::Replayed(entry.id.clone()),
                    });
                    events.append(own);
                }
                Ok(())
            })?;
            rest = after;
        }
        Ok(())
    }

    /// The inbox's checks of every body, on two threads: expansion and shapes are the load's
    /// CPU work, and the writes wait for them.
    fn prepare_all(&self, caller: &Caller, bodies: &[Vec<u8>]) -> Vec<Result<Prepared>> {
        let half = bodies.len().div_ceil(2);
        let prepare = |part: &[Vec<u8>]| -> Vec<Result<Prepared>> {
            part.iter()
                .map(|body| self.prepare(caller, body, &mut Timings::default()))
                .collect()
        };
        std::thread::scope(|scope| {
            let (first, second) = bodies.split_at(half);
            let other = scope.spawn(|| prepare(second));
            let mut all = prepare(first);
            all.extend(other.join().expect("preparing a batch panicked"));
            all
        })
    }
}

fn adds_document(p: &Prepared) -> bool {
    p.activity.kind == Kind::Add
        && p.activity.object().get("type").and_then(Value::as_str) == Some("Document")
}

fn refused(error: &TaskError) -> Loaded {
    Loaded::Refused(
        serde_json::to_value(error).unwrap_or_else(|e| json!({"message": e.to_string()})),
    )
}

/// A request error as the inbox's 4xx body would carry it.
fn request_error(e: &Error) -> Value {
    let mut body = json!({"message": e.to_string()});
    if let Error::BadRequest { properties, .. } = e {
        body["properties"] = Value::Object(properties.clone());
    }
    body
}
