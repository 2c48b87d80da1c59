//! The linked-data forms of a consignment as it stood at an instant (`?at=` with an RDF or
//! JSON-LD `Accept`): the caller's graphs as they are now, less what was written after the
//! instant, with the description of the revision then current.
//!
//! - the description: the triples of the revision's activity payload (expanded again, as the
//!   inbox expanded it) replace the publisher's current description;
//! - events, documents and system events: kept when recorded by then (`dsn:recorded`,
//!   `dsn:date`), with what hangs from them; a document revision superseded later keeps no
//!   `dsn:supersededBy` to it;
//! - the summary and latest-status nodes describe the consignment now: left out.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, FixedOffset};
use oxigraph::model::{GraphName, NamedNode, NamedOrBlankNode, Quad, Term};
use serde_json::Value;

use super::{instant, Views, Visible};
use crate::jsonld::Expander;
use crate::store::graphs::{self, MINTED_PREFIX};
use crate::vocab::dsn;

impl Views {
    /// `quads` (the caller's graphs now) as they stood at `at`.
    pub(super) fn quads_at(
        &self,
        visible: &Visible,
        quads: Vec<Quad>,
        at: DateTime<FixedOffset>,
        description: Option<&Value>,
    ) -> Vec<Quad> {
        let record: NamedOrBlankNode = visible.record.clone().into();
        let publisher = GraphName::NamedNode(visible.graph.clone());
        let current = reachable_in(&quads, &record, &publisher);
        let mut kept: Vec<Quad> = quads
            .into_iter()
            .filter(|q| !(q.graph_name == publisher && current.contains(&q.subject)))
            .collect();
        if let (Some(activity), true) = (description, visible.graphs.contains(&visible.graph)) {
            kept.extend(
                self.expand_description(activity, &visible.record)
                    .into_iter()
                    .map(|(s, p, o)| Quad::new(s, p, o, publisher.clone())),
            );
        }
        let dropped = later_or_derived(&kept, at, &visible.aig);
        let mut roots: Vec<NamedOrBlankNode> = vec![record];
        roots.extend(
            kept.iter()
                .filter(|q| is_minted(&q.subject) && !dropped.contains(&q.subject))
                .filter(|q| q.predicate == dsn("recorded") || q.predicate == dsn("date"))
                .map(|q| q.subject.clone()),
        );
        let alive = reachable(&kept, roots, &dropped);
        kept.into_iter()
            .filter(|q| alive.contains(&q.subject))
            .filter(|q| !node_of(&q.object).is_some_and(|o| dropped.contains(&o)))
            .collect()
    }

    /// The triples of a stored activity's object, rooted at the consignment node. An activity
    /// the shipped contexts no longer expand (they changed since) gives none, and is logged:
    /// the read answers without that description rather than not at all.
    fn expand_description(
        &self,
        activity: &Value,
        record: &NamedNode,
    ) -> Vec<(NamedOrBlankNode, NamedNode, Term)> {
        let Some(doc) = activity.as_object() else {
            return Vec::new();
        };
        let mut expander = Expander::new(&self.contexts);
        // The record wins over an `id` the object was sent with, as at intake.
        expander.fix_subject("object", record.clone().into(), true);
        // The activity's own node is not part of the description (its object is).
        let activity_node = graphs::minted("activity", "point-in-time");
        expander.fix_subject("", activity_node.clone().into(), false);
        if let Err(e) = expander.document(doc) {
            let record = record.as_str();
            tracing::error!(record, error = %e.message, "a stored activity no longer expands");
            return Vec::new();
        }
        let triples = expander.finish().triples;
        let as_quads: Vec<Quad> = triples
            .iter()
            .map(|t| {
                Quad::new(
                    t.subject.clone(),
                    t.predicate.clone(),
                    t.object.clone(),
                    GraphName::DefaultGraph,
                )
            })
            .collect();
        let root = NamedOrBlankNode::from(record.clone());
        let activity = NamedOrBlankNode::from(activity_node);
        let inside = reachable_in(&as_quads, &root, &GraphName::DefaultGraph);
        triples
            .into_iter()
            .filter(|t| inside.contains(&t.subject) && t.subject != activity)
            .map(|t| (t.subject, t.predicate, t.object))
            .collect()
    }
}

fn is_minted(node: &NamedOrBlankNode) -> bool {
    matches!(node, NamedOrBlankNode::NamedNode(n) if n.as_str().starts_with(MINTED_PREFIX))
}

fn node_of(term: &Term) -> Option<NamedOrBlankNode> {
    match term {
        Term::NamedNode(n) => Some(n.clone().into()),
        Term::BlankNode(b) => Some(b.clone().into()),
        _ => None,
    }
}

/// The description's nodes: reachable from `root` in `graph` without entering a node the
/// node minted (events, documents and system events point at the consignment, not from it).
fn reachable_in(
    quads: &[Quad],
    root: &NamedOrBlankNode,
    graph: &GraphName,
) -> HashSet<NamedOrBlankNode> {
    let mut by_subject: HashMap<&NamedOrBlankNode, Vec<&Quad>> = HashMap::new();
    for q in quads.iter().filter(|q| &q.graph_name == graph) {
        by_subject.entry(&q.subject).or_default().push(q);
    }
    let mut seen = HashSet::new();
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if !seen.insert(node.clone()) {
            continue;
        }
        for q in by_subject.get(&node).map_or(&[][..], Vec::as_slice) {
            if let Some(next) = node_of(&q.object).filter(|n| !is_minted(n)) {
                stack.push(next);
            }
        }
    }
    seen
}

/// The minted nodes to leave out: recorded after `at`, or the summary and status nodes.
fn later_or_derived(
    quads: &[Quad],
    at: DateTime<FixedOffset>,
    aig: &str,
) -> HashSet<NamedOrBlankNode> {
    let summary: NamedOrBlankNode = graphs::summary(aig.strip_prefix("aig:").unwrap_or(aig)).into();
    let mut out = HashSet::from([summary]);
    for q in quads {
        let timed = q.predicate == dsn("recorded") || q.predicate == dsn("date");
        let later = match &q.object {
            Term::Literal(l) if timed => instant(l.value()).is_some_and(|t| t > at),
            _ => false,
        };
        if (later && is_minted(&q.subject)) || q.predicate == dsn("statusOf") {
            out.insert(q.subject.clone());
        }
    }
    out
}

/// Every node reachable from `roots` (through any object), never entering `dropped`.
fn reachable(
    quads: &[Quad],
    roots: Vec<NamedOrBlankNode>,
    dropped: &HashSet<NamedOrBlankNode>,
) -> HashSet<NamedOrBlankNode> {
    let mut by_subject: HashMap<&NamedOrBlankNode, Vec<&Quad>> = HashMap::new();
    for q in quads {
        by_subject.entry(&q.subject).or_default().push(q);
    }
    let mut seen = HashSet::new();
    let mut stack = roots;
    while let Some(node) = stack.pop() {
        if dropped.contains(&node) || !seen.insert(node.clone()) {
            continue;
        }
        for q in by_subject.get(&node).map_or(&[][..], Vec::as_slice) {
            if let Some(next) = node_of(&q.object) {
                stack.push(next);
            }
        }
    }
    seen
}
