//! A subscription's delivery log, and deliveries sent again: one by its id, or every one
//! queued since an instant (a replay). Sent again under the same `webhook-id` and with the same
//! body, so a receiver that has them already recognises them.

use oxigraph::model::NamedOrBlankNode;
use serde_json::{json, Value};

use super::batch;
use super::queue::{self, Delivery};
use super::{subject, Wake, Webhooks};
use crate::consignment::cursor::Position;
use crate::consignment::Page;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::vocab::dsn;

/// Every delivery of subscription `id`, with a record of its own or waiting in its batch,
/// oldest first. Blocking.
fn deliveries_of(store: &Store, id: &str) -> Result<Vec<Delivery>> {
    let (of, g) = (dsn("deliveryOf"), queue::graph());
    let mut out = Vec::new();
    for q in store.db().quads_for_pattern(
        None,
        Some(of.as_ref()),
        Some(subject(id).as_ref().into()),
        Some(g.as_ref().into()),
    ) {
        let node: NamedOrBlankNode = q?.subject;
        out.extend(queue::stored_at(store.db(), node.as_ref())?.map(|(_, d)| d));
    }
    for b in batch::all(store.db())? {
        out.extend(b.deliveries().filter(|d| d.subscription == id));
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
        self.owned(org, id)?;
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
        let mut all: Vec<Delivery> = deliveries_of(&self.store, id)?
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
        self.owned(org, id)?;
        let again = self.again(id, |d| d.id == delivery)?;
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
        self.owned(org, id)?;
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
        let again = self.again(id, |d| {
            chrono::DateTime::parse_from_rfc3339(&d.created).is_ok_and(|c| c >= since)
        })?;
        Ok(json!({"replayed": again.len()}))
    }

    /// Marks the subscription's deliveries `which` picks as not delivered, in one write, and
    /// hands them to the delivery task in commit order.
    fn again(&self, id: &str, which: impl Fn(&Delivery) -> bool) -> Result<Vec<Delivery>> {
        // Successes not yet recorded first: a batch written after this reset would mark what
        // is to be sent again as delivered.
        self.flush_delivered()?;
        let picked: Vec<Delivery> = deliveries_of(&self.store, id)?
            .into_iter()
            .filter(|d| which(d))
            .collect();
        if picked.is_empty() {
            return Ok(Vec::new());
        }
        let again = self.store.write(|tx| {
            let mut again = Vec::new();
            for d in picked {
                // As stored now: an attempt may have been recorded since it was read.
                let Some(mut d) = batch::found_in(tx, &d.id)? else {
                    continue;
                };
                d.delivered_at = None;
                d.next_attempt = None;
                d.resets += 1;
                again.push(d);
            }
            batch::put_all(tx, &again)?;
            Ok(again)
        })?;
        for d in &again {
            // The task is gone only at shutdown; the deliveries stay stored for the next start.
            let _ = self.wake_tx.send(Wake::Queued {
                subscription: id.to_owned(),
                id: d.id.clone(),
            });
        }
        Ok(again)
    }
}
