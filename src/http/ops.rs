//! Operational endpoints and the fallbacks for unknown routes and methods.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::node::Node;
use crate::vocab::VocabularyForm;

use super::extract::PathParams;
use super::negotiate::{negotiate, negotiated};

/// `GET /health`: 200 when the store answers.
pub async fn health(State(node): State<Arc<Node>>) -> Result<Json<Value>> {
    // One point read in RocksDB's memtable or block cache, on the async thread: through the
    // blocking pool, health would wait behind every queued read when the node is busy, and
    // it must answer precisely then.
    node.store.ping().map_err(|e| {
        tracing::error!(error = %e, "health check: store did not answer");
        Error::Unavailable("the store is not available".into())
    })?;
    Ok(Json(json!({"status": "ok", "dataDirFormat": node.format})))
}

/// The OpenAPI 3.1 document of every endpoint, written by hand next to the router.
const OPENAPI: &str = include_str!("openapi.json");

/// `GET /openapi.json`: needs no credentials.
pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

/// The vocabulary's forms; the first is the default.
const VOCABULARY: &[(&str, VocabularyForm)] = &[
    ("text/turtle", VocabularyForm::Turtle),
    ("application/n-triples", VocabularyForm::NTriples),
    ("application/ld+json", VocabularyForm::JsonLd),
];

/// `GET /ns`: the node's vocabulary (`https://w3id.org/dataspace-node/ns#`); needs no
/// credentials.
pub async fn vocabulary(State(node): State<Arc<Node>>, headers: HeaderMap) -> Result<Response> {
    let (media_type, form) = negotiate(&headers, VOCABULARY)?;
    Ok(negotiated(
        media_type,
        node.vocabulary.text(form).to_owned(),
    ))
}

/// `GET /shapes/{name}`: the SHACL shapes the inbox validates with, as the node compiled them
/// in; needs no credentials (integrators validate with them before they send anything).
pub async fn shapes(PathParams(name): PathParams<String>) -> Result<Response> {
    let (_, text) = crate::intake::shapes::SOURCES
        .iter()
        .find(|(file, _)| *file == name)
        .ok_or_else(|| Error::NotFound("no shapes file of this name".into()))?;
    Ok((
        [(header::CONTENT_TYPE, "text/turtle; charset=utf-8")],
        *text,
    )
        .into_response())
}

pub async fn not_found() -> Error {
    Error::NotFound("no such endpoint".into())
}

pub async fn method_not_allowed() -> Error {
    Error::MethodNotAllowed
}

/// `GET /metrics`: the Prometheus text format, for the operator's key alone (`x-api-key`, or
/// `Authorization: Bearer` as a scraper sends it).
pub async fn metrics(State(node): State<Arc<Node>>, headers: HeaderMap) -> Result<Response> {
    if !node.metrics.on() {
        return Err(Error::NotFound(
            "metrics are off on this node (--metrics)".into(),
        ));
    }
    let key = headers
        .get("x-api-key")
        .or_else(|| headers.get(header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .map(|v| v.strip_prefix("Bearer ").unwrap_or(v).trim().to_owned());
    if !matches!(
        node.auth.key_holder(key.as_deref())?,
        crate::accounts::KeyHolder::Operator
    ) {
        return Err(Error::Forbidden(
            "metrics are the node operator's: its API key".into(),
        ));
    }
    let reading = node.clone();
    let text = super::reads::blocking(super::reads::other_share(&node, None), move || {
        reading.metrics_now()
    })
    .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// `POST /operations/backups`: a backup taken now, while the node serves (the operator's key
/// and session).
pub async fn take_backup(
    State(node): State<Arc<Node>>,
    caller: crate::auth::Caller,
) -> Result<Response> {
    if !caller.operator {
        return Err(Error::Forbidden("backups are the node operator's".into()));
    }
    let worker = node.clone();
    let started = std::time::Instant::now();
    let manifest =
        super::reads::blocking(super::reads::share(&node, &caller), move || worker.backup())
            .await?;
    tracing::info!(
        backup = manifest.name,
        took_ms = started.elapsed().as_millis() as u64,
        "backup taken"
    );
    Ok((axum::http::StatusCode::CREATED, Json(summary(&manifest))).into_response())
}

/// `GET /operations/backups`: the complete backups, newest first.
pub async fn list_backups(
    State(node): State<Arc<Node>>,
    caller: crate::auth::Caller,
) -> Result<Json<Value>> {
    if !caller.operator {
        return Err(Error::Forbidden("backups are the node operator's".into()));
    }
    let reading = node.clone();
    let all = super::reads::blocking(super::reads::share(&node, &caller), move || {
        reading.backups()
    })
    .await?;
    Ok(Json(
        json!({"entities": all.iter().map(summary).collect::<Vec<_>>()}),
    ))
}

fn summary(m: &crate::backups::Manifest) -> Value {
    json!({"name": m.name, "created": m.created, "nodeVersion": m.node_version,
           "dataDirFormat": m.data_dir_format, "quads": m.quads, "digest": m.digest,
           "files": m.files.len(),
           "bytes": m.bytes})
}
