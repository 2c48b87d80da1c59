//! An `Update`'s new description with the stored blank nodes where its subtrees are unchanged.
//!
//! Every expansion labels blank nodes afresh, so without this an `Update` that changes one field
//! removes and writes again every quad below the consignment node: twice a `Create`'s commit,
//! and one more deleted version of each key that later scans of the consignment step over.
//! With the stored labels reused, the unchanged subtrees are the same quads as stored and the
//! replacing writer ([`super::writer::Writer::replacing`]) leaves them alone.
//!
//! Correct whatever the matching: the write leaves exactly the relabelled description, and any
//! one-to-one renaming of blank nodes to blank nodes of the replaced description (which nothing
//! else names) gives a graph isomorphic to the new one. Fingerprints only choose a renaming
//! that keeps most: two subtrees with the same fingerprint are, but for a hash collision,
//! equal up to their labels.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use oxigraph::model::{BlankNode, NamedOrBlankNode, Quad, Term, Triple};

/// Deeper than any description; past it (or in a cycle, which `@id`s of blank nodes can
/// make) a node gets a fingerprint of its own label and keeps no stored subtree.
const MAX_DEPTH: usize = 64;

/// `new` with each blank node that has a stored twin (same fingerprint, not taken yet) renamed
/// to it. `old` are the quads the write replaces.
pub(super) fn reuse_blank_nodes(old: &[Quad], new: Vec<Triple>) -> Vec<Triple> {
    let old_tree = Tree::of(old.iter().map(|q| (&q.subject, &q.predicate, &q.object)));
    let new_tree = Tree::of(new.iter().map(|t| (&t.subject, &t.predicate, &t.object)));
    let mut stored: HashMap<u64, Vec<BlankNode>> = HashMap::new();
    let mut memo = HashMap::new();
    for node in old_tree.blank_nodes() {
        let fingerprint = old_tree.fingerprint(node, &mut memo, &mut HashSet::new(), 0);
        stored.entry(fingerprint).or_default().push(node.clone());
    }
    let mut rename: HashMap<BlankNode, BlankNode> = HashMap::new();
    let mut memo = HashMap::new();
    for node in new_tree.blank_nodes() {
        let fingerprint = new_tree.fingerprint(node, &mut memo, &mut HashSet::new(), 0);
        if let Some(twin) = stored.get_mut(&fingerprint).and_then(Vec::pop) {
            rename.insert(node.clone(), twin);
        }
    }
    let renamed = |b: &BlankNode| rename.get(b).cloned().unwrap_or_else(|| b.clone());
    new.into_iter()
        .map(|t| {
            let subject = match t.subject {
                NamedOrBlankNode::BlankNode(b) => renamed(&b).into(),
                named => named,
            };
            let object = match t.object {
                Term::BlankNode(b) => renamed(&b).into(),
                other => other,
            };
            Triple::new(subject, t.predicate, object)
        })
        .collect()
}

/// The blank nodes' statements, in first-seen order.
struct Tree<'a> {
    order: Vec<&'a BlankNode>,
    children: HashMap<&'a BlankNode, Vec<(&'a str, &'a Term)>>,
}

impl<'a> Tree<'a> {
    fn of(
        statements: impl Iterator<
            Item = (
                &'a NamedOrBlankNode,
                &'a oxigraph::model::NamedNode,
                &'a Term,
            ),
        >,
    ) -> Self {
        let mut tree = Tree {
            order: Vec::new(),
            children: HashMap::new(),
        };
        for (s, p, o) in statements {
            if let NamedOrBlankNode::BlankNode(b) = s {
                let entry = tree.children.entry(b).or_default();
                if entry.is_empty() {
                    tree.order.push(b);
                }
                entry.push((p.as_str(), o));
            }
        }
        tree
    }

    fn blank_nodes(&self) -> impl Iterator<Item = &'a BlankNode> + '_ {
        self.order.iter().copied()
    }

    /// A hash of the node's subtree that ignores blank-node labels.
    fn fingerprint(
        &self,
        node: &'a BlankNode,
        memo: &mut HashMap<&'a BlankNode, u64>,
        visiting: &mut HashSet<&'a BlankNode>,
        depth: usize,
    ) -> u64 {
        if let Some(f) = memo.get(node) {
            return *f;
        }
        if depth > MAX_DEPTH || !visiting.insert(node) {
            return hash(&("own label", node.as_str()));
        }
        let mut parts: Vec<(&str, u64)> = Vec::new();
        for (p, o) in self.children.get(node).map_or(&[][..], Vec::as_slice) {
            let child = match o {
                Term::BlankNode(b) => self.fingerprint(b, memo, visiting, depth + 1),
                other => hash(&other.to_string()),
            };
            parts.push((p, child));
        }
        parts.sort_unstable();
        visiting.remove(node);
        let f = hash(&parts);
        memo.insert(node, f);
        f
    }
}

fn hash(value: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::{GraphName, Literal, NamedNode};

    fn iri(s: &str) -> NamedNode {
        NamedNode::new_unchecked(format!("https://example.org/{s}"))
    }

    /// root -party-> b1 -name-> name, b1 -address-> b2 -city-> city; root -note-> note
    fn description(name: &str, city: &str, note: &str) -> (Vec<Triple>, BlankNode, BlankNode) {
        let (b1, b2) = (BlankNode::default(), BlankNode::default());
        let root = iri("root");
        let triples = vec![
            Triple::new(root.clone(), iri("party"), b1.clone()),
            Triple::new(b1.clone(), iri("name"), Literal::from(name)),
            Triple::new(b1.clone(), iri("address"), b2.clone()),
            Triple::new(b2.clone(), iri("city"), Literal::from(city)),
            Triple::new(root, iri("note"), Literal::from(note)),
        ];
        (triples, b1, b2)
    }

    fn stored(triples: &[Triple]) -> Vec<Quad> {
        let g = GraphName::NamedNode(iri("graph"));
        triples
            .iter()
            .map(|t| t.clone().in_graph(g.clone()))
            .collect()
    }

    fn kept(old: &[Quad], new: &[Triple]) -> usize {
        let old: HashSet<Triple> = old.iter().map(|q| Triple::from(q.clone())).collect();
        new.iter().filter(|t| old.contains(*t)).count()
    }

    #[test]
    fn unchanged_subtrees_take_the_stored_labels() {
        let (before, b1, b2) = description("Acme", "Mombasa", "first");
        let old = stored(&before);
        let (after, ..) = description("Acme", "Mombasa", "second");
        let relabelled = reuse_blank_nodes(&old, after);
        // Everything but the changed note is the stored quads.
        assert_eq!(kept(&old, &relabelled), 4);
        assert!(relabelled.iter().any(|t| t.subject == b1.clone().into()));
        assert!(relabelled.iter().any(|t| t.subject == b2.clone().into()));
    }

    #[test]
    fn a_changed_leaf_keeps_the_unchanged_subtree_below_its_sibling() {
        let (before, _, b2) = description("Acme", "Mombasa", "note");
        let old = stored(&before);
        let (after, ..) = description("Acme Ltd", "Mombasa", "note");
        let relabelled = reuse_blank_nodes(&old, after);
        // The party changed (new label), its address subtree is the stored one.
        assert!(relabelled.iter().any(|t| t.subject == b2.clone().into()));
        assert_eq!(kept(&old, &relabelled), 2);
        assert_eq!(relabelled.len(), 5);
    }

    #[test]
    fn twins_are_used_once_and_cycles_do_not_loop() {
        let root = iri("root");
        let (a, b) = (BlankNode::default(), BlankNode::default());
        let twins = |x: &BlankNode, y: &BlankNode| {
            vec![
                Triple::new(root.clone(), iri("item"), x.clone()),
                Triple::new(x.clone(), iri("code"), Literal::from("1")),
                Triple::new(root.clone(), iri("item"), y.clone()),
                Triple::new(y.clone(), iri("code"), Literal::from("1")),
            ]
        };
        let old = stored(&twins(&a, &b));
        let new = twins(&BlankNode::default(), &BlankNode::default());
        let relabelled = reuse_blank_nodes(&old, new);
        assert_eq!(kept(&old, &relabelled), 4);
        let subjects: HashSet<_> = relabelled.iter().map(|t| t.subject.clone()).collect();
        assert_eq!(subjects.len(), 3, "each stored twin used once");

        let (c, d) = (BlankNode::default(), BlankNode::default());
        let cycle = vec![
            Triple::new(c.clone(), iri("next"), d.clone()),
            Triple::new(d.clone(), iri("next"), c.clone()),
        ];
        let relabelled = reuse_blank_nodes(&stored(&cycle), cycle.clone());
        assert_eq!(relabelled.len(), 2);
    }
}
