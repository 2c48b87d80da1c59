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

mod alike;
mod calls;
pub mod depth;
pub mod guard;
pub mod isolate;
mod portable;
pub mod threads;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use oxigraph::model::{GraphName, NamedNode, Term};
use oxigraph::sparql::{
    BoundPreparedSparqlQuery, CancellationToken, PreparedSparqlQuery, QueryEvaluationError,
    QueryResults, SparqlEvaluator,
};
use spargebra::SparqlParser;

use crate::auth::Caller;
use crate::consignment::listing::{id_bits, Listing};
use crate::consignment::Scope;
use crate::error::{Error, Result};
use crate::replica::Replica;
use crate::sharing::{readable, Sharing};
use crate::store::{graphs, Store};

/// What a query answers with, known before evaluation (for content negotiation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// SELECT and ASK: SPARQL results formats.
    Results,
    /// CONSTRUCT and DESCRIBE: RDF formats.
    Graph,
}

pub use crate::rdf::Answer;

pub use alike::replica_answers_alike;

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

/// Which contribution graphs a caller may read in a scope, decided per graph name from the
/// in-memory indexes (no query, nothing built per request, so an analyst's query costs the
/// same at 100 consignments as at 100,000):
/// - its own contributions (`own`): a contribution graph is only ever written by the
///   organisation it is named after;
/// - the other contributions to consignments in its circle (`shared`): those it published
///   (its list) and those shared with it (its grants) — the publisher's description and every
///   other member's events and documents.
///
/// System graphs, activity logs and notifications are never contribution graphs.
pub struct Readable {
    org: String,
    key: String,
    own: bool,
    shared: bool,
    listing: Arc<Listing>,
    sharing: Arc<Sharing>,
}

impl Readable {
    pub fn contains(&self, graph: &str) -> bool {
        let Some((hex, key)) = graphs::parse_contribution(graph) else {
            return false;
        };
        if key == self.key {
            return self.own;
        }
        if !self.shared {
            return false;
        }
        let Some(bits) = id_bits(hex) else {
            return false;
        };
        self.listing.contains(&self.org, bits) || self.sharing.shares_with(&self.org, bits)
    }
}

/// A query's default graph or named graphs: everything readable, or the readable part of
/// what `FROM` / `FROM NAMED` / the protocol asked for.
enum Graphs {
    Readable(Arc<Readable>),
    Listed(HashSet<String>),
}

impl Graphs {
    fn contains(&self, graph: &str) -> bool {
        match self {
            Graphs::Readable(r) => r.contains(graph),
            Graphs::Listed(set) => set.contains(graph),
        }
    }
}

pub struct Sparql {
    store: Arc<Store>,
    sharing: Arc<Sharing>,
    listing: Arc<Listing>,
    timeout: Duration,
    max_rows: usize,
    limits: guard::Limits,
    running: Arc<Running>,
    replica: Option<Arc<Replica>>,
}

/// How many queries may run at once, on the node and per organisation.
#[derive(Debug, Clone, Copy)]
pub struct Concurrency {
    pub node: usize,
    pub organization: usize,
}

/// The queries running now, per organisation, and their tokens (to stop them at shutdown).
struct Running {
    limits: Concurrency,
    state: std::sync::Mutex<RunningState>,
}

#[derive(Default)]
struct RunningState {
    total: usize,
    by_org: std::collections::HashMap<String, usize>,
    tokens: std::collections::HashMap<u64, CancellationToken>,
    next: u64,
}

/// A place among the running queries, given back when the evaluation ends (not when the caller
/// is answered: a query past its time limit still holds its place until it has stopped).
pub struct Permit {
    running: Arc<Running>,
    org: String,
    id: u64,
    pub token: CancellationToken,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.running.state.lock().unwrap_or_else(|p| p.into_inner());
        state.total -= 1;
        if let Some(n) = state.by_org.get_mut(&self.org) {
            *n -= 1;
            if *n == 0 {
                state.by_org.remove(&self.org);
            }
        }
        state.tokens.remove(&self.id);
    }
}

impl Sparql {
    pub fn new(
        store: Arc<Store>,
        sharing: Arc<Sharing>,
        listing: Arc<Listing>,
        timeout: Duration,
        max_rows: usize,
        limits: guard::Limits,
        concurrency: Concurrency,
    ) -> Self {
        Self {
            store,
            sharing,
            listing,
            timeout,
            max_rows,
            limits,
            running: Arc::new(Running {
                limits: concurrency,
                state: Default::default(),
            }),
            replica: None,
        }
    }

    /// Queries go to `replica` while it is close enough behind the store.
    pub fn with_replica(mut self, replica: Option<Arc<Replica>>) -> Self {
        self.replica = replica;
        self
    }

    /// The replica queries may go to, when one is configured.
    pub fn replica(&self) -> Option<&Arc<Replica>> {
        self.replica.as_ref()
    }

    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    /// A place for one more query of `org`, or 429 when the node or the organisation runs as
    /// many as it may.
    pub fn admit(&self, org: &str) -> Result<Permit> {
        let mut state = self.running.state.lock().unwrap_or_else(|p| p.into_inner());
        let of_org = state.by_org.get(org).copied().unwrap_or(0);
        let limits = self.running.limits;
        if state.total >= limits.node || of_org >= limits.organization {
            return Err(Error::TooManyRequests {
                retry_after_secs: 1,
            });
        }
        state.total += 1;
        *state.by_org.entry(org.to_owned()).or_default() += 1;
        state.next += 1;
        let id = state.next;
        let token = CancellationToken::new();
        state.tokens.insert(id, token.clone());
        Ok(Permit {
            running: self.running.clone(),
            org: org.to_owned(),
            id,
            token,
        })
    }

    /// Stops every running evaluation (graceful shutdown).
    pub fn cancel_all(&self) {
        let state = self.running.state.lock().unwrap_or_else(|p| p.into_inner());
        for token in state.tokens.values() {
            token.cancel();
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Parses a query; an update is 403, a syntax error 400 naming the problem.
    /// Parses `text`, refusing what would nest too deeply to evaluate ([`depth`]). On a
    /// thread of [`depth::run`]: a refused query is dropped here, and dropping it recurses.
    pub fn parse(text: &str) -> Result<Parsed> {
        depth::check_text(text)?;
        match SparqlParser::new().parse_query(text) {
            Ok(query) => {
                depth::check_depth(&query)?;
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

    /// The contribution graphs `caller` may read in `scope`.
    pub fn readable(&self, caller: &Caller, scope: Scope) -> Readable {
        Readable {
            org: caller.organization.clone(),
            key: graphs::org_key(&caller.organization),
            own: scope.includes_own(),
            shared: scope.includes_shared(),
            listing: self.listing.clone(),
            sharing: self.sharing.clone(),
        }
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
        let (default, named) = self.datasets(caller, scope, &parsed.query, protocol);
        let sources = isolate::Sources {
            default: readable_markers(&default),
            named: readable_markers(&named),
            portable: None,
        };
        let query =
            isolate::rewrite(parsed.query, &|g| named.contains(g), &sources).map_err(refused)?;
        let prepared = self.prepare(guard::rewrite(query), default, named, cancel);
        let (cap, store) = (self.max_rows, self.store.db());
        guard::evaluate(move || collect(prepared.on_store(store), cap))
            .unwrap_or_else(|abort| Err(aborted(abort)))
    }

    /// The graphs the query's default graph and named graphs may hold: what it (or the
    /// protocol's parameters, which replace its dataset clause, SPARQL 1.1 Protocol) asks for,
    /// narrowed to what `caller` may read in `scope`; all of that when it asks for nothing.
    fn datasets(
        &self,
        caller: &Caller,
        scope: Scope,
        query: &spargebra::Query,
        protocol: &Protocol,
    ) -> (Arc<Graphs>, Arc<Graphs>) {
        let readable = Arc::new(self.readable(caller, scope));
        let narrowed = |asked: Option<&Vec<String>>| -> Arc<Graphs> {
            Arc::new(match asked {
                Some(list) => Graphs::Listed(
                    list.iter()
                        .filter(|g| readable.contains(g))
                        .cloned()
                        .collect(),
                ),
                None => Graphs::Readable(readable.clone()),
            })
        };
        let requested = isolate::requested(query);
        let (default_asked, named_asked) =
            if protocol.default_graphs.is_empty() && protocol.named_graphs.is_empty() {
                (requested.default, requested.named)
            } else {
                (
                    Some(protocol.default_graphs.clone()),
                    Some(protocol.named_graphs.clone()),
                )
            };
        (
            narrowed(default_asked.as_ref()),
            narrowed(named_asked.as_ref()),
        )
    }

    /// The rewritten query with the node's functions bound to this caller's graph sets and
    /// this evaluation's limits.
    fn prepare(
        &self,
        query: spargebra::Query,
        default: Arc<Graphs>,
        named: Arc<Graphs>,
        cancel: CancellationToken,
    ) -> PreparedSparqlQuery {
        let (alive, bounded) = guard::functions(cancel.clone(), self.limits);
        let member = |set: Arc<Graphs>| {
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
            .with_custom_function(NamedNode::new_unchecked(guard::ALIVE), alive)
            .with_custom_function(NamedNode::new_unchecked(guard::BOUNDED), bounded)
            .with_cancellation_token(cancel)
            .for_query(query);
        // Nothing is read from the store's default graph: every pattern names its graph.
        prepared
            .dataset_mut()
            .set_default_graph(Vec::<GraphName>::new());
        prepared
    }
}

/// The caller's markers of a dataset that is all it may read: broad groups join them instead
/// of checking each solution (a `FROM` list is checked against that list).
fn readable_markers(set: &Graphs) -> Option<isolate::Markers> {
    match set {
        Graphs::Readable(r) => Some(markers(r)),
        Graphs::Listed(_) => None,
    }
}

fn markers(r: &Readable) -> isolate::Markers {
    isolate::Markers {
        graph: graphs::readable(&r.org),
        predicate: readable::predicate(),
        object: readable::scope_marker(r.own, r.shared),
    }
}

fn refused(refused: isolate::Refused) -> Error {
    match refused {
        isolate::Refused::Service => Error::invalid_field(
            "query",
            "SERVICE is not available: the node makes no outgoing request for a query",
        ),
        isolate::Refused::Function(iri) => Error::invalid_field(
            "query",
            format!(
                "the function <{}> is not available: only SPARQL's own functions and the XSD \
                 casts are",
                // An IRI is as long as the query allows; the message shows its start.
                iri.chars().take(200).collect::<String>()
            ),
        ),
    }
}

/// The answer to a query with more than `cap` results.
pub fn too_many(cap: usize) -> Error {
    Error::invalid_field(
        "query",
        format!("the query returns more than {cap} results; narrow it or add LIMIT"),
    )
}

/// Runs a prepared query to the end, at most `cap` results.
fn collect(query: BoundPreparedSparqlQuery<'static>, cap: usize) -> Result<Answer> {
    let too_many = || too_many(cap);
    match query.execute().map_err(evaluation)? {
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

fn aborted(abort: guard::Abort) -> Error {
    match abort {
        guard::Abort::Cancelled => timed_out(),
        guard::Abort::Memory { limit } => Error::invalid_field(
            "query",
            format!(
                "the query needed more than {} MB of memory and was stopped; narrow it",
                limit >> 20
            ),
        ),
        guard::Abort::Value { limit } => Error::invalid_field(
            "query",
            format!("the query built a value longer than {limit} bytes and was stopped"),
        ),
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
