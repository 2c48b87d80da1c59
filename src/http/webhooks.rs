//! Webhook subscriptions (`/subscriptions`): each organisation manages its own.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use super::extract::{Body, PathParams, QueryParams};
use super::reads::{blocking, page_body, paging, share};
use crate::auth::Caller;
use crate::error::Result;
use crate::node::Node;

type Params = QueryParams<HashMap<String, String>>;

pub async fn create(
    State(node): State<Arc<Node>>,
    caller: Caller,
    body: Body,
) -> Result<impl IntoResponse> {
    let body = body.json_object()?;
    let org = caller.organization.clone();
    let created = blocking(share(&node, &caller), move || {
        node.webhooks.create(&org, &body)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

pub async fn list(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Response> {
    let (limit, cursor) = paging(&params)?;
    let page = node
        .webhooks
        .page(&caller.organization, limit, cursor.as_deref())?;
    Ok(page_body(page))
}

pub async fn read(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<Json<Value>> {
    Ok(Json(
        node.webhooks.owned(&caller.organization, &id)?.public(),
    ))
}

pub async fn change(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    body: Body,
) -> Result<Json<Value>> {
    let body = body.json_object()?;
    let org = caller.organization.clone();
    let changed = blocking(share(&node, &caller), move || {
        node.webhooks.change(&org, &id, &body)
    })
    .await?;
    Ok(Json(changed))
}

pub async fn delete(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<StatusCode> {
    let org = caller.organization.clone();
    blocking(share(&node, &caller), move || {
        node.webhooks.delete(&org, &id)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn rotate_secret(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<Json<Value>> {
    let org = caller.organization.clone();
    let rotated = blocking(share(&node, &caller), move || {
        node.webhooks.rotate(&org, &id)
    })
    .await?;
    Ok(Json(rotated))
}

pub async fn deliveries(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    QueryParams(params): Params,
) -> Result<Response> {
    let (limit, cursor) = paging(&params)?;
    let org = caller.organization.clone();
    let page = blocking(share(&node, &caller), move || {
        node.webhooks
            .deliveries(&org, &id, limit, cursor.as_deref())
    })
    .await?;
    Ok(page_body(page))
}

pub async fn retry(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams((id, delivery)): PathParams<(String, String)>,
) -> Result<impl IntoResponse> {
    let org = caller.organization.clone();
    let again = blocking(share(&node, &caller), move || {
        node.webhooks.retry(&org, &id, &delivery)
    })
    .await?;
    Ok((StatusCode::ACCEPTED, Json(again)))
}

pub async fn replay(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
    body: Body,
) -> Result<impl IntoResponse> {
    let body = body.json_object()?;
    let org = caller.organization.clone();
    let replayed = blocking(share(&node, &caller), move || {
        node.webhooks.replay(&org, &id, &body)
    })
    .await?;
    Ok((StatusCode::ACCEPTED, Json(replayed)))
}
