//! `/supply-chain/data-space/sparql`: the SPARQL 1.1 Protocol (query operation) — GET with
//! `query=`, POST form-encoded, POST `application/sparql-query`.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use oxigraph::io::{RdfFormat, RdfSerializer};
use oxigraph::sparql::results::{QueryResultsFormat, QueryResultsSerializer};

use super::extract::Body;
use super::negotiate::{negotiate, negotiated};
use super::reads::{blocking, share, Share};
use crate::auth::Caller;
use crate::consignment::Scope;
use crate::error::{Error, Result};
use crate::node::Node;
use crate::replica::{Failure, Outcome, Replica};
use crate::sparql::{threads, Answer, Form, Protocol, Sparql};

/// SELECT / ASK results; the first is the default.
const RESULTS: &[(&str, Form)] = &[
    ("application/sparql-results+json", Form::Results),
    ("application/sparql-results+xml", Form::Results),
    ("text/csv", Form::Results),
    ("text/tab-separated-values", Form::Results),
    ("application/json", Form::Results),
];

/// CONSTRUCT / DESCRIBE graphs; the first is the default.
const GRAPHS: &[(&str, Form)] = &[
    ("text/turtle", Form::Graph),
    ("application/n-triples", Form::Graph),
    ("application/n-quads", Form::Graph),
    ("application/ld+json", Form::Graph),
    ("application/rdf+xml", Form::Graph),
];

pub async fn get(
    State(node): State<Arc<Node>>,
    caller: Caller,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let params = pairs(raw.as_deref().unwrap_or("").as_bytes());
    let query = single(&params, "query")?
        .ok_or_else(|| Error::invalid_field("query", "the query parameter is required"))?;
    let answered = answer(node.clone(), caller, &headers, &params, query).await;
    tally(&node, answered)
}

pub async fn post(
    State(node): State<Arc<Node>>,
    caller: Caller,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> Result<Response> {
    let mut params = pairs(raw.as_deref().unwrap_or("").as_bytes());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let query = match content_type.as_str() {
        "application/sparql-query" => {
            if single(&params, "query")?.is_some() {
                return Err(Error::invalid_field(
                    "query",
                    "a query sent as the body must not also be a parameter",
                ));
            }
            String::from_utf8(body.0.to_vec())
                .map_err(|_| Error::invalid_field("query", "the query is not UTF-8"))?
        }
        "application/x-www-form-urlencoded" => {
            params.extend(pairs(&body.0));
            single(&params, "query")?
                .ok_or_else(|| Error::invalid_field("query", "the query parameter is required"))?
        }
        "application/sparql-update" => return Err(read_only()),
        other => {
            return Err(Error::bad_request(format!(
                "POST takes application/sparql-query or application/x-www-form-urlencoded, not {other:?}"
            )))
        }
    };
    let answered = answer(node.clone(), caller, &headers, &params, query).await;
    tally(&node, answered)
}

/// The query counted for `/metrics`: who answered, and how it ended.
fn tally(node: &Node, answered: Result<Response>) -> Result<Response> {
    let (source, outcome) = match &answered {
        Ok(r) => (
            r.headers()
                .get("sparql-source")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("store")
                .to_owned(),
            "ok",
        ),
        Err(e) => {
            let said = e.to_string();
            let outcome = match e {
                Error::TooManyRequests { .. } => "429",
                Error::Unavailable(_) if said.contains("time limit") => "timeout",
                Error::BadRequest { .. }
                    if said.contains("more than") || said.contains("limit") =>
                {
                    "limit"
                }
                _ => "error",
            };
            ("store".to_owned(), outcome)
        }
    };
    node.metrics.sparql(&source, outcome);
    answered
}

fn read_only() -> Error {
    Error::Forbidden("this endpoint answers queries only; SPARQL Update is not accepted".into())
}

fn pairs(bytes: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

fn single(params: &[(String, String)], name: &str) -> Result<Option<String>> {
    let mut values = params.iter().filter(|(k, _)| k == name).map(|(_, v)| v);
    let first = values.next().cloned();
    if values.next().is_some() {
        return Err(Error::invalid_field(
            name,
            format!("{name} is given more than once"),
        ));
    }
    Ok(first)
}

async fn answer(
    node: Arc<Node>,
    caller: Caller,
    headers: &HeaderMap,
    params: &[(String, String)],
    query: String,
) -> Result<Response> {
    if params.iter().any(|(k, _)| k == "update") {
        return Err(read_only());
    }
    let scope = Scope::parse(single(params, "scope")?.as_deref())?;
    let mut protocol = Protocol {
        default_graphs: all(params, "default-graph-uri"),
        named_graphs: all(params, "named-graph-uri"),
    };
    // A place among the running queries, held by the evaluation itself (see `Permit`) —
    // taken before parsing, which costs memory with the query's size (a 9 MB VALUES block
    // took 1.5 GB), so that the limits count it too.
    let permit = node.sparql.admit(&caller.organization)?;
    // Parsing and everything after it recurse with the query's nesting: on a thread with
    // the stack for it (`sparql::threads`).
    // The permit goes with the work and comes back: a client gone before the answer (its
    // future dropped) leaves the thread running, still counted.
    let (parsed, mut permit) = threads::run(move || (Sparql::parse(&query), permit)).await?;
    let mut parsed = parsed?;
    let offers = match parsed.form {
        Form::Results => RESULTS,
        Form::Graph => GRAPHS,
    };
    let (media_type, _) = negotiate(headers, offers)?;
    let lag = node.sparql.replica().map(|r| r.lag_ms());
    let on_replica_path = |r: &&Arc<Replica>| {
        r.usable_for(&caller.organization) && crate::sparql::replica_answers_alike(&parsed)
    };
    let from_replica = match node.sparql.replica().filter(on_replica_path) {
        Some(replica) => {
            let (text, back) = {
                let (node, caller) = (node.clone(), caller.clone());
                threads::run(move || {
                    let text = node.sparql.portable(&caller, scope, &parsed, &protocol);
                    (text, (parsed, protocol, permit))
                })
                .await?
            };
            (parsed, protocol, permit) = back;
            let share = share(&node, &caller);
            on_replica(&node, share, replica, &text?, parsed.form, media_type).await?
        }
        None => None,
    };
    let (bytes, source) = match from_replica {
        Some(bytes) => (bytes, "replica"),
        None => (
            on_store(&node, permit, caller, scope, parsed, protocol, media_type).await?,
            "store",
        ),
    };
    let mut response = negotiated(media_type, bytes);
    let headers = response.headers_mut();
    headers.insert("sparql-source", HeaderValue::from_static(source));
    if let Some(lag) = lag {
        headers.insert("replica-lag-ms", HeaderValue::from(lag));
    }
    Ok(response)
}

/// The answer from the replica, serialised; `None` when the replica failed (the store
/// answers then). Its time limit and row cap are the store's.
async fn on_replica(
    node: &Node,
    share: Share,
    replica: &Replica,
    text: &str,
    form: Form,
    media_type: &'static str,
) -> Result<Option<Vec<u8>>> {
    let cap = node.sparql.max_rows();
    let timeout = node.sparql.timeout();
    match replica.query(text, form == Form::Graph, timeout, cap).await {
        // Serialising a large answer is CPU work.
        Ok(Outcome::Answer(answer)) => Ok(Some(
            blocking(share, move || serialize(answer, media_type)).await?,
        )),
        Ok(Outcome::TooMany) => Err(crate::sparql::too_many(cap)),
        Err(Failure::TimedOut) => Err(crate::sparql::timed_out()),
        Err(_) => Ok(None),
    }
}

async fn on_store(
    node: &Arc<Node>,
    permit: crate::sparql::Permit,
    caller: Caller,
    scope: Scope,
    parsed: crate::sparql::Parsed,
    protocol: Protocol,
    media_type: &'static str,
) -> Result<Vec<u8>> {
    // The time limit: the caller is answered when it passes, and the token stops the
    // evaluation (at its next store read, or its next solution: `sparql::guard`).
    let cancel = permit.token.clone();
    let stop = cancel.clone();
    // Evaluation and serialisation are store reads and CPU work: they take a slot of the
    // caller's share of the blocking work, though they run on the endpoint's own threads.
    let worker = node.clone();
    let runtime = tokio::runtime::Handle::current();
    let share = share(node, &caller);
    let work = async move {
        let slot = share.slot().await;
        threads::run(move || {
            let _held = (permit, slot);
            let started = std::time::Instant::now();
            let answer = worker
                .sparql
                .run(&caller, scope, parsed, &protocol, cancel)
                .and_then(|answer| serialize(answer, media_type));
            // An analyst's aggregate can hold hundreds of MB of joins; once it is done, that
            // memory goes back to the OS instead of staying with the allocator. Quick queries
            // hold little, and trimming walks every arena: not after those — and not on the
            // answer's path (a trim takes tens of milliseconds).
            if started.elapsed() >= std::time::Duration::from_millis(200) {
                runtime.spawn_blocking(crate::store::memory::release_free);
            }
            answer
        })
        .await
    };
    let mut closing = node.closing.subscribe();
    tokio::select! {
        done = work => done?,
        () = tokio::time::sleep(node.sparql.timeout()) => {
            stop.cancel();
            Err(crate::sparql::timed_out())
        }
        _ = closing.wait_for(|closed| *closed) => {
            stop.cancel();
            Err(Error::Unavailable("the node is shutting down".into()))
        }
    }
}

fn all(params: &[(String, String)], name: &str) -> Vec<String> {
    params
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .collect()
}

fn serialize(answer: Answer, media_type: &str) -> Result<Vec<u8>> {
    // Written to memory, a serialiser fails only on what the format cannot express: the
    // answer, not the node, is at fault, and another format would do.
    let io = |e: std::io::Error| {
        Error::NotAcceptable(format!(
            "the answer cannot be written as {media_type} ({e}); ask for another format"
        ))
    };
    match answer {
        Answer::Solutions { variables, rows } => {
            let format =
                QueryResultsFormat::from_media_type(media_type).unwrap_or(QueryResultsFormat::Json);
            let mut out = QueryResultsSerializer::from_format(format)
                .serialize_solutions_to_writer(Vec::new(), variables)
                .map_err(io)?;
            for row in &rows {
                out.serialize(row).map_err(io)?;
            }
            out.finish().map_err(io)
        }
        Answer::Boolean(value) => {
            let format =
                QueryResultsFormat::from_media_type(media_type).unwrap_or(QueryResultsFormat::Json);
            QueryResultsSerializer::from_format(format)
                .serialize_boolean_to_writer(Vec::new(), value)
                .map_err(io)
        }
        Answer::Graph(triples) => {
            let format = RdfFormat::from_media_type(media_type).unwrap_or(RdfFormat::Turtle);
            if format == RdfFormat::RdfXml {
                // Oxigraph writes a predicate without an XML local name as `<oxprefix:>`,
                // which is not XML.
                if let Some(t) = triples
                    .iter()
                    .find(|t| !has_local_name(t.predicate.as_str()))
                {
                    return Err(Error::NotAcceptable(format!(
                        "RDF/XML cannot write the predicate <{}> (it ends without an XML name); \
                         ask for text/turtle or application/n-triples",
                        t.predicate.as_str()
                    )));
                }
            }
            let mut out = RdfSerializer::from_format(format).for_writer(Vec::new());
            for t in &triples {
                out.serialize_triple(t).map_err(io)?;
            }
            out.finish().map_err(io)
        }
    }
}

/// Whether an IRI ends in an XML name RDF/XML can write it with (as Oxigraph splits it: after
/// the last character that cannot be in a name, from the first that can start one).
fn has_local_name(iri: &str) -> bool {
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '\u{b7}');
    let tail = match iri.rfind(|c: char| !name_char(c)) {
        Some(i) => &iri[i..],
        None => iri,
    };
    tail.chars().any(|c| c.is_alphabetic() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::has_local_name;

    #[test]
    fn rdf_xml_writes_predicates_that_end_in_a_name() {
        assert!(has_local_name("https://vocabulary.uncefact.org/globalId"));
        assert!(has_local_name("http://ex.org/ns#p_1"));
        assert!(!has_local_name("http://ex.org/p/"));
        assert!(!has_local_name("http://ex.org/ns#"));
        assert!(!has_local_name("urn:x:123"));
    }
}
