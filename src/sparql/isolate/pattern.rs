//! The graph patterns: default-graph patterns confined to graphs of their own, named graphs
//! checked, and every other variant rewritten through its children.

use spargebra::algebra::{AggregateExpression, AggregateFunction, GraphPattern, OrderExpression};
use spargebra::term::{NamedNodePattern, TriplePattern, Variable};

use super::estimate::{binds, estimated_size, min_size};
use super::pending::{marker_join, Confined, Pending, BROAD};
use super::{nothing, Refused, Rewriter};

impl Rewriter<'_> {
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
    pub(super) fn joined(
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
            path @ GraphPattern::Path { .. } => {
                if in_graph {
                    path
                } else {
                    self.confine(path, pending)
                }
            }
            GraphPattern::Graph { name, inner } => self.graph(name, inner)?,
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
            values @ GraphPattern::Values { .. } => values,
            GraphPattern::OrderBy { inner, expression } => GraphPattern::OrderBy {
                inner: self.boxed(inner, in_graph)?,
                expression: self.order(expression, in_graph)?,
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
                aggregates: self.aggregates(aggregates, in_graph)?,
            },
        })
    }

    /// `GRAPH <iri>` kept when readable, else nothing; `GRAPH ?v` checked per solution, or
    /// joined with the markers of named graphs when broad and evaluated on its own.
    fn graph(
        &mut self,
        name: NamedNodePattern,
        inner: Box<GraphPattern>,
    ) -> Result<GraphPattern, Refused> {
        Ok(match name {
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
                        expr: self.sources.check(true, v),
                        inner: Box::new(graph),
                    },
                }
            }
        })
    }

    fn order(
        &mut self,
        expression: Vec<OrderExpression>,
        in_graph: bool,
    ) -> Result<Vec<OrderExpression>, Refused> {
        expression
            .into_iter()
            .map(|o| {
                Ok(match o {
                    OrderExpression::Asc(e) => OrderExpression::Asc(self.expression(e, in_graph)?),
                    OrderExpression::Desc(e) => {
                        OrderExpression::Desc(self.expression(e, in_graph)?)
                    }
                })
            })
            .collect()
    }

    fn aggregates(
        &mut self,
        aggregates: Vec<(Variable, AggregateExpression)>,
        in_graph: bool,
    ) -> Result<Vec<(Variable, AggregateExpression)>, Refused> {
        aggregates
            .into_iter()
            .map(|(v, a)| {
                Ok((
                    v,
                    match a {
                        AggregateExpression::CountSolutions { distinct } => {
                            AggregateExpression::CountSolutions { distinct }
                        }
                        AggregateExpression::FunctionCall {
                            name: AggregateFunction::Custom(iri),
                            ..
                        } => return Err(Refused::Function(iri.as_str().to_owned())),
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
            .collect()
    }
}
