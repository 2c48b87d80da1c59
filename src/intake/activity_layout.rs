//! Rewrites the activity graphs of data dirs from before 2026-11-26 into the layout the inbox
//! writes now: each applied activity's payload on its log entry, next to the entry's type and
//! JSON, and nothing else. Before, the payload was on an activity node (the caller's `id`, or
//! `urn:dataspace-node:activity:<entry id>`) with its type, a second copy of the credential
//! and the link to the entry (`dsn:logEntry`), and, earlier still, the activity's own triples
//! (actor, object, target, and the actor's and target's), `as:generator`, `dsn:activityHash`,
//! `dsn:consignment`, and the entry's `dsn:status` and `dsn:dateCreated` — none of which any
//! read took but the payload.
//!
//! It runs while the node serves, not before: at a million activities it is minutes of work
//! and, until compaction catches up, gigabytes of deleted keys (measured in docs/PERFORMANCE.md),
//! and the reads understand both layouts meanwhile (`store::activities`). Batches of whole
//! subjects, one transaction each (a payload moves in the transaction that drops its activity
//! node), so a crash or a shutdown between batches leaves each activity in one layout or the
//! other, and the next start goes over the graphs again (rewriting only what is left); after
//! each batch, and every 20,000 quads read, it waits as long as that stretch took (at most a
//! second, asking every 50 ms whether to stop), so it takes about half of a core (one subject
//! with many entries is one batch, however large). A marker
//! in the layout graph says it is done, so later starts cost one look-up. A payload whose
//! credential names none of its node's entries was never readable (the reads pick a node's
//! payload by the credential's `jti`); it is left where it is.

use std::time::{Duration, Instant};

use oxigraph::model::{GraphName, NamedNode, NamedOrBlankNode, Quad, Term};
use serde_json::Value;

use crate::error::Result;
use crate::store::graphs::LayoutMarker;
use crate::store::{activities, Store};
use crate::vocab::dsn;

/// Quads changed per transaction (at most, about): bounds the memory of one commit and how
/// long the inbox waits for the writer lock (a few milliseconds).
const BATCH: usize = 2_000;

/// How often a long rewrite says how far it got.
const PROGRESS: Duration = Duration::from_secs(30);

/// Quads read between two pauses (and stop checks) where there is nothing to write.
const SCAN_CHUNK: usize = 20_000;

const ACTIVITIES: &str = "urn:dataspace-node:activities:";
const ENTRY: &str = "urn:dataspace-node:activity-log:";

const MARKER: LayoutMarker = LayoutMarker {
    property: "activityLayout",
    value: "entry",
};

/// Whether the upgrade is still to run. Blocking.
pub fn pending(store: &Store) -> Result<bool> {
    Ok(!store.upgraded(&MARKER)?)
}

/// What the upgrade did.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Moved {
    /// Payloads moved onto their log entries.
    #[serde(rename = "payloadsMoved")]
    pub payloads: usize,
    /// Quads removed (activity nodes and what nothing read).
    #[serde(rename = "quadsRemoved")]
    pub removed: usize,
}

/// Where a rewrite stands, as `/health` tells operators: at a million activities it runs for
/// minutes, and its end is when `dataspace-node compact` gives back the space it freed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub state: State,
    /// So far (counted as each batch is formed), then in all.
    #[serde(flatten)]
    pub moved: Moved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Running,
    Done,
    /// Stopped at shutdown; the next start goes on.
    Stopped,
    /// Stopped by an error (in the log); the next start tries again.
    Failed,
}

/// The rewrite's [`Status`], shared with the readers of `/health`; `None` until one starts
/// (and for good when the store needs none).
#[derive(Debug, Default)]
pub struct Progress(std::sync::Mutex<Option<Status>>);

impl Progress {
    pub fn status(&self) -> Option<Status> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, state: State, moved: &Moved) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Status {
            state,
            moved: moved.clone(),
        });
    }

    /// Before the rewrite's task runs: `/health` says it is under way from the first answer.
    pub fn starting(&self) {
        self.set(State::Running, &Moved::default());
    }

    /// The rewrite ended with an error.
    pub fn failed(&self) {
        let moved = self.status().map(|s| s.moved).unwrap_or_default();
        self.set(State::Failed, &moved);
    }
}

/// Rewrites every activity graph, then marks the store done; `None` when `stopping` said so
/// first (asked after every batch written and every `SCAN_CHUNK` quads read). `progress`
/// follows it at every pause. Blocking.
pub fn run(
    store: &Store,
    stopping: &dyn Fn() -> bool,
    progress: &Progress,
) -> Result<Option<Moved>> {
    let mut done = Moved::default();
    progress.set(State::Running, &done);
    let mut batch = Batch::default();
    let started = Instant::now();
    let mut pace = Pace::new();
    // Quads read since the last pause, across graphs: most organisations' graphs are small.
    let mut read = 0usize;
    for graph in &activity_graphs(store)? {
        // The graph's quads come ordered by subject; the scan reads a snapshot, which the
        // batches written meanwhile do not disturb (and which writes since never concern:
        // the inbox writes only on log entries).
        let mut group: Vec<Quad> = Vec::new();
        for quad in store
            .db()
            .quads_for_pattern(None, None, None, Some(graph.as_ref().into()))
        {
            let quad = quad?;
            read += 1;
            if group.first().is_some_and(|q| q.subject != quad.subject) {
                batch.subject(std::mem::take(&mut group), graph, &mut done);
                let full = batch.len() >= BATCH;
                if full {
                    batch.write(store)?;
                }
                // A rewrite stopped before goes over what it did again: reading only, but
                // paced and stoppable as well.
                if full || read >= SCAN_CHUNK {
                    read = 0;
                    progress.set(State::Running, &done);
                    if stopping() || pace.pause(&done, started, stopping) {
                        progress.set(State::Stopped, &done);
                        return Ok(None);
                    }
                }
            }
            group.push(quad);
        }
        if !group.is_empty() {
            batch.subject(group, graph, &mut done);
        }
    }
    batch.insert.push(MARKER.quad());
    batch.write(store)?;
    progress.set(State::Done, &done);
    if done != Moved::default() {
        tracing::info!(
            payloads = done.payloads,
            removed = done.removed,
            seconds = started.elapsed().as_secs(),
            "activity graphs rewritten: payloads moved onto their log entries"
        );
    }
    Ok(Some(done))
}

/// Keeps the rewrite to about half of a core: after each stretch of work it waits as long as
/// the stretch took, and says how far it got every `PROGRESS`.
struct Pace {
    since: Instant,
    reported: Instant,
}

impl Pace {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            since: now,
            reported: now,
        }
    }

    /// Waits (at most a second, in slices that ask `stopping`); `true` when asked to stop.
    fn pause(&mut self, done: &Moved, started: Instant, stopping: &dyn Fn() -> bool) -> bool {
        let until = Instant::now() + self.since.elapsed().min(Duration::from_secs(1));
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            if stopping() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        self.since = Instant::now();
        if self.reported.elapsed() >= PROGRESS {
            self.reported = self.since;
            tracing::info!(
                payloads = done.payloads,
                removed = done.removed,
                seconds = started.elapsed().as_secs(),
                "rewriting activity graphs from before 2026-11-26"
            );
        }
        false
    }
}

fn activity_graphs(store: &Store) -> Result<Vec<NamedNode>> {
    Ok(store
        .db()
        .named_graphs()
        .filter_map(|g| match g {
            Ok(NamedOrBlankNode::NamedNode(n)) if n.as_str().starts_with(ACTIVITIES) => Some(Ok(n)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<std::result::Result<_, _>>()?)
}

#[derive(Default)]
struct Batch {
    remove: Vec<Quad>,
    insert: Vec<Quad>,
}

impl Batch {
    /// The changes for the quads of one subject in activity graph `graph`.
    fn subject(&mut self, quads: Vec<Quad>, graph: &NamedNode, done: &mut Moved) {
        let is_entry = matches!(&quads[0].subject, NamedOrBlankNode::NamedNode(n)
            if n.as_str().starts_with(ENTRY));
        if is_entry {
            // An entry keeps its type, JSON and payload; its status and date are in the JSON.
            let unread = [dsn("status"), dsn("dateCreated")];
            for q in quads.into_iter().filter(|q| unread.contains(&q.predicate)) {
                self.remove.push(q);
                done.removed += 1;
            }
            return;
        }
        let links: Vec<NamedNode> = quads
            .iter()
            .filter(|q| q.predicate == dsn("logEntry"))
            .filter_map(|q| match &q.object {
                Term::NamedNode(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let g = GraphName::NamedNode(graph.clone());
        for q in quads {
            if q.predicate == dsn("payload") {
                match entry_of(&q.object, &links) {
                    Some(entry) => {
                        let moved = Quad::new(entry, dsn("payload"), q.object.clone(), g.clone());
                        self.insert.push(moved);
                        done.payloads += 1;
                    }
                    // Never readable: kept as it was.
                    None => continue,
                }
            }
            self.remove.push(q);
            done.removed += 1;
        }
    }

    fn len(&self) -> usize {
        self.remove.len() + self.insert.len()
    }

    fn write(&mut self, store: &Store) -> Result<()> {
        store.rewrite(&self.remove, &self.insert)?;
        self.remove.clear();
        self.insert.clear();
        Ok(())
    }
}

/// The log entry among `links` that the payload's credential names (its `jti`).
fn entry_of(payload: &Term, links: &[NamedNode]) -> Option<NamedNode> {
    let Term::Literal(text) = payload else {
        return None;
    };
    let activity: Value = serde_json::from_str(text.value()).ok()?;
    let jti = activities::claims(activity.get("trustCredential")?.as_str()?)?
        .get("jti")?
        .as_str()?
        .to_owned();
    links
        .iter()
        .find(|l| l.as_str().strip_prefix(ENTRY) == Some(jti.as_str()))
        .cloned()
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use oxigraph::model::Literal;
    use serde_json::json;

    use super::*;

    fn payload(jti: &str) -> Term {
        let claims = URL_SAFE_NO_PAD.encode(json!({ "jti": jti }).to_string());
        let activity = json!({"type": "Create", "trustCredential": format!("h.{claims}.s")});
        Literal::new_typed_literal(
            activity.to_string(),
            NamedNode::new_unchecked(crate::vocab::RDF_JSON),
        )
        .into()
    }

    /// A caller that gave two activities the same `id` left one node with two entries and two
    /// payloads: each payload goes to the entry its credential names; one that names neither
    /// stays; everything else of the node goes.
    #[test]
    fn each_payload_moves_to_the_entry_its_credential_names() {
        let g = NamedNode::new_unchecked(format!("{ACTIVITIES}k"));
        let gn = GraphName::NamedNode(g.clone());
        let act = NamedNode::new_unchecked("https://trader.example/activities/1");
        let entry = |id: &str| NamedNode::new_unchecked(format!("{ENTRY}{id}"));
        let quad = |p: &str, o: Term| Quad::new(act.clone(), dsn(p), o, gn.clone());
        let quads = vec![
            quad("logEntry", entry("aa").into()),
            quad("logEntry", entry("bb").into()),
            quad("payload", payload("bb")),
            quad("payload", payload("aa")),
            quad("payload", payload("cc")),
            quad("trustCredential", Literal::from("h.x.s").into()),
        ];
        let (mut batch, mut done) = (Batch::default(), Moved::default());
        batch.subject(quads, &g, &mut done);
        let moved = |id: &str| Quad::new(entry(id), dsn("payload"), payload(id), gn.clone());
        assert_eq!(batch.insert, vec![moved("bb"), moved("aa")]);
        assert!(!batch.remove.contains(&quad("payload", payload("cc"))));
        assert_eq!(batch.remove.len(), 5);
        assert_eq!(
            done,
            Moved {
                payloads: 2,
                removed: 5
            }
        );

        // On an entry, only what its JSON holds goes.
        let on_entry = |p: &str, o: Term| Quad::new(entry("aa"), dsn(p), o, gn.clone());
        let (mut batch, mut done) = (Batch::default(), Moved::default());
        let status = on_entry("status", Literal::from("completed").into());
        batch.subject(
            vec![
                on_entry("entryJson", payload("aa")),
                status.clone(),
                on_entry("payload", payload("aa")),
            ],
            &g,
            &mut done,
        );
        assert_eq!((batch.remove, batch.insert), (vec![status], vec![]));
    }

    /// A rewrite asked to stop stops after its first batch, leaves every activity whole in one
    /// layout or the other and the store unmarked; the next run finishes it.
    #[test]
    fn a_stopped_rewrite_leaves_whole_activities_and_the_next_one_finishes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let gn = GraphName::NamedNode(NamedNode::new_unchecked(format!("{ACTIVITIES}k")));
        let n = 600; // five changes each: more than one batch
        let entry = |i: usize| NamedNode::new_unchecked(format!("{ENTRY}{i:032x}"));
        let old: Vec<Quad> = (0..n)
            .flat_map(|i| {
                let act = NamedNode::new_unchecked(format!("urn:dataspace-node:activity:{i}"));
                let id = format!("{i:032x}");
                [
                    Quad::new(act.clone(), dsn("logEntry"), entry(i), gn.clone()),
                    Quad::new(act.clone(), dsn("payload"), payload(&id), gn.clone()),
                    Quad::new(
                        act.clone(),
                        dsn("trustCredential"),
                        Literal::from("c"),
                        gn.clone(),
                    ),
                    Quad::new(act, dsn("activityHash"), Literal::from("h"), gn.clone()),
                    Quad::new(entry(i), dsn("entryJson"), Literal::from("{}"), gn.clone()),
                ]
            })
            .collect();
        store.rewrite(&[], &old).unwrap();
        let on_entries = |store: &Store| {
            (0..n)
                .filter(|&i| {
                    let q = Quad::new(
                        entry(i),
                        dsn("payload"),
                        payload(&format!("{i:032x}")),
                        gn.clone(),
                    );
                    store.db().contains(&q).unwrap()
                })
                .count()
        };

        let progress = Progress::default();
        assert_eq!(run(&store, &|| true, &progress).unwrap(), None);
        let moved = on_entries(&store);
        assert!(0 < moved && moved < n, "{moved}");
        assert!(pending(&store).unwrap());
        let stopped = progress.status().unwrap();
        assert_eq!(stopped.state, State::Stopped);
        assert_eq!(stopped.moved.payloads, moved);
        // Whole activities: each payload is on its entry or still on its node, never both or
        // neither.
        let on_nodes = store
            .db()
            .quads_for_pattern(None, Some(dsn("payload").as_ref()), None, None)
            .filter(|q| !q.as_ref().unwrap().subject.to_string().contains(ENTRY))
            .count();
        assert_eq!(moved + on_nodes, n);

        let progress = Progress::default();
        let done = run(&store, &|| false, &progress).unwrap().unwrap();
        assert_eq!(done.payloads, n - moved);
        let status = progress.status().unwrap();
        assert_eq!((status.state, status.moved), (State::Done, done));
        assert_eq!(on_entries(&store), n);
        assert!(!pending(&store).unwrap());
        assert_eq!(store.db().len().unwrap(), 2 * n + 1);
    }

    /// Where there is nothing to rewrite (failed entries: two quads each, in many graphs or
    /// one), reading still pauses and asks whether to stop.
    #[test]
    fn a_rewrite_that_only_reads_still_stops() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let quads: Vec<Quad> = (0..SCAN_CHUNK / 2 + 1)
            .flat_map(|i| {
                let g = GraphName::NamedNode(NamedNode::new_unchecked(format!(
                    "{ACTIVITIES}{}",
                    i % 3
                )));
                let entry = NamedNode::new_unchecked(format!("{ENTRY}{i:032x}"));
                [
                    Quad::new(
                        entry.clone(),
                        dsn("entryJson"),
                        Literal::from("{}"),
                        g.clone(),
                    ),
                    Quad::new(entry, dsn("type"), Literal::from("t"), g),
                ]
            })
            .collect();
        store.rewrite(&[], &quads).unwrap();
        assert_eq!(run(&store, &|| true, &Progress::default()).unwrap(), None);
        assert!(pending(&store).unwrap());
        assert_eq!(
            run(&store, &|| false, &Progress::default()).unwrap(),
            Some(Moved::default())
        );
        assert!(!pending(&store).unwrap());
        assert_eq!(store.db().len().unwrap(), quads.len() + 1);
    }
}
