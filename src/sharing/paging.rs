//! Pages of what was shared with an organisation: the consignments of its list and its
//! notifications, newest first, and the notifications a stream sends next.

use serde_json::Value;

use super::Sharing;
use crate::auth::Caller;
use crate::consignment::cursor::Position;
use crate::consignment::listing::Key;
use crate::consignment::Page;
use crate::error::{Error, Result};

impl Sharing {
    /// Up to `n` list keys of consignments shared with `org`, newest first, after `after`.
    pub fn shared_page(&self, org: &str, after: Option<&Key>, n: usize) -> Vec<Key> {
        self.shared.page(org, after, n)
    }

    /// `GET /notifications`: the caller organisation's, newest first.
    pub fn notification_page(
        &self,
        caller: &Caller,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page> {
        let org = &caller.organization;
        let before = match cursor {
            Some(c) => Some(
                self.cursors
                    .decode(c, "notifications", org, "")?
                    .id
                    .parse::<u64>()
                    .map_err(|_| Error::invalid_field("cursor", "bad position"))?,
            ),
            None => None,
        };
        let seqs = self.notifications.page(org, before, limit + 1);
        let more = seqs.len() > limit;
        let mut entities = Vec::with_capacity(limit);
        for seq in seqs.iter().take(limit) {
            entities.extend(self.notifications.json(&self.store, org, *seq)?);
        }
        let cursor = match (more, seqs.get(limit - 1)) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list: "notifications".into(),
                org: org.clone(),
                scope: String::new(),
                at: String::new(),
                id: last.to_string(),
            })),
            _ => None,
        };
        Ok(Page::new(entities, cursor))
    }

    /// The caller organisation's notifications numbered above `after`, oldest first, at most
    /// `n`: what a stream sends next. Blocking.
    pub fn notifications_after(
        &self,
        org: &str,
        after: u64,
        n: usize,
    ) -> Result<Vec<(u64, Value)>> {
        let mut out = Vec::new();
        for seq in self.notifications.after(org, after, n) {
            if let Some(json) = self.notifications.json(&self.store, org, seq)? {
                out.push((seq, json));
            }
        }
        Ok(out)
    }
}
