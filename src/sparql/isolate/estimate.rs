//! The optimiser's estimates of pattern sizes, and the variables a pattern binds: which
//! pattern of a group it most likely evaluates first, and which patterns are connected.

use spargebra::algebra::GraphPattern;
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern, Variable};

/// The variables (and blank nodes, variables of a BGP) a pattern binds.
pub(super) fn binds(terms: &[&TermPattern], predicate: Option<&NamedNodePattern>) -> Vec<String> {
    let mut out: Vec<String> = terms
        .iter()
        .filter_map(|t| match t {
            TermPattern::Variable(v) => Some(format!("?{}", v.as_str())),
            TermPattern::BlankNode(b) => Some(format!("_:{}", b.as_str())),
            _ => None,
        })
        .collect();
    if let Some(NamedNodePattern::Variable(v)) = predicate {
        out.push(format!("?{}", v.as_str()));
    }
    out
}

/// The optimiser's estimate of a triple pattern's size from what it binds to constants
/// (sparopt's `estimate_triple_pattern_size`): the pattern it most likely evaluates first.
pub(super) fn estimated_size(t: &TriplePattern) -> usize {
    let constant =
        |t: &TermPattern| !matches!(t, TermPattern::Variable(_) | TermPattern::BlankNode(_));
    let size = match (
        constant(&t.subject),
        matches!(t.predicate, NamedNodePattern::NamedNode(_)),
        constant(&t.object),
    ) {
        (true, true, true) => 1,
        (true, true, false) => 10,
        (true, false, true) => 2,
        (false, true, true) => 1_000,
        (true, false, false) => 100,
        (false, false, false) => 1_000_000_000,
        (false, true, false) => 1_000_000,
        (false, false, true) => 10_000,
    };
    match &t.predicate {
        NamedNodePattern::NamedNode(p) if p.as_str() == RDF_TYPE => size + 1,
        _ => size,
    }
}

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// The smallest estimated size of the triple patterns and paths of a pattern made of them
/// only (joined), else `None`.
pub(super) fn min_size(p: &GraphPattern) -> Option<usize> {
    match p {
        GraphPattern::Bgp { patterns } => patterns.iter().map(estimated_size).min(),
        GraphPattern::Path {
            subject, object, ..
        } => Some(estimated_size(&TriplePattern {
            subject: subject.clone(),
            predicate: NamedNodePattern::Variable(Variable::new_unchecked("p")),
            object: object.clone(),
        })),
        GraphPattern::Join { left, right } => Some(min_size(left)?.min(min_size(right)?)),
        _ => None,
    }
}
