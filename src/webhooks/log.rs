//! A subscription's delivery log, kept `--webhook-log-days`, and deliveries sent again: one by
//! its id, or every one queued since an instant (a replay). Sent again under the same
//! `webhook-id` and with the same body, so a receiver that has them already recognises them.

use serde_json::{json, Value};

use super::batch::{self, Pending};
use super::queue::Delivery;
use super::{Subscription, Wake, Webhooks};
use crate::consignment::cursor::Position;
use crate::consignment::Page;
use crate::error::{Error, Result};
use crate::store::Store;

/// Every delivery of subscription `s`, oldest first. Blocking.
fn deliveries_of(store: &Store, s: &Subscription) -> Result<Vec<Delivery>> {
    let mut out = Vec::new();
    for (_, b) in batch::told_to(store.db(), &s.organization)? {
        out.extend(b.deliveries(|p| p.subscription == s.id));
    }
    out.sort_by_key(|d| d.seq);
    Ok(out)
}

impl Webhooks {
    /// `GET /subscriptions/{id}/deliveries`: newest first. Blocking.
    pub fn deliveries(
        &self,
        org: &str,
        id: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page> {
        let s = self.owned(org, id)?;
        let list = format!("deliveries:{id}");
        let before = match cursor {
            Some(c) => {
                let p = self.cursors.decode(c, &list, org, "own")?;
                Some(p.at.parse::<u64>().map_err(|_| {
                    Error::invalid_field("cursor", "not a cursor this list handed out")
                })?)
            }
            None => None,
        };
        let mut all: Vec<Delivery> = deliveries_of(&self.store, &s)?
            .into_iter()
            .filter(|d| before.is_none_or(|b| d.seq < b))
            .collect();
        all.reverse();
        let more = all.len() > limit;
        all.truncate(limit);
        let cursor = match (more, all.last()) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list,
                org: org.to_owned(),
                scope: "own".into(),
                at: last.seq.to_string(),
                id: last.id.clone(),
            })),
            _ => None,
        };
        Ok(Page::new(
            all.iter().map(Delivery::public).collect(),
            cursor,
        ))
    }

    /// `POST /subscriptions/{id}/deliveries/{deliveryId}/retry`: sent again (delivered or
    /// not), behind what the subscription has waiting. Blocking.
    pub fn retry(&self, org: &str, id: &str, delivery: &str) -> Result<Value> {
        let s = self.owned(org, id)?;
        let again = self.again(&s, |d| d.id == delivery)?;
        match again.first() {
            Some(d) => Ok(d.public()),
            None => Err(Error::NotFound(format!("no delivery {delivery}"))),
        }
    }

    /// `POST /subscriptions/{id}/replay {since}`: every delivery queued at or after `since`
    /// sent again, in commit order. Blocking.
    pub fn replay(
        &self,
        org: &str,
        id: &str,
        body: &serde_json::Map<String, Value>,
    ) -> Result<Value> {
        let s = self.owned(org, id)?;
        if let Some(other) = body.keys().find(|k| *k != "since") {
            return Err(Error::invalid_field(other, "not a field of a replay"));
        }
        let since = body
            .get("since")
            .and_then(Value::as_str)
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .ok_or_else(|| {
                Error::invalid_field("since", "required: an RFC 3339 date-time with a time zone")
            })?;
        let again = self.again(&s, |d| {
            chrono::DateTime::parse_from_rfc3339(&d.created).is_ok_and(|c| c >= since)
        })?;
        Ok(json!({"replayed": again.len()}))
    }

    /// Removes the deliveries delivered longer ago than the log keeps them; undelivered ones
    /// stay whatever their age. Blocking.
    pub fn prune(&self) -> Result<usize> {
        let cutoff = chrono::Utc::now()
            - chrono::Duration::from_std(self.settings.keep_delivered)
                .unwrap_or(chrono::Duration::MAX);
        let delivered_before = |p: &Pending| {
            p.state
                .delivered_at
                .as_deref()
                .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
                .is_some_and(|at| at <= cutoff)
        };
        let old: Vec<String> = batch::all(self.store.db())?
            .into_iter()
            .filter(|b| b.to.iter().any(delivered_before))
            .map(|b| b.id)
            .collect();
        let mut gone = 0;
        // In writes of a bounded size: a log of months holds many.
        for ids in old.chunks(200) {
            gone += self.store.write(|tx| {
                let mut gone = 0;
                for id in ids {
                    gone += batch::retain_in(tx, id, |p| !delivered_before(p))?;
                }
                Ok(gone)
            })?;
            self.recent.forget(ids);
        }
        Ok(gone)
    }

    /// Marks the subscription's deliveries `which` picks as not delivered, in one write, and
    /// hands them to the delivery task in commit order.
    fn again(&self, s: &Subscription, which: impl Fn(&Delivery) -> bool) -> Result<Vec<Delivery>> {
        // Successes not yet recorded first: a batch written after this reset would mark what
        // is to be sent again as delivered.
        self.flush_delivered()?;
        let picked: Vec<String> = deliveries_of(&self.store, s)?
            .into_iter()
            .filter(|d| which(d))
            .map(|d| d.id)
            .collect();
        if picked.is_empty() {
            return Ok(Vec::new());
        }
        let (again, written) = self.store.write(|tx| {
            // As stored now: an attempt may have been recorded since they were read.
            let ids: Vec<&str> = picked.iter().map(String::as_str).collect();
            let mut found = batch::found_all_in(tx, &ids)?;
            let mut again = Vec::new();
            for id in &picked {
                let Some(mut d) = found.remove(id) else {
                    continue;
                };
                d.state.delivered_at = None;
                d.state.next_attempt = None;
                d.state.resets += 1;
                again.push(d);
            }
            let written = batch::put_all(tx, &again)?;
            Ok((again, written))
        })?;
        self.recent.forget(&written);
        // The task is gone only at shutdown; the deliveries stay stored for the next start.
        let queued = again.iter().map(|d| (s.id.clone(), d.id.clone())).collect();
        let _ = self.wake_tx.send(Wake::Queued(queued));
        Ok(again)
    }
}
