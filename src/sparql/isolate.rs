//! Confines a caller's query to the graphs it may read, by rewriting its algebra.
//!
//! Oxigraph can restrict a query to a list of graphs, but evaluates a default graph of many
//! graphs by opening one iterator per graph for every pattern — unusable with thousands of
//! contribution graphs. So the query runs over the whole store with an **empty** default
//! graph, and every pattern is rewritten to name its graph and check it:
//!
//! - a triple pattern or property path outside `GRAPH` becomes `GRAPH ?g_n { pattern }` — one
//!   fresh graph variable per pattern, so joins across graphs of the default graph still work
//!   (and stay index look-ups) — and the patterns joined in one group get one filter checking
//!   each `?g_n`: `in_default(?g_n)` for one pattern of each set of connected patterns, and
//!   for the others "the same graph as an earlier pattern's, else `in_default(?g_n)`" (see
//!   [`Pending`]: the check calls the node's function, which costs a dictionary read, about
//!   once per solution instead of once per pattern per solution);
//! - a broad group evaluated on its own (no constant subject; not joined with a sibling, not
//!   under `OPTIONAL`/`MINUS`/`EXISTS`) instead joins its first graph with the caller's
//!   markers (`sharing::readable`, see [`marker_join`]): one scan of encoded quads for the
//!   whole group, where the check would decode one graph name per solution;
//! - `GRAPH ?v { … }` becomes `FILTER(in_named(?v)) { GRAPH ?v { … } }` (or, broad and on
//!   its own, is joined with the markers on `?v`);
//! - `GRAPH <iri> { … }` stays when `<iri>` is readable, else matches nothing;
//! - the same inside `EXISTS`, sub-queries, `OPTIONAL`, `MINUS`, `UNION`, …;
//! - `SERVICE` is refused (the node makes no outgoing request for a query);
//! - `DESCRIBE` becomes a `CONSTRUCT` of the described resources' triples (the evaluator's own
//!   DESCRIBE would read the whole store).
//!
//! Every variant of the algebra is matched explicitly: a new kind of pattern fails to compile
//! here instead of slipping through unchecked.
//!
//! Differences from a true union of graphs, documented for analysts: a triple present in two
//! readable graphs matches twice, and a property path is followed within one graph.

use spargebra::algebra::{
    AggregateExpression, Expression, Function, GraphPattern, OrderExpression, QueryDataset,
};
use spargebra::term::{NamedNode, NamedNodePattern, TermPattern, TriplePattern, Variable};
use spargebra::Query;

/// The functions the rewritten query calls; bound to the caller's graph sets at evaluation.
pub const IN_DEFAULT: &str = "urn:dataspace-node:fn:inDefaultGraph";
pub const IN_NAMED: &str = "urn:dataspace-node:fn:inNamedGraphs";

/// A later pattern of a basic graph pattern is compared with at most this many earlier
/// patterns' graphs before its own graph is checked (a long BGP stays a linear rewrite).
const MAX_SAME_GRAPH_COMPARISONS: usize = 16;

/// Why a query is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Service,
}

/// Graph names a query's dataset clause (`FROM`, `FROM NAMED`) asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Requested {
    pub default: Option<Vec<String>>,
    pub named: Option<Vec<String>>,
}

/// What the query's dataset clause (`FROM`, `FROM NAMED`) asks for.
pub fn requested(query: &Query) -> Requested {
    let dataset: &Option<QueryDataset> = match query {
        Query::Select { dataset, .. }
        | Query::Ask { dataset, .. }
        | Query::Construct { dataset, .. }
        | Query::Describe { dataset, .. } => dataset,
    };
    match dataset {
        Some(d) => Requested {
            default: Some(d.default.iter().map(|n| n.as_str().to_owned()).collect()),
            named: d
                .named
                .as_ref()
                .map(|n| n.iter().map(|n| n.as_str().to_owned()).collect()),
        },
        None => Requested::default(),
    }
}

/// Where a caller's readable graphs are written down as quads (`sharing::readable`): the
/// graph holding them and the pattern `?graph <predicate> <object>` that lists them.
#[derive(Debug, Clone)]
pub struct Markers {
    pub graph: NamedNode,
    pub predicate: NamedNode,
    pub object: NamedNode,
}

/// The markers of the default graph and of the named graphs, when the dataset is everything
/// the caller may read (not narrowed by `FROM` / `FROM NAMED`).
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub default: Option<Markers>,
    pub named: Option<Markers>,
}

/// Rewrites `query`, dropping its dataset clause (read it first with [`requested`]).
/// `is_readable_named` answers for constant `GRAPH <iri>` names.
pub fn rewrite(
    query: Query,
    is_readable_named: &dyn Fn(&str) -> bool,
    sources: &Sources,
) -> Result<Query, Refused> {
    let mut r = Rewriter {
        fresh: 0,
        prefix: fresh_prefix(&query.to_string()),
        is_readable_named,
        sources,
        root: true,
    };
    Ok(match query {
        Query::Select {
            dataset: _,
            pattern,
            base_iri,
        } => Query::Select {
            dataset: None,
            pattern: r.pattern(pattern, false)?,
            base_iri,
        },
        Query::Ask {
            dataset: _,
            pattern,
            base_iri,
        } => Query::Ask {
            dataset: None,
            pattern: r.pattern(pattern, false)?,
            base_iri,
        },
        Query::Construct {
            template,
            dataset: _,
            pattern,
            base_iri,
        } => Query::Construct {
            template,
            dataset: None,
            pattern: r.pattern(pattern, false)?,
            base_iri,
        },
        Query::Describe {
            dataset: _,
            pattern,
            base_iri,
        } => {
            // The described resources are the projected variables (or constants bound by the
            // pattern); their description is every triple they are the subject of.
            let resource = r.var();
            let p = r.var();
            let o = r.var();
            let described = match &pattern {
                GraphPattern::Project { variables, .. } => variables.clone(),
                _ => Vec::new(),
            };
            let inner = r.pattern(pattern, false)?;
            // The description is joined with each described resource: not a root pattern.
            r.root = false;
            let mut alternatives: Option<GraphPattern> = None;
            for v in described {
                let one = GraphPattern::Extend {
                    inner: Box::new(GraphPattern::Project {
                        inner: Box::new(inner.clone()),
                        variables: vec![v.clone()],
                    }),
                    variable: resource.clone(),
                    expression: Expression::Variable(v),
                };
                let one = GraphPattern::Project {
                    inner: Box::new(one),
                    variables: vec![resource.clone()],
                };
                alternatives = Some(match alternatives {
                    None => one,
                    Some(left) => GraphPattern::Union {
                        left: Box::new(left),
                        right: Box::new(one),
                    },
                });
            }
            let triples = r.pattern(
                GraphPattern::Bgp {
                    patterns: vec![TriplePattern {
                        subject: resource.clone().into(),
                        predicate: NamedNodePattern::Variable(p.clone()),
                        object: o.clone().into(),
                    }],
                },
                false,
            )?;
            let pattern = GraphPattern::Join {
                left: Box::new(alternatives.unwrap_or(GraphPattern::Values {
                    variables: Vec::new(),
                    bindings: Vec::new(),
                })),
                right: Box::new(triples),
            };
            Query::Construct {
                template: vec![TriplePattern {
                    subject: resource.into(),
                    predicate: NamedNodePattern::Variable(p),
                    object: o.into(),
                }],
                dataset: None,
                pattern,
                base_iri,
            }
        }
    })
}

/// A variable prefix the query does not use.
fn fresh_prefix(text: &str) -> String {
    let mut prefix = "dsn_g".to_owned();
    while text.contains(&prefix) {
        prefix.push('_');
    }
    prefix
}

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
struct Pending {
    items: Vec<Confined>,
    /// Joined with something other than triple patterns and paths (a `VALUES`, a sub-query,
    /// a `UNION`…), whose solutions may bind the items' variables.
    mixed: bool,
}

/// Below this estimated size (sparopt's, of the most selective pattern) a group is left to
/// the per-solution check: a selective pattern reads a few solutions, while the markers'
/// look-up reads every marker of the caller. At and above it the group reads broadly (no
/// constant subject; `?s a <Class>` and `?s <p> "value"` count as broad).
const BROAD: usize = 1_000;

/// `inner` joined with the caller's markers on `graph`: the markers are scanned once and
/// hashed (the optimiser joins two sub-queries by a hash join, the smaller side built: the
/// markers' constant pattern is estimated at 1,000, a broad group above), and each solution
/// of `inner` is probed with its encoded graph: nothing decoded.
fn marker_join(m: &Markers, graph: &Variable, inner: GraphPattern) -> GraphPattern {
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
struct Confined {
    graph: Variable,
    binds: Vec<String>,
    size: usize,
}

impl Pending {
    /// `markers`: the caller's, when this group is evaluated on its own (not per solution of
    /// something it is joined with).
    fn apply(self, inner: GraphPattern, markers: Option<&Markers>) -> GraphPattern {
        // Groups of items connected by shared variables (union-find on item indexes).
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
        for (_, mut members) in groups {
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
                let call = check(IN_DEFAULT, graph.clone());
                let same = members[..k]
                    .iter()
                    .take(MAX_SAME_GRAPH_COMPARISONS)
                    .map(|&j| {
                        Expression::SameTerm(
                            Box::new(Expression::Variable(graph.clone())),
                            Box::new(Expression::Variable(self.items[j].graph.clone())),
                        )
                    })
                    .reduce(|a, b| Expression::Or(Box::new(a), Box::new(b)));
                checks.push(match same {
                    None => call,
                    Some(same) => Expression::If(
                        Box::new(same),
                        Box::new(Expression::Literal(true.into())),
                        Box::new(call),
                    ),
                });
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
}

/// The variables (and blank nodes, variables of a BGP) a pattern binds.
fn binds(terms: &[&TermPattern], predicate: Option<&NamedNodePattern>) -> Vec<String> {
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
fn estimated_size(t: &TriplePattern) -> usize {
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

struct Rewriter<'a> {
    fresh: usize,
    prefix: String,
    is_readable_named: &'a dyn Fn(&str) -> bool,
    sources: &'a Sources,
    /// The pattern being rewritten is evaluated on its own: not joined with a sibling, not
    /// the right side of `OPTIONAL` / `MINUS` / `LATERAL`, not inside `EXISTS` — places where
    /// the optimiser evaluates it once per solution of something else, which a join with the
    /// markers (a sub-query, evaluated whole) would undo.
    root: bool,
}

/// The smallest estimated size of the triple patterns and paths of a pattern made of them
/// only (joined), else `None`.
fn min_size(p: &GraphPattern) -> Option<usize> {
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

fn nothing() -> GraphPattern {
    GraphPattern::Values {
        variables: Vec::new(),
        bindings: Vec::new(),
    }
}

fn check(function: &str, graph: Variable) -> Expression {
    Expression::FunctionCall(
        Function::Custom(spargebra::term::NamedNode::new_unchecked(function)),
        vec![Expression::Variable(graph)],
    )
}

impl Rewriter<'_> {
    fn var(&mut self) -> Variable {
        self.fresh += 1;
        Variable::new_unchecked(format!("{}{}", self.prefix, self.fresh))
    }

    /// A default-graph pattern (triple pattern or property path), moved into a graph of its
    /// own whose check waits in `pending`.
    fn confine(&mut self, inner: GraphPattern, pending: &mut Pending) -> GraphPattern {
        let g = self.var();
        let (binds, size) = match &inner {
            GraphPattern::Path {
                subject, object, ..
            } => (
                binds(&[subject, object], None),
                estimated_size(&TriplePattern {
                    subject: subject.clone(),
                    predicate: NamedNodePattern::Variable(g.clone()),
                    object: object.clone(),
                }),
            ),
            _ => (Vec::new(), usize::MAX),
        };
        pending.items.push(Confined {
            graph: g.clone(),
            binds,
            size,
        });
        GraphPattern::Graph {
            name: NamedNodePattern::Variable(g),
            inner: Box::new(inner),
        }
    }

    /// A basic graph pattern of the default graph: each triple pattern in a graph of its own
    /// (the default graph is the union of the readable graphs, so the patterns of one BGP may
    /// match in different graphs), its check waiting in `pending`.
    fn confine_bgp(&mut self, patterns: Vec<TriplePattern>, pending: &mut Pending) -> GraphPattern {
        patterns
            .into_iter()
            .map(|t| {
                let g = self.var();
                pending.items.push(Confined {
                    graph: g.clone(),
                    binds: binds(&[&t.subject, &t.object], Some(&t.predicate)),
                    size: estimated_size(&t),
                });
                GraphPattern::Graph {
                    name: NamedNodePattern::Variable(g),
                    inner: Box::new(GraphPattern::Bgp { patterns: vec![t] }),
                }
            })
            .reduce(|left, right| GraphPattern::Join {
                left: Box::new(left),
                right: Box::new(right),
            })
            .unwrap_or_else(nothing)
    }

    // The algebra's children come boxed; taking them as they are keeps the call sites short.
    #[allow(clippy::boxed_local)]
    fn boxed(
        &mut self,
        p: Box<GraphPattern>,
        in_graph: bool,
    ) -> Result<Box<GraphPattern>, Refused> {
        Ok(Box::new(self.pattern(*p, in_graph)?))
    }

    /// `p` with the checks of its default-graph patterns applied on top of it.
    /// `in_graph`: inside `GRAPH`, where patterns read the active (already checked) graph.
    fn pattern(&mut self, p: GraphPattern, in_graph: bool) -> Result<GraphPattern, Refused> {
        let root = self.root;
        let mut pending = Pending::default();
        let inner = self.joined(p, in_graph, &mut pending)?;
        let markers = self.sources.default.as_ref().filter(|_| root);
        Ok(pending.apply(inner, markers))
    }

    /// `p` rewritten as a part evaluated per solution of something else (see `root`).
    fn correlated(
        &mut self,
        p: Box<GraphPattern>,
        in_graph: bool,
    ) -> Result<Box<GraphPattern>, Refused> {
        let was = std::mem::replace(&mut self.root, false);
        let out = self.boxed(p, in_graph);
        self.root = was;
        out
    }

    /// A member of a join: triple patterns, paths and nested joins join the group; anything
    /// else is evaluated against the group's solutions.
    fn join_member(
        &mut self,
        p: GraphPattern,
        in_graph: bool,
        pending: &mut Pending,
    ) -> Result<GraphPattern, Refused> {
        match p {
            GraphPattern::Bgp { .. } | GraphPattern::Path { .. } | GraphPattern::Join { .. } => {
                self.joined(p, in_graph, pending)
            }
            other => {
                pending.mixed = true;
                let was = std::mem::replace(&mut self.root, false);
                let out = self.joined(other, in_graph, pending);
                self.root = was;
                out
            }
        }
    }

    /// `p`, leaving the checks of default-graph patterns that are joined (directly or through
    /// other joins) in `pending`, for the enclosing non-join pattern to apply. Everything else
    /// gets its checks applied where it is.
    fn joined(
        &mut self,
        p: GraphPattern,
        in_graph: bool,
        pending: &mut Pending,
    ) -> Result<GraphPattern, Refused> {
        Ok(match p {
            GraphPattern::Bgp { patterns } => {
                if in_graph || patterns.is_empty() {
                    GraphPattern::Bgp { patterns }
                } else {
                    self.confine_bgp(patterns, pending)
                }
            }
            GraphPattern::Path {
                subject,
                path,
                object,
            } => {
                let path = GraphPattern::Path {
                    subject,
                    path,
                    object,
                };
                if in_graph {
                    path
                } else {
                    self.confine(path, pending)
                }
            }
            GraphPattern::Graph { name, inner } => match name {
                NamedNodePattern::NamedNode(iri) => {
                    if (self.is_readable_named)(iri.as_str()) {
                        GraphPattern::Graph {
                            name: NamedNodePattern::NamedNode(iri),
                            inner: self.boxed(inner, true)?,
                        }
                    } else {
                        nothing()
                    }
                }
                NamedNodePattern::Variable(v) => {
                    let markers = self
                        .sources
                        .named
                        .as_ref()
                        .filter(|_| self.root)
                        .filter(|_| min_size(&inner).is_some_and(|s| s >= BROAD))
                        .cloned();
                    let graph = GraphPattern::Graph {
                        name: NamedNodePattern::Variable(v.clone()),
                        inner: self.boxed(inner, true)?,
                    };
                    match markers {
                        Some(m) => marker_join(&m, &v, graph),
                        None => GraphPattern::Filter {
                            expr: check(IN_NAMED, v),
                            inner: Box::new(graph),
                        },
                    }
                }
            },
            GraphPattern::Service { .. } => return Err(Refused::Service),
            GraphPattern::Join { left, right } => GraphPattern::Join {
                left: Box::new(self.join_member(*left, in_graph, pending)?),
                right: Box::new(self.join_member(*right, in_graph, pending)?),
            },
            GraphPattern::LeftJoin {
                left,
                right,
                expression,
            } => GraphPattern::LeftJoin {
                left: self.boxed(left, in_graph)?,
                right: self.correlated(right, in_graph)?,
                expression: expression
                    .map(|e| self.expression(e, in_graph))
                    .transpose()?,
            },
            GraphPattern::Lateral { left, right } => GraphPattern::Lateral {
                left: self.boxed(left, in_graph)?,
                right: self.correlated(right, in_graph)?,
            },
            GraphPattern::Filter { expr, inner } => GraphPattern::Filter {
                expr: self.expression(expr, in_graph)?,
                inner: self.boxed(inner, in_graph)?,
            },
            GraphPattern::Union { left, right } => GraphPattern::Union {
                left: self.boxed(left, in_graph)?,
                right: self.boxed(right, in_graph)?,
            },
            GraphPattern::Extend {
                inner,
                variable,
                expression,
            } => GraphPattern::Extend {
                inner: self.boxed(inner, in_graph)?,
                variable,
                expression: self.expression(expression, in_graph)?,
            },
            GraphPattern::Minus { left, right } => GraphPattern::Minus {
                left: self.boxed(left, in_graph)?,
                right: self.correlated(right, in_graph)?,
            },
            GraphPattern::Values {
                variables,
                bindings,
            } => GraphPattern::Values {
                variables,
                bindings,
            },
            GraphPattern::OrderBy { inner, expression } => GraphPattern::OrderBy {
                inner: self.boxed(inner, in_graph)?,
                expression: expression
                    .into_iter()
                    .map(|o| {
                        Ok(match o {
                            OrderExpression::Asc(e) => {
                                OrderExpression::Asc(self.expression(e, in_graph)?)
                            }
                            OrderExpression::Desc(e) => {
                                OrderExpression::Desc(self.expression(e, in_graph)?)
                            }
                        })
                    })
                    .collect::<Result<_, _>>()?,
            },
            GraphPattern::Project { inner, variables } => GraphPattern::Project {
                inner: self.boxed(inner, in_graph)?,
                variables,
            },
            GraphPattern::Distinct { inner } => GraphPattern::Distinct {
                inner: self.boxed(inner, in_graph)?,
            },
            GraphPattern::Reduced { inner } => GraphPattern::Reduced {
                inner: self.boxed(inner, in_graph)?,
            },
            GraphPattern::Slice {
                inner,
                start,
                length,
            } => GraphPattern::Slice {
                inner: self.boxed(inner, in_graph)?,
                start,
                length,
            },
            GraphPattern::Group {
                inner,
                variables,
                aggregates,
            } => GraphPattern::Group {
                inner: self.boxed(inner, in_graph)?,
                variables,
                aggregates: aggregates
                    .into_iter()
                    .map(|(v, a)| {
                        Ok((
                            v,
                            match a {
                                AggregateExpression::CountSolutions { distinct } => {
                                    AggregateExpression::CountSolutions { distinct }
                                }
                                AggregateExpression::FunctionCall {
                                    name,
                                    expr,
                                    distinct,
                                } => AggregateExpression::FunctionCall {
                                    name,
                                    expr: self.expression(expr, in_graph)?,
                                    distinct,
                                },
                            },
                        ))
                    })
                    .collect::<Result<_, _>>()?,
            },
        })
    }

    #[allow(clippy::boxed_local)]
    fn boxed_expr(
        &mut self,
        e: Box<Expression>,
        in_graph: bool,
    ) -> Result<Box<Expression>, Refused> {
        Ok(Box::new(self.expression(*e, in_graph)?))
    }

    fn expressions(
        &mut self,
        es: Vec<Expression>,
        in_graph: bool,
    ) -> Result<Vec<Expression>, Refused> {
        es.into_iter()
            .map(|e| self.expression(e, in_graph))
            .collect()
    }

    fn expression(&mut self, e: Expression, in_graph: bool) -> Result<Expression, Refused> {
        use Expression as E;
        Ok(match e {
            E::NamedNode(_) | E::Literal(_) | E::Variable(_) | E::Bound(_) => e,
            E::Exists(p) => E::Exists(self.correlated(p, in_graph)?),
            E::Or(a, b) => E::Or(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::And(a, b) => E::And(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::Equal(a, b) => {
                E::Equal(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::SameTerm(a, b) => {
                E::SameTerm(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Greater(a, b) => {
                E::Greater(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::GreaterOrEqual(a, b) => {
                E::GreaterOrEqual(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Less(a, b) => E::Less(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::LessOrEqual(a, b) => {
                E::LessOrEqual(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::In(a, list) => E::In(
                self.boxed_expr(a, in_graph)?,
                self.expressions(list, in_graph)?,
            ),
            E::Add(a, b) => E::Add(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::Subtract(a, b) => {
                E::Subtract(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Multiply(a, b) => {
                E::Multiply(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Divide(a, b) => {
                E::Divide(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::UnaryPlus(a) => E::UnaryPlus(self.boxed_expr(a, in_graph)?),
            E::UnaryMinus(a) => E::UnaryMinus(self.boxed_expr(a, in_graph)?),
            E::Not(a) => E::Not(self.boxed_expr(a, in_graph)?),
            E::If(a, b, c) => E::If(
                self.boxed_expr(a, in_graph)?,
                self.boxed_expr(b, in_graph)?,
                self.boxed_expr(c, in_graph)?,
            ),
            E::Coalesce(list) => E::Coalesce(self.expressions(list, in_graph)?),
            E::FunctionCall(f, args) => E::FunctionCall(f, self.expressions(args, in_graph)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::SparqlParser;

    fn rewritten(q: &str) -> String {
        let query = SparqlParser::new().parse_query(q).unwrap();
        let readable = |g: &str| g == "urn:ok";
        rewrite(query, &readable, &Sources::default())
            .unwrap()
            .to_string()
    }

    #[test]
    fn default_graph_patterns_are_confined_one_graph_variable_each() {
        let q = rewritten("SELECT ?s WHERE { ?s a ?t . ?s <urn:p> ?o }");
        assert_eq!(q.matches(IN_DEFAULT).count(), 2, "{q}");
        assert!(
            q.contains("GRAPH ?dsn_g1") && q.contains("GRAPH ?dsn_g2"),
            "{q}"
        );
    }

    #[test]
    fn a_later_pattern_in_the_same_graph_is_not_checked_again() {
        let query = SparqlParser::new()
            .parse_query("SELECT ?s WHERE { ?s <urn:p> ?o . ?s <urn:q> ?x . ?x <urn:r> ?y }")
            .unwrap();
        let sse = rewrite(query, &|_| false, &Sources::default())
            .unwrap()
            .to_sse();
        // One filter over the flat join of the three graph patterns (the optimiser orders the
        // join as it would the caller's BGP): no filter between joins.
        let filter = sse.find("(filter").expect(&sse);
        assert!(
            sse[filter..].contains(
                "(join (join (graph ?dsn_g1 (bgp (triple ?s <urn:p> ?o))) \
                 (graph ?dsn_g2 (bgp (triple ?s <urn:q> ?x)))) \
                 (graph ?dsn_g3 (bgp (triple ?x <urn:r> ?y))))"
            ),
            "{sse}"
        );
        assert_eq!(sse.matches("(filter").count(), 1, "{sse}");
        // The first graph always checked; the second unless it is the first; the third unless
        // it is the first or the second.
        assert!(sse.contains(&format!("( <{IN_DEFAULT}> ?dsn_g1)")), "{sse}");
        assert!(
            sse.contains(&format!(
                "(if (sameTerm ?dsn_g2 ?dsn_g1) {TRUE} ( <{IN_DEFAULT}> ?dsn_g2))"
            )),
            "{sse}"
        );
        assert!(
            sse.contains(&format!(
                "(if (|| (sameTerm ?dsn_g3 ?dsn_g1) (sameTerm ?dsn_g3 ?dsn_g2)) {TRUE} \
                 ( <{IN_DEFAULT}> ?dsn_g3))"
            )),
            "{sse}"
        );
    }

    const TRUE: &str = "\"true\"^^<http://www.w3.org/2001/XMLSchema#boolean>";

    #[test]
    fn the_most_selective_pattern_is_checked_first_and_joined_groups_share_checks() {
        // `?s a <urn:T>` is the optimiser's first pattern: its graph is the one always checked.
        let q = rewritten("SELECT ?s WHERE { ?s ?p ?o . ?s a <urn:T> }");
        assert!(
            q.contains(&format!(
                "<{IN_DEFAULT}>(?dsn_g2) && IF(sameTerm(?dsn_g1, ?dsn_g2)"
            )),
            "{q}"
        );
        // Unconnected patterns (a product, held in memory by a hash join): each checked.
        let q = rewritten("SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?c ?x ?y }");
        assert_eq!(q.matches("sameTerm").count(), 1, "{q}");
        assert!(q.contains("IF(sameTerm(?dsn_g3, ?dsn_g1)"), "{q}");
        assert!(q.contains(&format!("<{IN_DEFAULT}>(?dsn_g2)")), "{q}");
        // A BGP and a property path joined: one filter, the path's graph compared with the
        // BGP's. Inside OPTIONAL, MINUS, EXISTS, a sub-query: a filter of their own.
        let query = SparqlParser::new()
            .parse_query(
                "SELECT * WHERE { ?s <urn:p> ?o . ?o <urn:q>+ ?x \
                 OPTIONAL { ?x <urn:r> ?y } MINUS { ?s <urn:m> ?m } \
                 FILTER NOT EXISTS { ?s <urn:e> ?e } }",
            )
            .unwrap();
        let sse = rewrite(query, &|_| false, &Sources::default())
            .unwrap()
            .to_sse();
        // (The filter's EXISTS is rewritten first: ?dsn_g1.)
        assert!(
            sse.contains("(if (sameTerm ?dsn_g3 ?dsn_g2)"),
            "the path's graph is compared with the BGP's: {sse}"
        );
        for g in ["?dsn_g1", "?dsn_g4", "?dsn_g5"] {
            assert!(
                sse.contains(&format!("(filter ( <{IN_DEFAULT}> {g})")),
                "{g} checked where it is: {sse}"
            );
            assert!(
                !sse.contains(&format!("(sameTerm {g}")),
                "{g} compared with nothing outside its group: {sse}"
            );
        }
    }

    #[test]
    fn named_graphs_are_checked_or_dropped() {
        let q = rewritten("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }");
        assert!(q.contains(IN_NAMED), "{q}");
        assert!(
            !q.contains(IN_DEFAULT),
            "patterns inside GRAPH read the checked graph: {q}"
        );
        let q = rewritten("SELECT * WHERE { GRAPH <urn:secret> { ?s ?p ?o } }");
        assert!(!q.contains("urn:secret"), "{q}");
        let q = rewritten("SELECT * WHERE { GRAPH <urn:ok> { ?s ?p ?o } }");
        assert!(q.contains("<urn:ok>"), "{q}");
    }

    #[test]
    fn exists_subqueries_paths_and_describe_are_confined() {
        let q = rewritten(
            "SELECT ?s WHERE { ?s <urn:p>+ ?o FILTER NOT EXISTS { ?o <urn:q> ?x } \
             { SELECT ?s WHERE { ?s <urn:r> ?y } } }",
        );
        assert_eq!(q.matches(IN_DEFAULT).count(), 3, "{q}");
        let q = rewritten("DESCRIBE <urn:thing>");
        assert!(q.starts_with("CONSTRUCT"), "{q}");
        assert!(q.contains(IN_DEFAULT), "{q}");
        let text = "SELECT * FROM <urn:a> FROM NAMED <urn:b> WHERE { ?s ?p ?o }";
        let asked = requested(&SparqlParser::new().parse_query(text).unwrap());
        assert_eq!(asked.default, Some(vec!["urn:a".to_owned()]));
        assert_eq!(asked.named, Some(vec!["urn:b".to_owned()]));
        assert!(!rewritten(text).contains("FROM"));
    }

    fn with_markers(q: &str) -> String {
        let m = Markers {
            graph: NamedNode::new_unchecked("urn:marks"),
            predicate: NamedNode::new_unchecked("urn:in"),
            object: NamedNode::new_unchecked("urn:all"),
        };
        let sources = Sources {
            default: Some(m.clone()),
            named: Some(m),
        };
        let query = SparqlParser::new().parse_query(q).unwrap();
        rewrite(query, &|_| false, &sources).unwrap().to_sse()
    }

    const MARKERS: &str = "(graph <urn:marks> (bgp (triple ";

    #[test]
    fn a_broad_group_joins_its_first_graph_with_the_markers() {
        let sse = with_markers("SELECT ?s WHERE { ?s <urn:p> ?o . ?s <urn:q> ?x }");
        // The markers of ?dsn_g1 joined with the group (a sub-query each: a hash join), the
        // second graph still compared with the first, else checked.
        assert!(
            sse.contains(&format!(
                "(join (project (?dsn_g1) {MARKERS}?dsn_g1 <urn:in> <urn:all>))))"
            )),
            "{sse}"
        );
        assert!(
            !sse.contains(&format!("( <{IN_DEFAULT}> ?dsn_g1)")),
            "{sse}"
        );
        assert!(
            sse.contains(&format!(
                "(if (sameTerm ?dsn_g2 ?dsn_g1) {TRUE} ( <{IN_DEFAULT}> ?dsn_g2))"
            )),
            "{sse}"
        );
        // GRAPH ?g over everything: the same join on ?g.
        let sse = with_markers("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }");
        assert!(
            sse.contains(&format!("(project (?g) {MARKERS}?g <urn:in> <urn:all>))))")),
            "{sse}"
        );
        assert!(!sse.contains(IN_NAMED), "{sse}");
    }

    #[test]
    fn selective_and_correlated_groups_keep_the_per_solution_check() {
        for q in [
            // A constant subject: a few solutions.
            "SELECT * WHERE { <urn:s> ?p ?o }",
            "SELECT * WHERE { GRAPH ?g { <urn:s> ?p ?o } }",
            // Evaluated per solution of what they are joined with.
            "SELECT * WHERE { <urn:s> <urn:p> ?o OPTIONAL { ?o ?q ?r } }",
            "SELECT * WHERE { <urn:s> <urn:p> ?o MINUS { ?o ?q ?r } }",
            "SELECT * WHERE { <urn:s> <urn:p> ?o FILTER EXISTS { ?o ?q ?r } }",
            "SELECT * WHERE { <urn:s> <urn:p> ?o { ?o ?q ?r FILTER(?r != 1) } }",
            "SELECT * WHERE { <urn:s> <urn:p> ?g GRAPH ?g { ?x ?q ?r } }",
            // Joined with a VALUES (or anything but patterns): bound from there.
            "SELECT * WHERE { VALUES ?s { <urn:a> } ?s ?p ?o }",
            "DESCRIBE <urn:thing>",
        ] {
            let sse = with_markers(q);
            assert!(!sse.contains("<urn:marks>"), "{q}: {sse}");
        }
        // Without markers (a dataset narrowed by FROM): checked as before.
        let q = rewritten("SELECT * WHERE { ?s ?p ?o }");
        assert!(q.contains(IN_DEFAULT), "{q}");
    }

    #[test]
    fn service_is_refused_and_fresh_variables_do_not_collide() {
        let query = SparqlParser::new()
            .parse_query("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
            .unwrap();
        assert_eq!(
            rewrite(query, &|_| true, &Sources::default()).unwrap_err(),
            Refused::Service
        );
        let q = rewritten("SELECT ?dsn_g1 WHERE { ?dsn_g1 ?p ?o }");
        assert!(q.contains("?dsn_g_1"), "{q}");
    }
}
