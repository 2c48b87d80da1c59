//! The list pages: own, shared and merged, newest first, with rows from the row cache.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::vocab::dsn;

/// Rows missing from the cache from which a page reads them on several threads
/// ([`Views::prefetch`]), and on how many: measured with 2, 4 and 8, four gave the cold page
/// most of what eight did (15–18 ms against 14–15, from 33–40) and a fifth off the warm one,
/// where eight were as slow as one (two cores here).
const PREFETCH_AT_LEAST: usize = 8;
const PREFETCH_THREADS: usize = 4;
/// At most this many such threads node-wide: many pages read at once (a crawler, a burst of
/// clients after a restart) read their rows one after the other beyond it, rather than
/// starting four threads each on cores the blocking pool already keeps busy.
const PREFETCH_THREADS_NODE_WIDE: usize = 16;

impl Views {
    /// `GET /consignments`: the caller's consignments (`own`), those shared with it
    /// (`shared`) or both merged newest first, a shared row dropped when the caller has its own
    /// consignment with that identifier (`all`). Blocking.
    /// Rows of consignments held elsewhere come back as [`Item::Remote`], completed by
    /// [`Views::finish_list`] with what their providers send.
    pub fn list(
        &self,
        caller: &Caller,
        scope: Scope,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPlan> {
        let org = &caller.organization;
        let mut after = match cursor {
            Some(c) => {
                let p = self
                    .cursors
                    .decode(c, "consignments", org, scope.as_str())?;
                let key = listing::millis(&p.at)
                    .and_then(|ms| listing::key(ms, &p.id))
                    .ok_or_else(|| Error::invalid_field("cursor", "bad position"))?;
                Some(key)
            }
            None => None,
        };
        // Shared rows under `all` give way to the caller's own copy of their identifier; a
        // caller with no consignment of its own (most border agencies) has none to look up.
        let dedupe = scope == Scope::All && self.listing.holds_any(org);
        let mut rows = Vec::with_capacity(limit);
        let mut last = None;
        let mut more = false;
        // Both sources are in list order, so the next `limit + 1` keys of the merge are among
        // the next `limit + 1` of each; dropped duplicates only mean another round.
        'scan: loop {
            let mut keys: Vec<(listing::Key, bool)> = Vec::new();
            if scope.includes_own() {
                let own = self.listing.page(org, after.as_ref(), limit + 1);
                keys.extend(own.into_iter().map(|k| (k, true)));
            }
            if scope.includes_shared() {
                let shared = self.sharing.shared_page(org, after.as_ref(), limit + 1);
                keys.extend(shared.into_iter().map(|k| (k, false)));
            }
            if keys.is_empty() {
                break;
            }
            keys.sort_by_key(|k| std::cmp::Reverse(k.0));
            keys.truncate(limit + 1);
            let mut read = self.prefetch(org, &keys, dedupe)?;
            for (i, (key, own)) in keys.into_iter().enumerate() {
                after = Some(key);
                let row = match read[i].take() {
                    Some(row) => row,
                    None => self.row(org, &listing::aig(&key), own, dedupe)?,
                };
                let Some(row) = row else { continue };
                if rows.len() == limit {
                    more = true;
                    break 'scan;
                }
                rows.push(row);
                last = Some(key);
            }
        }
        let cursor = match (more, last) {
            (true, Some(key @ (ms, _))) => Some(
                self.cursors.encode(&Position {
                    list: "consignments".into(),
                    org: org.clone(),
                    scope: scope.as_str().into(),
                    at: chrono::DateTime::from_timestamp_millis(ms)
                        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                        .unwrap_or_default(),
                    id: listing::aig(&key),
                }),
            ),
            _ => None,
        };
        Ok(ListPlan {
            items: rows,
            cursor,
        })
    }

    /// Reads the rows of `keys` that take store reads, several at once, and returns them by
    /// position (`None`: left to the page's loop). A row read from the store is a few seeks
    /// through every level of RocksDB, each a read from the disk when the OS has not cached
    /// that part of the files; one after the other, a page of rows nobody had read since
    /// start-up (a client paging through a long list) took 33–40 ms with a cold page cache
    /// and 7–9 ms with a warm one at 100,000 and 1,106,000 consignments (docs/PERFORMANCE.md).
    /// The reads are mostly waits, so threads overlap them even on few cores; pages whose rows
    /// are cached (the usual case) start none. Rows no cache answers — a partner's dataset, a
    /// shared row checked against the caller's own copies — count as reads too, and what is
    /// read is handed back rather than read again by the loop.
    fn prefetch(
        &self,
        org: &str,
        keys: &[(listing::Key, bool)],
        dedupe: bool,
    ) -> Result<Vec<Option<Option<Item>>>> {
        let mut read: Vec<Option<Option<Item>>> = keys.iter().map(|_| None).collect();
        let reads: Vec<usize> = (0..keys.len())
            .filter(|&i| {
                let (key, own) = &keys[i];
                (!own && dedupe) || self.listing.rows.get(key.1).is_err()
            })
            .collect();
        if reads.len() < PREFETCH_AT_LEAST {
            return Ok(read);
        }
        let part = reads.len().div_ceil(PREFETCH_THREADS);
        let Some(_threads) = Reserved::take(&self.prefetching, reads.len().div_ceil(part)) else {
            return Ok(read);
        };
        std::thread::scope(|scope| {
            let reading: Vec<_> = reads
                .chunks(part)
                .map(|chunk| {
                    scope.spawn(move || -> Result<Vec<(usize, Option<Item>)>> {
                        chunk
                            .iter()
                            .map(|&i| {
                                let (key, own) = &keys[i];
                                Ok((i, self.row(org, &listing::aig(key), *own, dedupe)?))
                            })
                            .collect()
                    })
                })
                .collect();
            // Every thread joined before an error is returned: a scope with a panicked thread
            // left unjoined panics itself.
            let joined: Vec<_> = reading.into_iter().map(|r| r.join()).collect();
            for rows in joined {
                let rows = rows.map_err(|_| Error::internal("a row read panicked"))??;
                for (i, row) in rows {
                    read[i] = Some(row);
                }
            }
            Ok(read)
        })
    }

    /// One key's row: the caller's own consignment's, or one shared with it.
    fn row(&self, org: &str, aig: &str, own: bool, dedupe: bool) -> Result<Option<Item>> {
        if own {
            Ok(self.summary_row_of(org, aig)?.map(Item::Ready))
        } else {
            self.shared_row(org, aig, dedupe)
        }
    }

    /// The list row of a consignment shared with `org`; `None` when `dedupe` and `org` has
    /// its own consignment with the same identifier (its own copy wins).
    pub(super) fn shared_row(&self, org: &str, aig: &str, dedupe: bool) -> Result<Option<Item>> {
        // A cached row is a local consignment's (a partner's are never cached), the same for
        // every caller, and `org` reaches it through its shared list: without the own-copy
        // check to make, it is the answer, with no look-up of the publisher (an agency's page
        // took twice an own page's time for them, docs/PERFORMANCE.md).
        if !dedupe {
            if let Some(Ok(row)) = listing::id_bits(aig).map(|bits| self.listing.rows.get(bits)) {
                return Ok(Some(Item::Ready(row)));
            }
        }
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let record = graphs::consignment(hex);
        let index = graphs::consignment_index();
        let publisher = match self.store.value(&record, &dsn("publisher"), &index)? {
            Some(Term::NamedNode(n)) => Some(n.into_string()),
            _ => None,
        };
        let Some(publisher) = publisher else {
            return Ok(None);
        };
        if dedupe {
            if let Some(identifier) = self.fact(&record, "identifier", &index)? {
                let org = NamedNode::new_unchecked(org);
                if crate::store::index::owns(&self.store, &org, &identifier)? {
                    return Ok(None);
                }
            }
        }
        if self.sharing.is_remote(&publisher) {
            let dataset = self
                .store
                .value(&record, &dsn("graph"), &index)?
                .map(|o| match o {
                    Term::NamedNode(n) => n.into_string(),
                    other => other.to_string(),
                });
            // The row's ids are this node's record's, whatever the partner's summary says.
            let mut ids = Map::new();
            ids.insert("id".into(), json!(aig));
            ids.insert("aigId".into(), json!(aig));
            for key in ["globalId", "identifier"] {
                if let Some(value) = self.fact(&record, key, &index)? {
                    ids.insert(key.into(), json!(value));
                }
            }
            return Ok(dataset.map(|dataset| {
                Item::Remote(
                    RemoteDataset {
                        provider: publisher,
                        dataset,
                    },
                    ids,
                )
            }));
        }
        Ok(self.summary_row_of(&publisher, aig)?.map(Item::Ready))
    }

    /// The literal value of `s p ?o` in graph `g`.
    pub(super) fn fact(&self, s: &NamedNode, p: &str, g: &NamedNode) -> Result<Option<String>> {
        Ok(match self.store.value(s, &dsn(p), g)? {
            Some(Term::Literal(l)) => Some(l.value().to_owned()),
            _ => None,
        })
    }

    /// The list row of one of `publisher`'s consignments: point look-ups in the store's
    /// indexes, every IRI being known from the listing key (the same facts as
    /// `queries/consignment_summary.rq`, which the benchmark runs as the raw baseline; a query
    /// per row cost 0.3 ms of evaluation set-up, most of a 50-row page).
    /// The rendered row, as JSON text: cached ones are shared, not parsed or serialised again
    /// (parsing the stored summary JSON was a fifth of a cached page's time; cloning and
    /// serialising the rows as values most of the rest).
    pub(super) fn summary_row_of(&self, publisher: &str, aig: &str) -> Result<Option<Arc<str>>> {
        let Some(bits) = listing::id_bits(aig) else {
            return Ok(None);
        };
        let version = match self.listing.rows.get(bits) {
            Ok(row) => return Ok(Some(row)),
            Err(version) => version,
        };
        Ok(self.read_summary_row(publisher, aig)?.map(|row| {
            let text = summary_row(&row).to_string();
            self.listing.rows.put(bits, version, text)
        }))
    }

    pub(super) fn read_summary_row(&self, publisher: &str, aig: &str) -> Result<Option<Row>> {
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let record = graphs::consignment(hex);
        let index = graphs::consignment_index();
        let graph = graphs::contribution(hex, publisher);
        let status = graphs::minted("status", &format!("{hex}:{}", graphs::org_key(publisher)));
        let one = |s: &NamedNode, p: &str, g: &NamedNode| self.fact(s, p, g);
        // The aig id is the listing key's; each look-up is a seek through every level of the
        // store, so none is made twice.
        let (Some(created), Some(updated), Some(summary)) = (
            one(&record, "created", &index)?,
            one(&record, "updated", &index)?,
            one(&graphs::summary(hex), "summaryJson", &graph)?,
        ) else {
            return Ok(None);
        };
        let aig = format!("aig:{hex}");
        // The status node's facts in one scan.
        let (mut name, mut at) = (None, None);
        for quad in self.store.db().quads_for_pattern(
            Some(status.as_ref().into()),
            None,
            None,
            Some(graph.as_ref().into()),
        ) {
            let quad = quad?;
            if let Term::Literal(l) = quad.object {
                match quad.predicate.as_str().strip_prefix(crate::vocab::DSN) {
                    Some("latestTypeCode") => name = Some(l.value().to_owned()),
                    Some("latestAt") => at = Some(l.value().to_owned()),
                    _ => {}
                }
            }
        }
        let status = name.zip(at);
        Ok(Some(Row {
            aig,
            created,
            updated,
            summary,
            status,
        }))
    }
}

/// Threads reserved from a node-wide count, given back when dropped.
struct Reserved<'a> {
    count: &'a AtomicUsize,
    n: usize,
}

impl<'a> Reserved<'a> {
    fn take(count: &'a AtomicUsize, n: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running + n <= PREFETCH_THREADS_NODE_WIDE).then_some(running + n)
            })
            .ok()
            .map(|_| Self { count, n })
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(self.n, Ordering::AcqRel);
    }
}

/// A list page before partner datasets are pulled.
pub struct ListPlan {
    pub(super) items: Vec<Item>,
    pub(super) cursor: Option<String>,
}

/// One row of a list page: ready (JSON text), or to be pulled from a partner node.
pub(super) enum Item {
    Ready(Arc<str>),
    /// The publisher's dataset to pull, and the ids its row takes from this node's index.
    Remote(RemoteDataset, Map<String, Value>),
}

/// The stored facts of one list row.
fn summary_row(row: &Row) -> Value {
    let mut s = match parse_json(&row.summary) {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let aig = row.aig.clone();
    s.insert("id".into(), json!(aig));
    s.insert("aigId".into(), json!(aig));
    // The scheduled departure is only the fallback status, never a column of its own.
    let scheduled = s.remove("scheduledDeparture");
    if let Some((name, at)) = &row.status {
        s.insert("latestStatus".into(), json!({"name": name, "date": at}));
    } else if let Some(Value::String(date)) = scheduled {
        s.insert(
            "latestStatus".into(),
            json!({"name": "scheduledDeparture", "date": date}),
        );
    }
    s.insert("dateCreated".into(), json!(row.created));
    s.insert("dateUpdated".into(), json!(row.updated));
    Value::Object(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_threads_are_bounded_node_wide_and_given_back() {
        let count = AtomicUsize::new(0);
        let held: Vec<_> = (0..PREFETCH_THREADS_NODE_WIDE / PREFETCH_THREADS)
            .map(|_| Reserved::take(&count, PREFETCH_THREADS).unwrap())
            .collect();
        assert!(Reserved::take(&count, PREFETCH_THREADS).is_none());
        drop(held);
        assert_eq!(count.load(Ordering::Acquire), 0);
        assert!(Reserved::take(&count, PREFETCH_THREADS).is_some());
    }
}
