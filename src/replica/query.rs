//! Queries on the replica: an analyst's (already isolated) query, and the node's own reads of
//! what the replica holds (`sync`, `verify`).

use std::sync::Arc;
use std::time::Duration;

use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::Term;
use oxigraph::sparql::results::{
    QueryResultsFormat, QueryResultsParser, SliceQueryResultsParserOutput,
};
use oxigraph::sparql::{QuerySolution, Variable};

use super::client::{Client, Failure};
use crate::rdf::Answer;

/// Virtuoso answers `ASK` in JSON as one row of this variable (`1` or `0`), not a boolean.
const VIRTUOSO_ASK: &str = "__ASK_RETVAL";

/// Runs `text` (a SELECT, ASK or CONSTRUCT), at most `cap` results; more is
/// [`Outcome::TooMany`].
pub async fn run(
    client: &Client,
    text: &str,
    graph: bool,
    timeout: Duration,
    cap: usize,
) -> Result<Outcome, Failure> {
    run_as(client, text, graph, timeout, cap, true).await
}

/// [`run`]; `unskolemise`: the replica's skolem IRIs become the store's blank nodes again,
/// so an analyst gets the terms the store would give (the node's own comparisons keep them).
async fn run_as(
    client: &Client,
    text: &str,
    graph: bool,
    timeout: Duration,
    cap: usize,
    unskolemise: bool,
) -> Result<Outcome, Failure> {
    let accept = if graph {
        "application/n-triples"
    } else {
        "application/sparql-results+json"
    };
    let started = std::time::Instant::now();
    let response = client.query(text, accept, timeout).await?;
    // Virtuoso's "anytime" answer: cut at its own time limit, with 200 and these headers.
    if let Some(state) = response.headers().get("x-sql-state") {
        return Err(Failure::Query(format!(
            "the replica answered only in part ({})",
            state.to_str().unwrap_or("?")
        )));
    }
    let truncated_at = response
        .headers()
        .get("x-sparql-maxrows")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    let left = timeout.saturating_sub(started.elapsed());
    // Read under a cap while it streams: an answer the node would refuse anyway (more rows
    // than the cap) must not be held whole first.
    let max = answer_bytes(cap);
    let body = tokio::time::timeout(left, crate::capped::bytes(response, max))
        .await
        .map_err(|_| Failure::TimedOut)?
        .map_err(|e| match e {
            crate::capped::BodyError::TooLarge { .. } => {
                Failure::Query(format!("the answer is larger than {max} bytes"))
            }
            other => Failure::Unavailable(other.to_string()),
        })?;
    // Parsing a large answer is CPU work: off the async threads.
    let answer = tokio::task::spawn_blocking(move || {
        let answer = if graph {
            parse_graph(&body, cap)
        } else {
            parse_results(&body, cap)
        };
        answer.map(|a| a.map(|a| if unskolemise { blank_again(a) } else { a }))
    })
    .await
    .map_err(|e| Failure::Unavailable(e.to_string()))??;
    let count = match &answer {
        Some(Answer::Solutions { rows, .. }) => rows.len(),
        Some(Answer::Graph(triples)) => triples.len(),
        Some(Answer::Boolean(_)) => 0,
        None => return Ok(Outcome::TooMany),
    };
    if count > cap {
        return Ok(Outcome::TooMany);
    }
    // The replica cut the answer at its own row limit, saying so only in a header.
    if truncated_at.is_some_and(|max| count >= max) {
        return Err(Failure::Query(format!(
            "the replica cut the answer at its row limit ({count} rows)"
        )));
    }
    Ok(Outcome::Answer(answer.expect("counted above")))
}

/// The most bytes of an answer of at most `cap` rows read from the replica: room for rows of
/// 16 KB each, at least 16 MB, at most 512 MB (the heap one query may take on the store).
fn answer_bytes(cap: usize) -> usize {
    cap.saturating_add(1)
        .saturating_mul(16 << 10)
        .clamp(16 << 20, 512 << 20)
}

/// The blank node a skolem IRI of the replica stands for.
fn blank_of(n: &oxigraph::model::NamedNode) -> Option<oxigraph::model::BlankNode> {
    let id = n.as_str().strip_prefix(super::update::GENID)?;
    oxigraph::model::BlankNode::new(id).ok()
}

/// `term` as the store gives it: a skolem IRI is the blank node again, and a number, date,
/// time, duration or boolean is in the canonical form the store writes (Virtuoso keeps them
/// natively and writes its own: `…21.240Z` for the store's `…21.24Z`).
fn unskolemised(term: Term) -> Term {
    match term {
        Term::NamedNode(n) => blank_of(&n).map_or(Term::NamedNode(n), Term::BlankNode),
        Term::Literal(l) => Term::Literal(canonical(l)),
        other => other,
    }
}

fn canonical(l: oxigraph::model::Literal) -> oxigraph::model::Literal {
    use oxsdatatypes::*;
    fn form<T: std::str::FromStr + std::fmt::Display>(value: &str) -> Option<String> {
        value.parse::<T>().ok().map(|v| v.to_string())
    }
    let Some(local) = l
        .datatype()
        .as_str()
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
    else {
        return l;
    };
    let value = l.value();
    let written = match local {
        "dateTime" => form::<DateTime>(value),
        "date" => form::<Date>(value),
        "time" => form::<Time>(value),
        "duration" => form::<Duration>(value),
        "dayTimeDuration" => form::<DayTimeDuration>(value),
        "yearMonthDuration" => form::<YearMonthDuration>(value),
        "decimal" => form::<Decimal>(value),
        "integer" => form::<Integer>(value),
        "double" => form::<Double>(value),
        "float" => form::<Float>(value),
        "boolean" => form::<Boolean>(value),
        _ => None,
    };
    match written {
        Some(w) if w != value => oxigraph::model::Literal::new_typed_literal(w, l.datatype()),
        _ => l,
    }
}

fn blank_again(answer: Answer) -> Answer {
    use oxigraph::model::{NamedOrBlankNode, Triple};
    match answer {
        Answer::Solutions { variables, rows } => {
            let shared: Arc<[Variable]> = variables.clone().into();
            let rows = rows
                .into_iter()
                .map(|row| {
                    let values: Vec<Option<Term>> = row
                        .values()
                        .iter()
                        .map(|v| v.clone().map(unskolemised))
                        .collect();
                    QuerySolution::from((shared.clone(), values))
                })
                .collect();
            Answer::Solutions { variables, rows }
        }
        Answer::Graph(triples) => Answer::Graph(
            triples
                .into_iter()
                .map(|t| {
                    let subject = match t.subject {
                        NamedOrBlankNode::NamedNode(n) => blank_of(&n)
                            .map_or(NamedOrBlankNode::NamedNode(n), NamedOrBlankNode::BlankNode),
                        other => other,
                    };
                    Triple::new(subject, t.predicate, unskolemised(t.object))
                })
                .collect(),
        ),
        other => other,
    }
}

pub enum Outcome {
    Answer(Answer),
    TooMany,
}

/// An answer the node cannot read is the replica's way with this query (a value its parser
/// does not take): the store answers it.
fn unreadable(e: impl std::fmt::Display) -> Failure {
    Failure::Query(format!("unreadable answer: {e}"))
}

/// The triples of an N-Triples answer; `None` as soon as there are more than `cap`.
fn parse_graph(body: &[u8], cap: usize) -> Result<Option<Answer>, Failure> {
    let mut triples = Vec::new();
    for t in RdfParser::from_format(RdfFormat::NTriples).for_slice(body) {
        let q = t.map_err(unreadable)?;
        if triples.len() == cap {
            return Ok(None);
        }
        triples.push(oxigraph::model::Triple::new(
            q.subject,
            q.predicate,
            q.object,
        ));
    }
    Ok(Some(Answer::Graph(triples)))
}

/// SPARQL JSON results (Virtuoso's `typed-literal` included); `None` as soon as there are
/// more than `cap` rows.
fn parse_results(body: &[u8], cap: usize) -> Result<Option<Answer>, Failure> {
    let parsed = QueryResultsParser::from_format(QueryResultsFormat::Json)
        .for_slice(body)
        .map_err(unreadable)?;
    match parsed {
        SliceQueryResultsParserOutput::Boolean(b) => Ok(Some(Answer::Boolean(b))),
        SliceQueryResultsParserOutput::Solutions(solutions) => {
            let variables: Vec<Variable> = solutions.variables().to_vec();
            let mut rows = Vec::new();
            for row in solutions {
                if rows.len() > cap {
                    return Ok(None);
                }
                rows.push(row.map_err(unreadable)?);
            }
            if let [v] = variables.as_slice() {
                if v.as_str() == VIRTUOSO_ASK && rows.len() <= 1 {
                    let yes = rows.first().and_then(|r| r.get(v.as_str())).is_some_and(
                        |t| matches!(t, Term::Literal(l) if l.value() != "0" && l.value() != "false"),
                    );
                    return Ok(Some(Answer::Boolean(yes)));
                }
            }
            Ok(Some(Answer::Solutions { variables, rows }))
        }
    }
}

/// The rows of one of the node's own queries (no cap; an answer the replica cut is an error).
pub async fn select(client: &Arc<Client>, text: &str) -> Result<Vec<QuerySolution>, Failure> {
    match run_as(
        client,
        text,
        false,
        Duration::from_secs(300),
        usize::MAX,
        false,
    )
    .await?
    {
        Outcome::Answer(Answer::Solutions { rows, .. }) => Ok(rows),
        Outcome::Answer(_) | Outcome::TooMany => Err(Failure::Unavailable(
            "the replica answered a SELECT with something else".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_virtuosos_json() {
        let ask = br#"{ "head": { "link": [], "vars": ["__ASK_RETVAL"] },
  "results": { "distinct": false, "ordered": true, "bindings": [
    { "__ASK_RETVAL": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#integer", "value": "1" }} ] } }"#;
        assert!(matches!(
            parse_results(ask, 10),
            Ok(Some(Answer::Boolean(true)))
        ));
        let select = br#"{ "head": { "link": [], "vars": ["g", "n"] },
  "results": { "distinct": false, "ordered": true, "bindings": [
    { "g": { "type": "uri", "value": "urn:g1" }	, "n": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#decimal", "value": "1.5" }} ] } }"#;
        let Ok(Some(Answer::Solutions { variables, rows })) = parse_results(select, 10) else {
            panic!("solutions expected")
        };
        assert_eq!(variables.len(), 2);
        assert_eq!(
            rows[0].get("n").unwrap().to_string(),
            "\"1.5\"^^<http://www.w3.org/2001/XMLSchema#decimal>"
        );
    }
}
