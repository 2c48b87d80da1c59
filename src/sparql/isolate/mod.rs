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
//!   markers (`sharing::readable`, see [`marker_join`](pending::marker_join)): one scan of
//!   encoded quads for the whole group, where the check would decode one graph name per
//!   solution;
//! - `GRAPH ?v { … }` becomes `FILTER(in_named(?v)) { GRAPH ?v { … } }` (or, broad and on
//!   its own, is joined with the markers on `?v`);
//! - `GRAPH <iri> { … }` stays when `<iri>` is readable, else matches nothing;
//! - the same inside `EXISTS`, sub-queries, `OPTIONAL`, `MINUS`, `UNION`, …;
//! - `SERVICE` is refused (the node makes no outgoing request for a query), and so is a call
//!   of a function or aggregate by IRI other than an XSD cast (an engine's extensions);
//! - `DESCRIBE` becomes a `CONSTRUCT` of the described resources' triples (the evaluator's own
//!   DESCRIBE would read the whole store).
//!
//! Every variant of the algebra is matched explicitly (in `pattern` and `expression`): a new
//! kind of pattern fails to compile there instead of slipping through unchecked.
//!
//! Differences from a true union of graphs, documented for analysts: a triple present in two
//! readable graphs matches twice, and a property path is followed within one graph.
//!
//! - `pattern`: the graph patterns, each variant rewritten; `expression`: the expressions,
//!   whose `EXISTS` hold patterns; `pending`: the checks a group of joined patterns shares,
//!   or its join with the markers; `estimate`: what the optimiser most likely evaluates first.

mod estimate;
mod expression;
mod pattern;
mod pending;
#[cfg(test)]
mod tests;

use spargebra::algebra::{Expression, Function, GraphPattern, QueryDataset};
use spargebra::term::{NamedNode, NamedNodePattern, TriplePattern, Variable};
use spargebra::Query;

use pending::Pending;

/// The functions the rewritten query calls; bound to the caller's graph sets at evaluation.
pub const IN_DEFAULT: &str = "urn:dataspace-node:fn:inDefaultGraph";
pub const IN_NAMED: &str = "urn:dataspace-node:fn:inNamedGraphs";

/// Why a query is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Service,
    /// A function or aggregate outside SPARQL's own and the XSD casts, by its IRI.
    Function(String),
}

/// The casts (`xsd:integer(?x)`, ...) SPARQL 1.1 names and both engines evaluate: the only
/// calls by IRI a caller may make. Any other IRI is the engine's own extension — Virtuoso's
/// `bif:` and `sql:` functions read any graph, run SQL and fetch URLs, past every graph check
/// of the rewrite — or the node's (its graph checks, answered for the caller anyway).
const CASTS: [&str; 17] = [
    "string",
    "boolean",
    "decimal",
    "integer",
    "float",
    "double",
    "dateTime",
    "date",
    "time",
    "duration",
    "dayTimeDuration",
    "yearMonthDuration",
    "gYear",
    "gYearMonth",
    "gMonth",
    "gMonthDay",
    "gDay",
];

/// `Ok` for a cast [`CASTS`] names, else the refusal naming the IRI.
fn callable(iri: &NamedNode) -> Result<(), Refused> {
    let cast = iri
        .as_str()
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
        .is_some_and(|local| CASTS.contains(&local));
    if cast {
        Ok(())
    } else {
        Err(Refused::Function(iri.as_str().to_owned()))
    }
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
    /// Set when the query goes to another SPARQL engine (the replica), which knows none of
    /// the node's functions: each graph check is then written in standard SPARQL — the
    /// default graph's, then the named graphs'.
    pub portable: Option<(Portable, Portable)>,
}

/// A graph check in standard SPARQL.
#[derive(Debug, Clone)]
pub enum Portable {
    /// Readable when the caller's markers list it: `EXISTS { GRAPH <m> { ?g <p> <o> } }`.
    Markers(Markers),
    /// Readable when it is one of these (`FROM` / `FROM NAMED` narrowed to what is readable).
    Listed(Vec<NamedNode>),
}

impl Sources {
    /// The check of `graph` in the default graph (`named == false`) or the named graphs.
    fn check(&self, named: bool, graph: Variable) -> Expression {
        match &self.portable {
            None => check(if named { IN_NAMED } else { IN_DEFAULT }, graph),
            Some((default, names)) => portable(if named { names } else { default }, graph),
        }
    }
}

fn portable(check: &Portable, graph: Variable) -> Expression {
    match check {
        Portable::Markers(m) => Expression::Exists(Box::new(GraphPattern::Graph {
            name: NamedNodePattern::NamedNode(m.graph.clone()),
            inner: Box::new(GraphPattern::Bgp {
                patterns: vec![TriplePattern {
                    subject: graph.into(),
                    predicate: m.predicate.clone().into(),
                    object: m.object.clone().into(),
                }],
            }),
        })),
        Portable::Listed(list) if list.is_empty() => Expression::Literal(false.into()),
        Portable::Listed(list) => Expression::In(
            Box::new(Expression::Variable(graph)),
            list.iter().cloned().map(Expression::NamedNode).collect(),
        ),
    }
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
            let (template, pattern) = r.describe(pattern)?;
            Query::Construct {
                template,
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

    /// `DESCRIBE` as a `CONSTRUCT`: its template and pattern.
    fn describe(
        &mut self,
        pattern: GraphPattern,
    ) -> Result<(Vec<TriplePattern>, GraphPattern), Refused> {
        // The described resources are the projected variables (or constants bound by the
        // pattern); their description is every triple they are the subject of.
        let resource = self.var();
        let p = self.var();
        let o = self.var();
        let described = described(&pattern).to_vec();
        let inner = self.pattern(pattern, false)?;
        // The description is joined with each described resource: not a root pattern.
        self.root = false;
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
        let triples = self.pattern(
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
        let template = vec![TriplePattern {
            subject: resource.into(),
            predicate: NamedNodePattern::Variable(p),
            object: o.into(),
        }];
        Ok((template, pattern))
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
        Ok(pending.apply(inner, markers, self.sources))
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
}

/// The variables a DESCRIBE describes: those its pattern projects, below the modifiers a
/// `LIMIT`, `OFFSET`, `ORDER BY` or `DISTINCT` put over the projection.
pub fn described(pattern: &GraphPattern) -> &[Variable] {
    match pattern {
        GraphPattern::Project { variables, .. } => variables,
        GraphPattern::Slice { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::OrderBy { inner, .. } => described(inner),
        _ => &[],
    }
}
