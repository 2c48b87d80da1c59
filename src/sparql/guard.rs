//! Bounds on one query's evaluation that Oxigraph does not give. Its cancellation token is
//! checked at store reads only: a join of rows already in memory (a cross product of `VALUES`
//! lists) ran on at full CPU long after the caller had its 503, and values built from values
//! (`BIND(CONCAT(?s, ?s) AS ?t)`, thirty times) grew the node by gigabytes without a single
//! read. So the query is rewritten to call two functions the evaluator cannot skip:
//!
//! - [`ALIVE`] filters the root and the input of every grouping and ordering (where joined
//!   solutions pile up): per solution it checks the token (timeout, shutdown) and, every
//!   [`MEMORY_EVERY`] calls, how much the process heap grew since the query started. Its
//!   argument names every variable in scope there (see [`alive`]), so the optimiser cannot
//!   push it below the joins, and it sits above a whole join tree, so joins are still ordered
//!   as before;
//!   The same check sits on every cross product (a join whose sides share no variable, and
//!   the disconnected parts of a basic graph pattern): there, a hash join builds its table
//!   from solutions in memory, and nothing else would be checked until it is built. Joins on
//!   shared variables are left as they are, so the optimiser orders them as before;
//! - [`BOUNDED`] wraps every `BIND` / projected expression, and every `REPLACE` and `CONCAT`
//!   wherever it stands ([`super::calls`]): a value longer than the limit ends the query, and
//!   a large one measures the heap as `ALIVE` does.
//!
//! Either ends the evaluation by unwinding out of the evaluator with an [`Abort`] payload,
//! caught by [`evaluate`]: the evaluator holds no locks and writes nothing, and everything it
//! holds (store snapshot, iterators, partial results) is dropped on the way out.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use oxigraph::model::{Literal, Term};
use oxigraph::sparql::CancellationToken;
use spargebra::algebra::{Expression, Function, GraphPattern};
use spargebra::term::NamedNode;
use spargebra::Query;

use super::calls::{self, bounded};

pub const ALIVE: &str = "urn:dataspace-node:fn:alive";
pub const BOUNDED: &str = "urn:dataspace-node:fn:bounded";

/// The heap is measured once per this many solutions (a measurement walks the arenas).
const MEMORY_EVERY: u64 = 4096;
/// ...and at every value of at least this size [`BOUNDED`] sees.
const LARGE_VALUE: usize = 64 << 10;

/// Why an evaluation was ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abort {
    /// The time limit passed, or the node is shutting down.
    Cancelled,
    /// The process heap grew by more than the limit while the query ran.
    Memory { limit: usize },
    /// A value the query built is larger than the limit.
    Value { limit: usize },
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_value_bytes: usize,
    pub max_memory_bytes: usize,
}

/// A function the evaluator calls, as Oxigraph takes it.
pub trait Custom: Fn(&[Term]) -> Option<Term> + Send + Sync + 'static {}
impl<F: Fn(&[Term]) -> Option<Term> + Send + Sync + 'static> Custom for F {}

/// The two guard functions for one evaluation: [`ALIVE`] and [`BOUNDED`].
pub fn functions(token: CancellationToken, limits: Limits) -> (impl Custom, impl Custom) {
    let start = crate::store::memory::heap_in_use();
    let calls = AtomicU64::new(0);
    let alive = move |_: &[Term]| -> Option<Term> {
        if token.is_cancelled() {
            panic::panic_any(Abort::Cancelled);
        }
        if calls.fetch_add(1, Ordering::Relaxed) % MEMORY_EVERY == MEMORY_EVERY - 1
            && crate::store::memory::heap_in_use().saturating_sub(start) > limits.max_memory_bytes
        {
            panic::panic_any(Abort::Memory {
                limit: limits.max_memory_bytes,
            });
        }
        Some(Literal::from(true).into())
    };
    let bounded = move |args: &[Term]| -> Option<Term> {
        let value = args.first()?;
        let size = match value {
            Term::Literal(l) => l.value().len(),
            Term::NamedNode(n) => n.as_str().len(),
            _ => 0,
        };
        if size > limits.max_value_bytes {
            panic::panic_any(Abort::Value {
                limit: limits.max_value_bytes,
            });
        }
        // Large values pile up in few solutions — fewer than `ALIVE` counts between its
        // measurements (3,000 values of 1 MB held 1.9 GB before it looked): measured here.
        if size >= LARGE_VALUE
            && crate::store::memory::heap_in_use().saturating_sub(start) > limits.max_memory_bytes
        {
            panic::panic_any(Abort::Memory {
                limit: limits.max_memory_bytes,
            });
        }
        Some(value.clone())
    };
    (alive, bounded)
}

/// Runs `f`, turning an [`Abort`] unwinding out of it into `Err`. Any other panic goes on.
pub fn evaluate<T>(f: impl FnOnce() -> T) -> Result<T, Abort> {
    quiet_aborts();
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Ok(value),
        Err(payload) => match payload.downcast::<Abort>() {
            Ok(abort) => Err(*abort),
            Err(other) => panic::resume_unwind(other),
        },
    }
}

/// An abort is an answer, not a bug: the panic hook stays silent about it.
fn quiet_aborts() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<Abort>().is_none() {
                previous(info);
            }
        }));
    });
}

pub(super) fn call(function: &str, args: Vec<Expression>) -> Expression {
    Expression::FunctionCall(Function::Custom(NamedNode::new_unchecked(function)), args)
}

/// `FILTER(ALIVE(COALESCE(true, ?v1, ?v2, …)))` over `inner`. The argument names every
/// variable in scope, so the optimiser keeps the filter above the joins that bind them; it is
/// never anything but `true` (COALESCE stops at its first argument), so the evaluator reads
/// no variable's value and the call costs no term decoding. `BOUND(?v)` would not do: the
/// optimiser folds it to `true` where `?v` is always bound, and a filter without variables is
/// pushed down to the leaves, where a cross product never passes.
fn alive(inner: GraphPattern) -> GraphPattern {
    let mut args = vec![Expression::Literal(true.into())];
    inner.on_in_scope_variable(|v| args.push(Expression::Variable(v.clone())));
    GraphPattern::Filter {
        expr: call(ALIVE, vec![Expression::Coalesce(args)]),
        inner: Box::new(inner),
    }
}

/// Inserts the guard calls (see the module docs) into an already isolated query.
pub fn rewrite(query: Query) -> Query {
    match query {
        Query::Select {
            dataset,
            pattern,
            base_iri,
        } => Query::Select {
            dataset,
            pattern: root(guard(pattern)),
            base_iri,
        },
        Query::Construct {
            template,
            dataset,
            pattern,
            base_iri,
        } => Query::Construct {
            template,
            dataset,
            pattern: root(guard(pattern)),
            base_iri,
        },
        Query::Describe {
            dataset,
            pattern,
            base_iri,
        } => Query::Describe {
            dataset,
            pattern: root(guard(pattern)),
            base_iri,
        },
        Query::Ask {
            dataset,
            pattern,
            base_iri,
        } => Query::Ask {
            dataset,
            pattern: root(guard(pattern)),
            base_iri,
        },
    }
}

/// The check at the root goes below the solution modifiers (projection, DISTINCT, LIMIT,
/// ORDER BY), where every variable of the pattern is still in scope.
fn root(pattern: GraphPattern) -> GraphPattern {
    use GraphPattern as G;
    match pattern {
        G::Project { inner, variables } => G::Project {
            inner: Box::new(root(*inner)),
            variables,
        },
        G::Distinct { inner } => G::Distinct {
            inner: Box::new(root(*inner)),
        },
        G::Reduced { inner } => G::Reduced {
            inner: Box::new(root(*inner)),
        },
        G::Slice {
            inner,
            start,
            length,
        } => G::Slice {
            inner: Box::new(root(*inner)),
            start,
            length,
        },
        // `guard` checked what ORDER BY sorts already.
        ordered @ G::OrderBy { .. } => ordered,
        other => alive(other),
    }
}

// Takes the box the algebra holds and hands back a new one: the pattern moves through.
#[allow(clippy::boxed_local)]
fn boxed(p: Box<GraphPattern>) -> Box<GraphPattern> {
    Box::new(guard(*p))
}

pub(super) fn guard(pattern: GraphPattern) -> GraphPattern {
    use GraphPattern as G;
    match pattern {
        G::Join { left, right } => {
            let cross = disjoint(&left, &right);
            let join = G::Join {
                left: boxed(left),
                right: boxed(right),
            };
            if cross {
                alive(join)
            } else {
                join
            }
        }
        G::Bgp { patterns } => cross_products(patterns),
        G::LeftJoin {
            left,
            right,
            expression,
        } => G::LeftJoin {
            left: boxed(left),
            right: boxed(right),
            expression: expression.map(bounded),
        },
        G::Lateral { left, right } => G::Lateral {
            left: boxed(left),
            right: boxed(right),
        },
        G::Minus { left, right } => G::Minus {
            left: boxed(left),
            right: boxed(right),
        },
        G::Union { left, right } => G::Union {
            left: boxed(left),
            right: boxed(right),
        },
        G::Filter { expr, inner } => G::Filter {
            expr: bounded(expr),
            inner: boxed(inner),
        },
        G::Graph { name, inner } => G::Graph {
            name,
            inner: boxed(inner),
        },
        G::Extend {
            inner,
            variable,
            expression,
        } => G::Extend {
            inner: boxed(inner),
            variable,
            expression: {
                let e = bounded(expression);
                // A REPLACE or CONCAT is bound already: checked once.
                if is_bounded(&e) {
                    e
                } else {
                    call(BOUNDED, vec![e])
                }
            },
        },
        G::OrderBy { inner, expression } => G::OrderBy {
            inner: Box::new(alive(guard(*inner))),
            expression: expression.into_iter().map(calls::ordered).collect(),
        },
        G::Project { inner, variables } => G::Project {
            inner: boxed(inner),
            variables,
        },
        G::Distinct { inner } => G::Distinct {
            inner: boxed(inner),
        },
        G::Reduced { inner } => G::Reduced {
            inner: boxed(inner),
        },
        G::Slice {
            inner,
            start,
            length,
        } => G::Slice {
            inner: boxed(inner),
            start,
            length,
        },
        G::Group {
            inner,
            variables,
            aggregates,
        } => G::Group {
            inner: Box::new(alive(guard(*inner))),
            variables,
            aggregates: aggregates
                .into_iter()
                .map(|(v, a)| (v, calls::aggregate(a)))
                .collect(),
        },
        G::Service {
            name,
            inner,
            silent,
        } => G::Service {
            name,
            inner: boxed(inner),
            silent,
        },
        other @ (G::Path { .. } | G::Values { .. }) => other,
    }
}

fn is_bounded(e: &Expression) -> bool {
    matches!(e, Expression::FunctionCall(Function::Custom(f), _) if f.as_str() == BOUNDED)
}

/// Do the two sides of a join share no variable (a cross product)?
fn disjoint(left: &GraphPattern, right: &GraphPattern) -> bool {
    let mut names = std::collections::HashSet::new();
    left.on_in_scope_variable(|v| {
        names.insert(v.as_str().to_owned());
    });
    let mut shared = false;
    right.on_in_scope_variable(|v| shared |= names.contains(v.as_str()));
    !shared
}

/// A basic graph pattern as the join of its connected parts (patterns linked by shared
/// variables), each join of two parts checked: within a part the store reads are checked
/// already, between parts nothing is.
fn cross_products(patterns: Vec<spargebra::term::TriplePattern>) -> GraphPattern {
    use spargebra::term::{NamedNodePattern, TermPattern};
    let variables = |t: &spargebra::term::TriplePattern| -> Vec<String> {
        let mut out = Vec::new();
        for term in [&t.subject, &t.object] {
            if let TermPattern::Variable(v) = term {
                out.push(v.as_str().to_owned());
            }
        }
        if let NamedNodePattern::Variable(v) = &t.predicate {
            out.push(v.as_str().to_owned());
        }
        out
    };
    let mut parts: Vec<(
        std::collections::HashSet<String>,
        Vec<spargebra::term::TriplePattern>,
    )> = Vec::new();
    for pattern in patterns {
        let vars: std::collections::HashSet<String> = variables(&pattern).into_iter().collect();
        let (linked, mut rest): (Vec<_>, Vec<_>) = parts
            .into_iter()
            .partition(|(names, _)| !vars.is_disjoint(names));
        let mut merged = (vars, vec![pattern]);
        for (names, items) in linked {
            merged.0.extend(names);
            merged.1.extend(items);
        }
        rest.push(merged);
        parts = rest;
    }
    let mut parts = parts
        .into_iter()
        .map(|(_, patterns)| GraphPattern::Bgp { patterns });
    let first = parts.next().unwrap_or(GraphPattern::Bgp {
        patterns: Vec::new(),
    });
    parts.fold(first, |joined, part| {
        alive(GraphPattern::Join {
            left: Box::new(joined),
            right: Box::new(part),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> String {
        let query = spargebra::SparqlParser::new().parse_query(text).unwrap();
        rewrite(query).to_sse()
    }

    #[test]
    fn the_root_groupings_and_binds_are_guarded() {
        let sse = rewritten(
            "SELECT ?l WHERE { VALUES ?a { 1 2 } VALUES ?b { 3 4 } BIND(CONCAT(STR(?a), STR(?b)) AS ?s) BIND(STRLEN(?s) AS ?l) }",
        );
        // The root, and the cross product of the two VALUES blocks.
        assert_eq!(sse.matches(ALIVE).count(), 2, "{sse}");
        assert_eq!(sse.matches(BOUNDED).count(), 2, "{sse}");
        // The root's check names the joined variables, so it stays above the join, in an
        // expression the optimiser cannot fold to a constant (as it folds `BOUND(?a)`).
        assert!(sse.contains("(coalesce \"true\"^^"), "{sse}");
        assert!(sse.contains(" ?a ?b)) (join"), "{sse}");
        assert!(!sse.contains("(bound "), "{sse}");
        assert!(sse.starts_with("(project"), "{sse}");
        let sse =
            rewritten("SELECT ?a (COUNT(*) AS ?n) WHERE { ?s ?p ?a } GROUP BY ?a ORDER BY ?n");
        assert_eq!(sse.matches(ALIVE).count(), 2, "{sse}");
        // A connected pattern stays one BGP; disconnected parts are joined under checks.
        let sse = rewritten("SELECT * WHERE { ?a ?b ?c . ?c ?d ?e }");
        assert_eq!(sse.matches(ALIVE).count(), 1, "{sse}");
        let sse = rewritten("SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }");
        assert_eq!(sse.matches(ALIVE).count(), 3, "{sse}");
    }

    #[test]
    fn an_abort_is_an_error_and_other_panics_go_on() {
        assert_eq!(
            evaluate(|| panic::panic_any(Abort::Value { limit: 1 })),
            Err::<(), _>(Abort::Value { limit: 1 })
        );
        assert_eq!(evaluate(|| 5), Ok(5));
        let other = panic::catch_unwind(|| evaluate(|| panic!("a bug")));
        assert!(other.is_err());
    }

    #[test]
    fn the_functions_abort_on_cancel_and_on_large_values() {
        let token = CancellationToken::new();
        let limits = Limits {
            max_value_bytes: 4,
            max_memory_bytes: usize::MAX,
        };
        let (alive, bounded) = functions(token.clone(), limits);
        assert_eq!(evaluate(|| alive(&[]).is_some()), Ok(true));
        let small: Term = Literal::new_simple_literal("abcd").into();
        let large: Term = Literal::new_simple_literal("abcde").into();
        assert_eq!(
            evaluate(|| bounded(std::slice::from_ref(&small))),
            Ok(Some(small.clone()))
        );
        assert_eq!(
            evaluate(|| bounded(std::slice::from_ref(&large))),
            Err(Abort::Value { limit: 4 })
        );
        token.cancel();
        assert_eq!(evaluate(|| alive(&[])), Err(Abort::Cancelled));
    }
}
