//! The analysts' SPARQL 1.1 query endpoint: a caller's query over exactly the graphs it may
//! read.
//!
//! - The dataset: the caller's contribution graphs (`own`), the other members' contributions
//!   to consignments in its circles (`shared`), or both (`all`). System graphs (accounts,
//!   index, sharing, policies, notifications, activity logs) are never in it.
//! - `FROM` / `FROM NAMED` and the protocol's `default-graph-uri` / `named-graph-uri` narrow
//!   it (a graph outside it is simply empty); they never widen it.
//! - [`isolate`] rewrites the query so that it cannot read anything else.
//! - Query only: an update is refused (403), `SERVICE` too (400).
//! - A time limit that cancels the evaluation, and a cap on result rows.

pub mod isolate;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use oxigraph::model::{GraphName, NamedNode, Term, Triple};
use oxigraph::sparql::{
    CancellationToken, QueryEvaluationError, QueryResults, QuerySolution, SparqlEvaluator, Variable,
};
use spargebra::SparqlParser;

use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::sharing::Sharing;
use crate::store::{graphs, Queries, Store};
use crate::views::{text, Scope};

/// What a query answers with, known before evaluation (for content negotiation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// SELECT and ASK: SPARQL results formats.
    Results,
    /// CONSTRUCT and DESCRIBE: RDF formats.
    Graph,
}

pub enum Answer {
    Solutions {
        variables: Vec<Variable>,
        rows: Vec<QuerySolution>,
    },
    Boolean(bool),
    Graph(Vec<Triple>),
}

/// A parsed query, ready to run.
pub struct Parsed {
    query: spargebra::Query,
    pub form: Form,
}

/// The protocol's dataset parameters.
#[derive(Debug, Default)]
pub struct Protocol {
    pub default_graphs: Vec<String>,
    pub named_graphs: Vec<String>,
}

pub struct Sparql {
    store: Arc<Store>,
    queries: Arc<Queries>,
    sharing: Arc<Sharing>,
    timeout: Duration,
    max_rows: usize,
}

impl Sparql {
    pub fn new(
        store: Arc<Store>,
        queries: Arc<Queries>,
        sharing: Arc<Sharing>,
        timeout: Duration,
        max_rows: usize,
    ) -> Self {
        Self {
            store,
            queries,
            sharing,
            timeout,
            max_rows,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Parses a query; an update is 403, a syntax error 400 naming the problem.
    pub fn parse(text: &str) -> Result<Parsed> {
        match SparqlParser::new().parse_query(text) {
            Ok(query) => {
                let form = match &query {
                    spargebra::Query::Select { .. } | spargebra::Query::Ask { .. } => Form::Results,
                    _ => Form::Graph,
                };
                Ok(Parsed { query, form })
            }
            Err(e) => {
                if SparqlParser::new().parse_update(text).is_ok() {
                    return Err(Error::Forbidden(
                        "this endpoint answers queries only; SPARQL Update is not accepted".into(),
                    ));
                }
                Err(Error::invalid_field(
                    "query",
                    format!("not a SPARQL 1.1 query: {e}"),
                ))
            }
        }
    }

    /// The contribution graphs `caller` may read in `scope`. Blocking.
    pub fn readable(&self, caller: &Caller, scope: Scope) -> Result<HashSet<String>> {
        let org = &caller.organization;
        let rows = self.queries.select(
            &self.store,
            "readable_records",
            &[("org", NamedNode::new_unchecked(org.as_str()).into())],
        )?;
        let mut out = HashSet::new();
        for row in rows {
            let (Some(Term::NamedNode(record)), Some(aig), Some(graph), Some(kind)) = (
                row.get("record"),
                text(&row, "aig"),
                text(&row, "graph"),
                text(&row, "kind"),
            ) else {
                continue;
            };
            let hex = aig.strip_prefix("aig:").unwrap_or(&aig);
            if kind == "contributed" {
                // Its own contribution, whether or not the circle still includes it.
                if scope.includes_own() {
                    out.insert(graphs::contribution(hex, org).into_string());
                }
                continue;
            }
            let published = kind == "published";
            if (published && scope.includes_own()) || (!published && scope.includes_shared()) {
                out.insert(graph);
            }
            for contributor in self.sharing.contributors(record)? {
                let own = contributor == *org;
                if (own && scope.includes_own()) || (!own && scope.includes_shared()) {
                    out.insert(graphs::contribution(hex, &contributor).into_string());
                }
            }
        }
        Ok(out)
    }

    /// Evaluates `parsed` for `caller`, cancelled through `cancel` (the time limit). Blocking.
    pub fn run(
        &self,
        caller: &Caller,
        scope: Scope,
        parsed: Parsed,
        protocol: &Protocol,
        cancel: CancellationToken,
    ) -> Result<Answer> {
        let readable = self.readable(caller, scope)?;
        let narrowed = |asked: Option<&Vec<String>>| -> Arc<HashSet<String>> {
            Arc::new(match asked {
                Some(list) => list
                    .iter()
                    .filter(|g| readable.contains(*g))
                    .cloned()
                    .collect(),
                None => readable.clone(),
            })
        };
        // The protocol's parameters replace the query's dataset clause (SPARQL 1.1 Protocol).
        let requested = isolate::requested(&parsed.query);
        let (default_asked, named_asked) =
            if protocol.default_graphs.is_empty() && protocol.named_graphs.is_empty() {
                (requested.default, requested.named)
            } else {
                (
                    Some(protocol.default_graphs.clone()),
                    Some(protocol.named_graphs.clone()),
                )
            };
        let default = narrowed(default_asked.as_ref());
        let named = narrowed(named_asked.as_ref());
        let query = isolate::rewrite(parsed.query, &|g| named.contains(g)).map_err(
            |isolate::Refused::Service| {
                Error::invalid_field(
                    "query",
                    "SERVICE is not available: the node makes no outgoing request for a query",
                )
            },
        )?;
        let member = |set: Arc<HashSet<String>>| {
            move |args: &[Term]| -> Option<Term> {
                let yes =
                    matches!(args.first(), Some(Term::NamedNode(g)) if set.contains(g.as_str()));
                Some(oxigraph::model::Literal::from(yes).into())
            }
        };
        let mut prepared = SparqlEvaluator::new()
            .with_custom_function(
                NamedNode::new_unchecked(isolate::IN_DEFAULT),
                member(default),
            )
            .with_custom_function(NamedNode::new_unchecked(isolate::IN_NAMED), member(named))
            .with_cancellation_token(cancel)
            .for_query(query);
        // Nothing is read from the store's default graph: every pattern names its graph.
        prepared
            .dataset_mut()
            .set_default_graph(Vec::<GraphName>::new());
        let cap = self.max_rows;
        let too_many = || {
            Error::invalid_field(
                "query",
                format!("the query returns more than {cap} results; narrow it or add LIMIT"),
            )
        };
        match prepared
            .on_store(self.store.db())
            .execute()
            .map_err(evaluation)?
        {
            QueryResults::Solutions(solutions) => {
                let variables = solutions.variables().to_vec();
                let mut rows = Vec::new();
                for row in solutions {
                    rows.push(row.map_err(evaluation)?);
                    if rows.len() > cap {
                        return Err(too_many());
                    }
                }
                Ok(Answer::Solutions { variables, rows })
            }
            QueryResults::Boolean(b) => Ok(Answer::Boolean(b)),
            QueryResults::Graph(triples) => {
                let mut out = Vec::new();
                for t in triples {
                    out.push(t.map_err(evaluation)?);
                    if out.len() > cap {
                        return Err(too_many());
                    }
                }
                Ok(Answer::Graph(out))
            }
        }
    }
}

/// The answer to a query that ran past the time limit.
pub fn timed_out() -> Error {
    Error::Unavailable("the query ran longer than the node's time limit and was stopped".into())
}

fn evaluation(e: QueryEvaluationError) -> Error {
    match e {
        QueryEvaluationError::Cancelled => timed_out(),
        other => {
            // Evaluation errors of a valid query are mostly the caller's (type errors surface
            // as unbound values, not errors); store failures are internal.
            tracing::warn!(error = %other, "SPARQL evaluation failed");
            Error::invalid_field(
                "query",
                format!("the query could not be evaluated: {other}"),
            )
        }
    }
}
