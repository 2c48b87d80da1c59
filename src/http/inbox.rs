//! `POST /supply-chain/data-space/inbox` and `GET /supply-chain/data-space/activity-logs/{id}`.

use std::sync::Arc;

use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::extract::{Body, PathParams};
use super::reads::{blocking, share};
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::fair::Admitted;
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

/// The organisation's place among its inbox requests in flight (429 when it has them all),
/// taken before the body is read: a body on its way holds a connection and a buffer of up to
/// the body limit, so a party sending many at once is bounded while they arrive, too.
async fn admitted(node: &Arc<Node>, caller: &Caller, request: Request) -> Result<(Admitted, Body)> {
    if caller.operator {
        // The operator account is the node's, no organisation's: it publishes nothing.
        return Err(Error::Forbidden(
            "the operator account publishes nothing: use an organisation's user".into(),
        ));
    }
    let admitted = node.inbox_limit.admit(&caller.organization)?;
    let body = Body::from_request(request, node).await?;
    Ok((admitted, body))
}

/// The activity's `type`, for the metrics (the intake reads the whole body itself).
fn activity_type(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: Option<serde_json::Value>,
    }
    serde_json::from_slice::<Typed>(body)
        .ok()
        .and_then(|t| t.kind)
        .and_then(|k| k.as_str().map(str::to_owned))
        .unwrap_or_default()
}

pub async fn post(
    State(node): State<Arc<Node>>,
    caller: Caller,
    headers: HeaderMap,
    request: Request,
) -> Result<Response> {
    let (_admitted, body) = admitted(&node, &caller, request).await?;
    let strict = strict(&headers);
    let kind = activity_type(&body.0);
    let worker = node.clone();
    // Expansion, shape checks and the store transaction are CPU and disk work.
    let outcome = blocking(share(&node, &caller), move || {
        worker.intake.process(&caller, &body.0)
    })
    .await?;
    let counted = if outcome.entry.failed() {
        "failed"
    } else if outcome.created {
        "applied"
    } else {
        "replayed"
    };
    node.metrics.activity(&kind, counted);
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
    request: Request,
) -> Result<Json<crate::intake::Validation>> {
    let (_admitted, body) = admitted(&node, &caller, request).await?;
    let worker = node.clone();
    // Expansion and shape checks are CPU work, the look-ups of the named consignment store reads.
    let validation = blocking(share(&node, &caller), move || {
        worker.intake.validate(&caller, &body.0)
    })
    .await?;
    Ok(Json(validation))
}

pub async fn log_entry(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<Response> {
    let worker = node.clone();
    let org = caller.organization.clone();
    let entry = blocking(share(&node, &caller), move || {
        worker.intake.entry(&org, &id)
    })
    .await?;
    match entry {
        Some(entry) => Ok(Json(entry).into_response()),
        None => Err(Error::NotFound("no activity log entry with this id".into())),
    }
}
