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
    /// [`Views::fill`] with what their providers send; when some could not be, the page walks
    /// on ([`Views::list_more`]).
    pub fn list(
        &self,
        caller: &Caller,
        scope: Scope,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPlan> {
        let org = &caller.organization;
        let after = match cursor {
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
        let mut plan = ListPlan {
            org: org.clone(),
            scope,
            limit,
            // Shared rows under `all` give way to the caller's own copy of their identifier; a
            // caller with no consignment of its own (most border agencies) has none to look up.
            dedupe: scope == Scope::All && self.listing.holds_any(org),
            items: Vec::with_capacity(limit),
            consumed: after,
            more: false,
            unfilled: Unfilled::default(),
        };
        self.walk(&mut plan)?;
        Ok(plan)
    }

    /// Walks on to fill the rows of `plan` whose partner datasets could not be pulled, past
    /// the rows of the nodes that failed. Blocking.
    pub fn list_more(&self, plan: &mut ListPlan) -> Result<()> {
        self.walk(plan)
    }

    /// Reads rows after the last key `plan` consumed until it holds `limit`, and whether a
    /// further row exists. Rows of a partner node that failed a pull in this read are not
    /// asked for again: they are counted in their provider's warning.
    fn walk(&self, plan: &mut ListPlan) -> Result<()> {
        plan.more = false;
        let org = plan.org.clone();
        let mut after = plan.consumed;
        // Both sources are in list order, so the next keys of the merge are among the next
        // of each; dropped rows only mean another round.
        'scan: loop {
            let want = plan.limit - plan.items.len() + 1;
            let mut keys: Vec<(listing::Key, bool)> = Vec::new();
            if plan.scope.includes_own() {
                let own = self.listing.page(&org, after.as_ref(), want);
                keys.extend(own.into_iter().map(|k| (k, true)));
            }
            if plan.scope.includes_shared() {
                let shared = self.sharing.shared_page(&org, after.as_ref(), want);
                keys.extend(shared.into_iter().map(|k| (k, false)));
            }
            if keys.is_empty() {
                break;
            }
            keys.sort_by_key(|k| std::cmp::Reverse(k.0));
            keys.truncate(want);
            let mut read = self.prefetch(&org, &keys, plan.dedupe)?;
            for (i, (key, own)) in keys.into_iter().enumerate() {
                after = Some(key);
                let row = match read[i].take() {
                    Some(row) => row,
                    None => self.row(&org, &listing::aig(&key), own, plan.dedupe)?,
                };
                match row {
                    Some(Item::Remote(remote, _)) if plan.unfilled.failed(&remote) => {
                        plan.unfilled.skip(&remote);
                        if plan.unfilled.skipped >= MAX_SKIPPED {
                            plan.consumed = Some(key);
                            plan.more = true;
                            break 'scan;
                        }
                    }
                    Some(row) => {
                        if plan.items.len() == plan.limit {
                            plan.more = true;
                            break 'scan;
                        }
                        plan.items.push(row);
                    }
                    None => {}
                }
                plan.consumed = Some(key);
            }
        }
        Ok(())
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

/// Rows of partner nodes that failed in this read a page walks past at most, counting them
/// (a point look-up each), before it ends with a cursor there: a node may hold
/// `--federation-max-remote-records` of an organisation's rows.
const MAX_SKIPPED: usize = 10_000;

/// A list page on its way: the rows read so far, some still to be pulled from partners, and
/// where the walk stands.
pub struct ListPlan {
    pub(super) org: String,
    pub(super) scope: Scope,
    pub(super) limit: usize,
    dedupe: bool,
    pub(super) items: Vec<Item>,
    /// The last key the walk is done with (a row taken, dropped, or counted as unfilled).
    pub(super) consumed: Option<listing::Key>,
    /// A row follows the page.
    pub(super) more: bool,
    pub(super) unfilled: Unfilled,
}

impl ListPlan {
    /// Whether the page lost rows to failed pulls and the walk may fill them.
    pub fn wants_more(&self) -> bool {
        self.more && self.items.len() < self.limit && self.unfilled.skipped < MAX_SKIPPED
    }
}

/// One row of a list page: ready (JSON text), to be pulled from a partner node, or pulled.
pub(super) enum Item {
    Ready(Arc<str>),
    /// The publisher's dataset to pull, and the ids its row takes from this node's index.
    Remote(RemoteDataset, Map<String, Value>),
    /// A partner's row as its dataset's summary, with this node's ids.
    Pulled(Value),
}

/// The rows of partner datasets a page could not fill, per provider in the order met (one
/// warning each), and the partner nodes that failed a pull in this read.
#[derive(Default)]
pub(super) struct Unfilled {
    /// Provider, its first dataset left out, rows left out.
    pub(super) providers: Vec<(String, String, usize)>,
    index: std::collections::HashMap<String, usize>,
    failed_nodes: std::collections::HashSet<String>,
    /// Rows walked past because their node had failed.
    skipped: usize,
}

impl Unfilled {
    /// Counts a row of `remote` left out.
    fn count(&mut self, remote: &RemoteDataset) {
        match self.index.get(&remote.provider) {
            Some(&i) => self.providers[i].2 += 1,
            None => {
                self.index
                    .insert(remote.provider.clone(), self.providers.len());
                self.providers
                    .push((remote.provider.clone(), remote.dataset.clone(), 1));
            }
        }
    }

    /// A pull of `remote` failed: its row is left out, and its node asked nothing more.
    pub(super) fn pull_failed(&mut self, remote: &RemoteDataset) {
        self.count(remote);
        self.failed_nodes
            .insert(node_of(&remote.provider).to_owned());
    }

    /// Whether `remote`'s node failed a pull in this read.
    fn failed(&self, remote: &RemoteDataset) -> bool {
        self.failed_nodes.contains(node_of(&remote.provider))
    }

    /// Counts a row of a failed node the walk passes.
    fn skip(&mut self, remote: &RemoteDataset) {
        self.count(remote);
        self.skipped += 1;
    }
}

/// The node of a provider organisation (the provider itself when it names none).
fn node_of(provider: &str) -> &str {
    crate::federation::did::node_of(provider).unwrap_or(provider)
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
