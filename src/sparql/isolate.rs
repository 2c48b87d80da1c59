//! Confines a caller's query to the graphs it may read, by rewriting its algebra.
//!
//! Oxigraph can restrict a query to a list of graphs, but evaluates a default graph of many
//! graphs by opening one iterator per graph for every pattern — unusable with thousands of
//! contribution graphs. So the query runs over the whole store with an **empty** default
//! graph, and every pattern is rewritten to name its graph and check it:
//!
//! - a triple pattern or property path outside `GRAPH` becomes
//!   `GRAPH ?g_n { pattern } FILTER(in_default(?g_n))` — one fresh graph variable per pattern,
//!   so joins across graphs of the default graph still work (and stay index look-ups);
//! - `GRAPH ?v { … }` becomes `FILTER(in_named(?v)) { GRAPH ?v { … } }`;
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
use spargebra::term::{NamedNodePattern, TriplePattern, Variable};
use spargebra::Query;

/// The functions the rewritten query calls; bound to the caller's graph sets at evaluation.
pub const IN_DEFAULT: &str = "urn:dataspace-node:fn:inDefaultGraph";
pub const IN_NAMED: &str = "urn:dataspace-node:fn:inNamedGraphs";

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

/// Rewrites `query`, dropping its dataset clause (read it first with [`requested`]).
/// `is_readable_named` answers for constant `GRAPH <iri>` names.
pub fn rewrite(query: Query, is_readable_named: &dyn Fn(&str) -> bool) -> Result<Query, Refused> {
    let mut r = Rewriter {
        fresh: 0,
        prefix: fresh_prefix(&query.to_string()),
        is_readable_named,
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

struct Rewriter<'a> {
    fresh: usize,
    prefix: String,
    is_readable_named: &'a dyn Fn(&str) -> bool,
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

    /// A default-graph pattern, moved into a checked named graph.
    fn confine(&mut self, inner: GraphPattern) -> GraphPattern {
        let g = self.var();
        GraphPattern::Filter {
            expr: check(IN_DEFAULT, g.clone()),
            inner: Box::new(GraphPattern::Graph {
                name: NamedNodePattern::Variable(g),
                inner: Box::new(inner),
            }),
        }
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

    /// `in_graph`: inside `GRAPH`, where patterns read the active (already checked) graph.
    fn pattern(&mut self, p: GraphPattern, in_graph: bool) -> Result<GraphPattern, Refused> {
        Ok(match p {
            GraphPattern::Bgp { patterns } => {
                if in_graph || patterns.is_empty() {
                    GraphPattern::Bgp { patterns }
                } else {
                    let mut joined: Option<GraphPattern> = None;
                    for t in patterns {
                        let one = self.confine(GraphPattern::Bgp { patterns: vec![t] });
                        joined = Some(match joined {
                            None => one,
                            Some(left) => GraphPattern::Join {
                                left: Box::new(left),
                                right: Box::new(one),
                            },
                        });
                    }
                    joined.unwrap_or_else(nothing)
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
                    self.confine(path)
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
                NamedNodePattern::Variable(v) => GraphPattern::Filter {
                    expr: check(IN_NAMED, v.clone()),
                    inner: Box::new(GraphPattern::Graph {
                        name: NamedNodePattern::Variable(v),
                        inner: self.boxed(inner, true)?,
                    }),
                },
            },
            GraphPattern::Service { .. } => return Err(Refused::Service),
            GraphPattern::Join { left, right } => GraphPattern::Join {
                left: self.boxed(left, in_graph)?,
                right: self.boxed(right, in_graph)?,
            },
            GraphPattern::LeftJoin {
                left,
                right,
                expression,
            } => GraphPattern::LeftJoin {
                left: self.boxed(left, in_graph)?,
                right: self.boxed(right, in_graph)?,
                expression: expression
                    .map(|e| self.expression(e, in_graph))
                    .transpose()?,
            },
            GraphPattern::Lateral { left, right } => GraphPattern::Lateral {
                left: self.boxed(left, in_graph)?,
                right: self.boxed(right, in_graph)?,
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
                right: self.boxed(right, in_graph)?,
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
            E::Exists(p) => E::Exists(self.boxed(p, in_graph)?),
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
        rewrite(query, &readable).unwrap().to_string()
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

    #[test]
    fn service_is_refused_and_fresh_variables_do_not_collide() {
        let query = SparqlParser::new()
            .parse_query("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
            .unwrap();
        assert_eq!(rewrite(query, &|_| true).unwrap_err(), Refused::Service);
        let q = rewritten("SELECT ?dsn_g1 WHERE { ?dsn_g1 ?p ?o }");
        assert!(q.contains("?dsn_g_1"), "{q}");
    }
}
