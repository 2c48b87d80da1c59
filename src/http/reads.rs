//! The read endpoints of `/supply-chain/data-space`: consignments, events, documents.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use oxigraph::io::RdfFormat;
use serde_json::{json, Value};

use super::extract::{PathParams, QueryParams};
use super::negotiate::{negotiate, negotiated};
use crate::auth::Caller;
use crate::documents::LinkUse;
use crate::error::Result;
use crate::node::Node;
use crate::views::linked::Linked;
use crate::views::{parse_limit, Page, Scope};

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
) -> Result<Json<Value>> {
    let (scope, limit, cursor) = list_params(&params)?;
    let page = blocking(move || node.views.list(&caller, scope, limit, cursor.as_deref())).await?;
    Ok(page_body(page))
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
    let scope = scope(&params)?;
    let (media_type, linked) = negotiate(&headers, VIEW)?;
    Ok(match linked {
        None => {
            let view = blocking(move || node.views.view(&caller, scope, &id)).await?;
            negotiated(media_type, Json(view))
        }
        Some(format) => negotiated(
            media_type,
            blocking(move || node.views.linked(&caller, scope, &id, format)).await?,
        ),
    })
}

pub async fn events(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let scope = scope(&params)?;
    entities(blocking(move || node.views.events(&caller, scope, &id)).await?)
}

pub async fn documents(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let scope = scope(&params)?;
    entities(blocking(move || node.views.documents(&caller, scope, &id, LinkUse::List)).await?)
}

/// A list answer: `{entities, cursor?}`, the cursor only when more rows exist.
pub(super) fn page_body(page: Page) -> Json<Value> {
    let mut body = json!({ "entities": page.entities });
    if let Some(c) = page.cursor {
        body["cursor"] = json!(c);
    }
    Json(body)
}

fn entities(items: Vec<Value>) -> Result<Json<Value>> {
    Ok(Json(json!({ "entities": items })))
}

pub async fn document(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams((id, document_id)): PathParams<(String, String)>,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
    let scope = scope(&params)?;
    Ok(Json(
        blocking(move || node.views.document(&caller, scope, &id, &document_id)).await?,
    ))
}

pub async fn all_documents(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Json<Value>> {
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
