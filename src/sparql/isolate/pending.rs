//! The checks of the default-graph patterns joined in one group, or the group's join with
//! the caller's markers.

use spargebra::algebra::{Expression, GraphPattern};
use spargebra::term::{NamedNodePattern, TriplePattern, Variable};

use super::{Markers, Sources};

/// A later pattern of a basic graph pattern is compared with at most this many earlier
/// patterns' graphs before its own graph is checked (a long BGP stays a linear rewrite).
const MAX_SAME_GRAPH_COMPARISONS: usize = 16;

/// The checks of the default-graph patterns joined under one pattern, applied there as one
/// filter over the join (as the parser places a group's filters), so the optimiser still
/// sees one flat join to order and pushes each check down to where its variables are bound.
///
/// Oxigraph hands a custom function the *decoded* graph IRI: a dictionary read per call, the
/// whole cost of the isolation. But `sameTerm` of two variables compares the encoded terms.
/// So in each group of patterns connected by shared variables, only one graph's check
/// always calls the function (the most selective pattern's, by the optimiser's own estimate:
/// most likely the one it evaluates first); each other graph is readable without a call when
/// it is the same graph as an earlier one of the group (already checked, in the same
/// solution), and checked otherwise:
///
/// ```sparql
/// FILTER(in_default(?g1)
///     && IF(sameTerm(?g2, ?g1), true, in_default(?g2))
///     && IF(sameTerm(?g3, ?g1) || sameTerm(?g3, ?g2), true, in_default(?g3)))
/// ```
///
/// The same solutions as a check of every graph (same rows, same multiplicity): by
/// induction every `?g_i` of a solution is readable. It holds wherever the optimiser
/// evaluates each conjunct, since all are conditions on the same solution of the join, in
/// which every `?g_i` is bound (`GRAPH` always binds its variable; were one not bound,
/// `sameTerm` and so `IF` would be an error and the row dropped: it fails closed). `IF`, not
/// `||`, whose operands the optimiser reorders, keeps the call behind the comparison.
///
/// Why per connected group: the optimiser joins connected patterns by index look-ups per row
/// (each a store read, where the time limit is checked), but unconnected groups by hash
/// joins that hold each side in memory. With one always-checked graph per group, every side
/// is filtered before it is held, as when every pattern was checked on its own.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) items: Vec<Confined>,
    /// Joined with something other than triple patterns and paths (a `VALUES`, a sub-query,
    /// a `UNION`…), whose solutions may bind the items' variables.
    pub(super) mixed: bool,
}

/// Below this estimated size (sparopt's, of the most selective pattern) a group is left to
/// the per-solution check: a selective pattern reads a few solutions, while the markers'
/// look-up reads every marker of the caller. At and above it the group reads broadly (no
/// constant subject; `?s a <Class>` and `?s <p> "value"` count as broad).
pub(super) const BROAD: usize = 1_000;

/// `inner` joined with the caller's markers on `graph`: the markers are scanned once and
/// hashed (the optimiser joins two sub-queries by a hash join, the smaller side built: the
/// markers' constant pattern is estimated at 1,000, a broad group above), and each solution
/// of `inner` is probed with its encoded graph: nothing decoded.
pub(super) fn marker_join(m: &Markers, graph: &Variable, inner: GraphPattern) -> GraphPattern {
    let mut variables: Vec<Variable> = Vec::new();
    inner.on_in_scope_variable(|v| {
        if !variables.contains(v) {
            variables.push(v.clone());
        }
    });
    let markers = GraphPattern::Graph {
        name: NamedNodePattern::NamedNode(m.graph.clone()),
        inner: Box::new(GraphPattern::Bgp {
            patterns: vec![TriplePattern {
                subject: graph.clone().into(),
                predicate: m.predicate.clone().into(),
                object: m.object.clone().into(),
            }],
        }),
    };
    GraphPattern::Join {
        left: Box::new(GraphPattern::Project {
            inner: Box::new(markers),
            variables: vec![graph.clone()],
        }),
        right: Box::new(GraphPattern::Project {
            inner: Box::new(inner),
            variables,
        }),
    }
}

/// A pattern moved into a graph of its own: its graph variable, the variables it binds and
/// its estimated size.
pub(super) struct Confined {
    pub(super) graph: Variable,
    pub(super) binds: Vec<String>,
    pub(super) size: usize,
}

impl Pending {
    /// `markers`: the caller's, when this group is evaluated on its own (not per solution of
    /// something it is joined with).
    pub(super) fn apply(
        self,
        inner: GraphPattern,
        markers: Option<&Markers>,
        sources: &Sources,
    ) -> GraphPattern {
        let groups = self.connected_groups();
        // One connected group of triple patterns only, reading broadly: its first graph is
        // joined with the markers instead of checked per solution.
        let joined_with = match markers {
            Some(m)
                if groups.len() == 1
                    && !self.mixed
                    && self.items.iter().all(|i| i.size >= BROAD) =>
            {
                Some(m)
            }
            _ => None,
        };
        let mut marked: Option<Variable> = None;
        let mut checks: Vec<Expression> = Vec::new();
        for mut members in groups {
            // The first most selective item first; then the others in order.
            if let Some(pos) = (0..members.len()).min_by_key(|&k| self.items[members[k]].size) {
                let first = members.remove(pos);
                members.insert(0, first);
            }
            for (k, &i) in members.iter().enumerate() {
                let graph = &self.items[i].graph;
                if k == 0 && joined_with.is_some() {
                    marked = Some(graph.clone());
                    continue;
                }
                checks.push(self.check_after(graph, &members[..k], sources));
            }
        }
        let checked = match checks
            .into_iter()
            .reduce(|a, b| Expression::And(Box::new(a), Box::new(b)))
        {
            None => inner,
            Some(expr) => GraphPattern::Filter {
                expr,
                inner: Box::new(inner),
            },
        };
        match (joined_with, marked) {
            (Some(m), Some(graph)) => marker_join(m, &graph, checked),
            _ => checked,
        }
    }

    /// Groups of items connected by shared variables (union-find on item indexes), each in
    /// the order of its items.
    fn connected_groups(&self) -> Vec<Vec<usize>> {
        let n = self.items.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        let mut first_binder: std::collections::HashMap<&str, usize> = Default::default();
        for (i, item) in self.items.iter().enumerate() {
            for v in &item.binds {
                if let Some(&j) = first_binder.get(v.as_str()) {
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    parent[a] = b;
                } else {
                    first_binder.insert(v, i);
                }
            }
        }
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for i in 0..n {
            let r = root(&mut parent, i);
            match groups.iter_mut().find(|(g, _)| *g == r) {
                Some((_, members)) => members.push(i),
                None => groups.push((r, vec![i])),
            }
        }
        groups.into_iter().map(|(_, members)| members).collect()
    }

    /// The check of `graph`, readable without a call when it is the graph of one of the
    /// `earlier` items of its group.
    fn check_after(&self, graph: &Variable, earlier: &[usize], sources: &Sources) -> Expression {
        let call = sources.check(false, graph.clone());
        let same = earlier
            .iter()
            .take(MAX_SAME_GRAPH_COMPARISONS)
            .map(|&j| {
                Expression::SameTerm(
                    Box::new(Expression::Variable(graph.clone())),
                    Box::new(Expression::Variable(self.items[j].graph.clone())),
                )
            })
            .reduce(|a, b| Expression::Or(Box::new(a), Box::new(b)));
        match same {
            None => call,
            // Another engine: `||` (Virtuoso 7 answers `IF(…, true, EXISTS {…})` wrongly).
            Some(same) if sources.portable.is_some() => {
                Expression::Or(Box::new(same), Box::new(call))
            }
            Some(same) => Expression::If(
                Box::new(same),
                Box::new(Expression::Literal(true.into())),
                Box::new(call),
            ),
        }
    }
}
