//! The Dataspace Protocol 2025-1 endpoints (`/.well-known/dspace-version`, and under
//! `identity::DSP_PATH` the catalog). Their failures answer the protocol's error bodies, not the
//! node API's: `CatalogError {@context, @type, code, reason}` with the same statuses.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use super::extract::{Body, PathParams, QueryParams};
use super::reads::{blocking, org_share};
use crate::consignment::parse_limit;
use crate::dsp::message::error_body;
use crate::error::Error;
use crate::node::Node;

type Params = QueryParams<HashMap<String, String>>;

/// An error as the protocol answers it in `kind`'s area: the status the node API would give,
/// the message as the reason (a generic one for the node's own failures, which are logged).
fn dsp_error(kind: &str, error: Error) -> Response {
    let reason = error.to_string();
    let status = error.into_response().status();
    let reason = if status.is_server_error() {
        "the node could not answer; try again later".to_owned()
    } else {
        reason
    };
    (status, Json(error_body(kind, status.as_u16(), &reason))).into_response()
}

fn authorization(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

/// `GET /.well-known/dspace-version`: no credentials.
pub async fn versions(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(node.dsp.versions())
}

/// `POST <dsp>/catalog/request` (`?cursor=` for the pages after the first, as the `Link`
/// header of the previous one names them).
pub async fn catalog(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    QueryParams(params): Params,
    body: Body,
) -> Response {
    const KIND: &str = "CatalogError";
    let participant = match node.dsp.participant(authorization(&headers)).await {
        Ok(p) => p,
        Err(e) => return dsp_error(KIND, e),
    };
    let request: Value = match serde_json::from_slice(&body.0) {
        Ok(v) => v,
        Err(e) => return dsp_error(KIND, Error::bad_request(format!("not JSON: {e}"))),
    };
    let limit = match parse_limit(params.get("limit").map(String::as_str)) {
        Ok(l) => l,
        Err(e) => return dsp_error(KIND, e),
    };
    let after = params.get("cursor").cloned();
    let reading = node.clone();
    let who = participant.clone();
    let page = blocking(org_share(&node, &participant), move || {
        reading.dsp.catalog(&who, &request, after.as_deref(), limit)
    })
    .await;
    let page = match page {
        Ok(p) => p,
        Err(e) => return dsp_error(KIND, e),
    };
    let mut response = Json(page.catalog).into_response();
    if let Some(next) = page.next {
        let link = format!(
            "<{}/catalog/request?cursor={next}&limit={limit}>; rel=\"next\"",
            node.identity.dsp_base()
        );
        if let Ok(value) = HeaderValue::from_str(&link) {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    response
}

/// `GET <dsp>/catalog/datasets/{id}`
pub async fn dataset(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(id): PathParams<String>,
) -> Response {
    const KIND: &str = "CatalogError";
    let participant = match node.dsp.participant(authorization(&headers)).await {
        Ok(p) => p,
        Err(e) => return dsp_error(KIND, e),
    };
    let reading = node.clone();
    let who = participant.clone();
    match blocking(org_share(&node, &participant), move || {
        reading.dsp.dataset(&who, &id)
    })
    .await
    {
        Ok(d) => (StatusCode::OK, Json(d)).into_response(),
        Err(e) => dsp_error(KIND, e),
    }
}
