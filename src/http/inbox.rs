//! `POST /supply-chain/data-space/inbox` and `GET /supply-chain/data-space/activity-logs/{id}`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::extract::{Body, PathParams};
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::node::Node;

pub const LOGS: &str = "/supply-chain/data-space/activity-logs";

/// `Prefer: handling=strict` turns a failed task into a 422.
fn strict(headers: &HeaderMap) -> bool {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim().eq_ignore_ascii_case("handling=strict"))
}

pub async fn post(
    State(node): State<Arc<Node>>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let strict = strict(&headers);
    let worker = node.clone();
    // Expansion, shape checks and the store transaction are CPU and disk work.
    let outcome =
        tokio::task::spawn_blocking(move || worker.intake.process(&caller, &body.0)).await??;
    let status = if strict && outcome.entry.failed() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let t = &outcome.timings;
    let timing = format!(
        "parse;dur={:.3}, expand;dur={:.3}, shapes;dur={:.3}, fetch;dur={:.3}, store;dur={:.3}, route;dur={:.3}",
        t.parse.as_secs_f64() * 1e3,
        t.expand.as_secs_f64() * 1e3,
        t.shapes.as_secs_f64() * 1e3,
        t.fetch.as_secs_f64() * 1e3,
        t.store.as_secs_f64() * 1e3,
        t.route.as_secs_f64() * 1e3,
    );
    let location = format!("{LOGS}/{}", outcome.entry.id);
    let mut response = (status, Json(outcome.entry)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::LOCATION,
        HeaderValue::from_str(&location).map_err(Error::internal)?,
    );
    headers.insert(
        "server-timing",
        HeaderValue::from_str(&timing).map_err(Error::internal)?,
    );
    Ok(response)
}

/// `POST /supply-chain/data-space/inbox/validate`: the inbox's checks, nothing stored.
pub async fn validate(
    State(node): State<Arc<Node>>,
    caller: Caller,
    body: Body,
) -> Result<Json<crate::intake::Validation>> {
    let worker = node.clone();
    // Expansion and shape checks are CPU work, the look-ups of the named consignment store reads.
    let validation =
        tokio::task::spawn_blocking(move || worker.intake.validate(&caller, &body.0)).await??;
    Ok(Json(validation))
}

pub async fn log_entry(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<Response> {
    let worker = node.clone();
    let org = caller.organization.clone();
    let entry = tokio::task::spawn_blocking(move || worker.intake.entry(&org, &id)).await??;
    match entry {
        Some(entry) => Ok(Json(entry).into_response()),
        None => Err(Error::NotFound("no activity log entry with this id".into())),
    }
}
