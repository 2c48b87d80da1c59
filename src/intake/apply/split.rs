//! The expansion's triples, cut at the object: what goes in the contribution graph. The rest
//! (the activity, its actor and target) is kept by the activity's payload only.

use std::collections::{HashMap, HashSet};

use oxigraph::model::{NamedNode, NamedOrBlankNode, Term, Triple};

use super::Apply;
use crate::jsonld::Expansion;

impl Apply<'_> {
    /// The expansion's triples of the object's subtree, with the object's provisional root
    /// renamed to `root`.
    pub(super) fn split(&self, root: &NamedOrBlankNode) -> Vec<Triple> {
        object_triples(self.expansion, self.object_root, self.activity_root, root)
    }
}

/// [`Apply::split`] from the parts of a prepared activity (what a `Create` writes ahead of
/// the writer lock: `crate::store::ahead`).
pub fn object_triples(
    expansion: &Expansion,
    object_root: &NamedOrBlankNode,
    activity_root: &NamedNode,
    root: &NamedOrBlankNode,
) -> Vec<Triple> {
    let rename = |n: &NamedOrBlankNode| {
        if n == object_root {
            root.clone()
        } else {
            n.clone()
        }
    };
    let renamed: Vec<Triple> = expansion
        .triples
        .iter()
        .map(|t| {
            let object = match &t.object {
                Term::NamedNode(n) => rename(&n.clone().into()).into(),
                Term::BlankNode(b) => rename(&b.clone().into()).into(),
                other => other.clone(),
            };
            Triple::new(rename(&t.subject), t.predicate.clone(), object)
        })
        .collect();
    let mut by_subject: HashMap<&NamedOrBlankNode, Vec<usize>> = HashMap::new();
    for (i, t) in renamed.iter().enumerate() {
        by_subject.entry(&t.subject).or_default().push(i);
    }
    let activity: NamedOrBlankNode = activity_root.clone().into();
    let mut in_object = vec![false; renamed.len()];
    let mut seen = HashSet::new();
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if node == activity || !seen.insert(node.clone()) {
            continue;
        }
        for &i in by_subject.get(&node).map_or(&[][..], Vec::as_slice) {
            in_object[i] = true;
            match &renamed[i].object {
                Term::NamedNode(n) => stack.push(n.clone().into()),
                Term::BlankNode(b) => stack.push(b.clone().into()),
                _ => {}
            }
        }
    }
    renamed
        .into_iter()
        .zip(in_object)
        .filter_map(|(t, inside)| inside.then_some(t))
        .collect()
}
