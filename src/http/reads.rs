//! The read endpoints of `/supply-chain/data-space`: consignments, events, documents.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, FixedOffset};
use oxigraph::io::RdfFormat;
use serde_json::Value;

use super::extract::{PathParams, QueryParams};
use super::negotiate::{negotiate, negotiated};
use crate::auth::Caller;
use crate::consignment::{parse_limit, Page, Scope};
use crate::documents::LinkUse;
use crate::error::Result;
use crate::node::Node;
use crate::views::linked::Linked;
use crate::views::{parse_at, pick_document, Description, Read};

type Params = QueryParams<HashMap<String, String>>;

fn scope(params: &HashMap<String, String>) -> Result<Scope> {
    Scope::parse(params.get("scope").map(String::as_str))
}

/// `limit` and `cursor` of any paged read.
pub(super) fn paging(params: &HashMap<String, String>) -> Result<(usize, Option<String>)> {
    Ok((
        parse_limit(params.get("limit").map(String::as_str))?,
        params.get("cursor").cloned(),
    ))
}

/// `scope`, `limit` and `cursor` of a list read.
fn list_params(params: &HashMap<String, String>) -> Result<(Scope, usize, Option<String>)> {
    let (limit, cursor) = paging(params)?;
    Ok((scope(params)?, limit, cursor))
}

/// Runs a blocking read on the blocking pool: SPARQL over RocksDB does disk work.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f).await?
}

pub async fn list(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Response> {
    let (scope, limit, cursor) = list_params(&params)?;
    let org = caller.organization.clone();
    let reading = node.clone();
    let mut plan =
        blocking(move || reading.views.list(&caller, scope, limit, cursor.as_deref())).await?;
    // A round per partner node that fails a pull, at most: its rows are not pulled again.
    loop {
        let pulled = node.federation.pull(&org, &plan.remote()).await;
        node.views.fill(&mut plan, pulled);
        if !plan.wants_more() {
            break;
        }
        let reading = node.clone();
        plan = blocking(move || reading.views.list_more(&mut plan).map(|()| plan)).await?;
    }
    Ok(page_body(node.views.finish_list(plan)))
}

/// `?at=`, when given: the instant a read answers for.
fn at(params: &HashMap<String, String>) -> Result<Option<DateTime<FixedOffset>>> {
    params.get("at").map(|raw| parse_at(raw)).transpose()
}

/// One consignment as this node holds it (now, or as it stood at `?at=`), joined with the
/// partner datasets the caller may read (pulled in parallel; one that does not answer in time
/// is left out; none for a point-in-time read).
async fn read(
    node: &Arc<Node>,
    caller: Caller,
    params: &HashMap<String, String>,
    id: String,
    description: Description,
) -> Result<Read> {
    let scope = scope(params)?;
    let at = at(params)?;
    let org = caller.organization.clone();
    let reading = node.clone();
    let mut read = blocking(move || match at {
        Some(at) => reading.views.read_at(&caller, scope, &id, at),
        None => reading.views.read(&caller, scope, &id, description),
    })
    .await?;
    let pulled = node.federation.pull(&org, read.remote()).await;
    node.views.join(&mut read, pulled)?;
    Ok(read)
}

/// The representations of one consignment: the REST view first (the default), then linked
/// data.
const VIEW: &[(&str, Option<Linked>)] = &[
    ("application/json", None),
    ("application/ld+json", Some(Linked::JsonLd)),
    ("text/turtle", Some(Linked::Rdf(RdfFormat::Turtle))),
    (
        "application/n-triples",
        Some(Linked::Rdf(RdfFormat::NTriples)),
    ),
    ("application/n-quads", Some(Linked::Rdf(RdfFormat::NQuads))),
    ("application/trig", Some(Linked::Rdf(RdfFormat::TriG))),
];

pub async fn view(
    State(node): State<Arc<Node>>,
    caller: Caller,
    headers: HeaderMap,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Response> {
    let (media_type, linked) = negotiate(&headers, VIEW)?;
    Ok(match linked {
        None => {
            let read = read(&node, caller, &params, id, Description::Read).await?;
            negotiated(media_type, Json(node.views.render_view(&read)))
        }
        Some(format) => {
            let (scope, at) = (scope(&params)?, at(&params)?);
            negotiated(
                media_type,
                blocking(move || node.views.linked(&caller, scope, &id, format, at)).await?,
            )
        }
    })
}

pub async fn events(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let read = read(&node, caller, &params, id, Description::Skip).await?;
    entities(node.views.render_events(&read))
}

pub async fn documents(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let org = caller.organization.clone();
    let read = read(&node, caller, &params, id, Description::Skip).await?;
    entities(node.views.render_documents(&read, &org, LinkUse::List))
}

/// A list answer: `{entities, cursor?, warnings?}`, the cursor only when more rows exist;
/// written as text ([`Page::to_json`]) so that cached list rows go in as they are kept.
pub(super) fn page_body(page: Page) -> Response {
    let content_type = [(header::CONTENT_TYPE, "application/json")];
    (content_type, page.to_json()).into_response()
}

fn entities(items: Vec<Value>) -> Result<Json<Value>> {
    let mut body = serde_json::Map::new();
    body.insert("entities".into(), Value::Array(items));
    Ok(Json(Value::Object(body)))
}

pub async fn document(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams((id, document_id)): PathParams<(String, String)>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let org = caller.organization.clone();
    let read = read(&node, caller, &params, id, Description::Skip).await?;
    let documents = node.views.render_documents(&read, &org, LinkUse::Single);
    Ok(Json(pick_document(documents, &document_id)?))
}

pub async fn all_documents(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Response> {
    let (scope, limit, cursor) = list_params(&params)?;
    let consignment = params.get("consignmentId").cloned();
    let page = blocking(move || {
        node.views.all_documents(
            &caller,
            scope,
            limit,
            cursor.as_deref(),
            consignment.as_deref(),
        )
    })
    .await?;
    Ok(page_body(page))
}

pub async fn find_document(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(document_id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let scope = scope(&params)?;
    let consignment = params.get("consignmentId").cloned();
    Ok(Json(
        blocking(move || {
            node.views
                .find_document(&caller, scope, &document_id, consignment.as_deref())
        })
        .await?,
    ))
}

/// `GET /consignments/{id}/history`: its revisions, newest first, paged.
pub async fn history(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Response> {
    let (scope, limit, cursor) = list_params(&params)?;
    let page = blocking(move || {
        node.views
            .history(&caller, scope, &id, limit, cursor.as_deref())
    })
    .await?;
    Ok(page_body(page))
}

/// `GET /consignments/{id}/history/{revision}`: one revision, with the description it sent.
pub async fn revision(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams((id, revision)): PathParams<(String, String)>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let scope = scope(&params)?;
    Ok(Json(
        blocking(move || node.views.revision(&caller, scope, &id, &revision)).await?,
    ))
}
