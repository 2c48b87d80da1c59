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
    let accept = if graph {
        "application/n-triples"
    } else {
        "application/sparql-results+json"
    };
    let started = std::time::Instant::now();
    let response = client.query(text, accept, timeout).await?;
    // Virtuoso's "anytime" answer: cut at its own time limit, with 200 and these headers.
    if let Some(state) = response.headers().get("x-sql-state") {
        return Err(Failure::Unavailable(format!(
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
    let body = tokio::time::timeout(left, response.bytes())
        .await
        .map_err(|_| Failure::TimedOut)?
        .map_err(|e| Failure::Unavailable(e.to_string()))?;
    let answer = if graph {
        parse_graph(&body)?
    } else {
        parse_results(&body)?
    };
    let count = match &answer {
        Answer::Solutions { rows, .. } => rows.len(),
        Answer::Graph(triples) => triples.len(),
        Answer::Boolean(_) => 0,
    };
    if count > cap {
        return Ok(Outcome::TooMany);
    }
    // The replica cut the answer at its own row limit, saying so only in a header.
    if truncated_at.is_some_and(|max| count >= max) {
        return Err(Failure::Unavailable(format!(
            "the replica cut the answer at its row limit ({count} rows)"
        )));
    }
    Ok(Outcome::Answer(answer))
}

pub enum Outcome {
    Answer(Answer),
    TooMany,
}

fn unreadable(e: impl std::fmt::Display) -> Failure {
    Failure::Unavailable(format!("unreadable answer: {e}"))
}

fn parse_graph(body: &[u8]) -> Result<Answer, Failure> {
    let mut triples = Vec::new();
    for t in RdfParser::from_format(RdfFormat::NTriples).for_slice(body) {
        let q = t.map_err(unreadable)?;
        triples.push(oxigraph::model::Triple::new(
            q.subject,
            q.predicate,
            q.object,
        ));
    }
    Ok(Answer::Graph(triples))
}

/// SPARQL JSON results (Virtuoso's `typed-literal` included).
pub fn parse_results(body: &[u8]) -> Result<Answer, Failure> {
    let parsed = QueryResultsParser::from_format(QueryResultsFormat::Json)
        .for_slice(body)
        .map_err(unreadable)?;
    match parsed {
        SliceQueryResultsParserOutput::Boolean(b) => Ok(Answer::Boolean(b)),
        SliceQueryResultsParserOutput::Solutions(solutions) => {
            let variables: Vec<Variable> = solutions.variables().to_vec();
            let rows = solutions
                .map(|r| r.map_err(unreadable))
                .collect::<Result<Vec<QuerySolution>, _>>()?;
            if let [v] = variables.as_slice() {
                if v.as_str() == VIRTUOSO_ASK && rows.len() <= 1 {
                    let yes = rows.first().and_then(|r| r.get(v.as_str())).is_some_and(
                        |t| matches!(t, Term::Literal(l) if l.value() != "0" && l.value() != "false"),
                    );
                    return Ok(Answer::Boolean(yes));
                }
            }
            Ok(Answer::Solutions { variables, rows })
        }
    }
}

/// The rows of one of the node's own queries (no cap; an answer the replica cut is an error).
pub async fn select(client: &Arc<Client>, text: &str) -> Result<Vec<QuerySolution>, Failure> {
    match run(client, text, false, Duration::from_secs(300), usize::MAX).await? {
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
        assert!(matches!(parse_results(ask), Ok(Answer::Boolean(true))));
        let select = br#"{ "head": { "link": [], "vars": ["g", "n"] },
  "results": { "distinct": false, "ordered": true, "bindings": [
    { "g": { "type": "uri", "value": "urn:g1" }	, "n": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#decimal", "value": "1.5" }} ] } }"#;
        let Ok(Answer::Solutions { variables, rows }) = parse_results(select) else {
            panic!("solutions expected")
        };
        assert_eq!(variables.len(), 2);
        assert_eq!(
            rows[0].get("n").unwrap().to_string(),
            "\"1.5\"^^<http://www.w3.org/2001/XMLSchema#decimal>"
        );
    }
}
