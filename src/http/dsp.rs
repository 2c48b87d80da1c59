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

use oxigraph::io::RdfFormat;

use super::extract::{Body, PathParams, QueryParams};
use super::negotiate::{negotiate, negotiated};
use super::reads::{blocking, org_share};
use crate::consignment::{parse_limit, Scope};
use crate::dsp::message::error_body;
use crate::dsp::Dsp;
use crate::error::{Error, Result};
use crate::node::Node;
use crate::views::linked::Linked;

type Params = QueryParams<HashMap<String, String>>;

/// An error as the protocol answers it in `kind`'s area: the status the node API would give,
/// the message as the reason (a generic one for the node's own failures, which are logged).
fn dsp_error(kind: &str, error: Error) -> Response {
    dsp_error_about(kind, error, None)
}

/// The same, for a process: its pids as far as known (the negotiation and transfer error
/// bodies require both; an unknown one is empty).
fn dsp_error_about(kind: &str, error: Error, pids: Option<(&str, &str)>) -> Response {
    let reason = error.to_string();
    let status = error.into_response().status();
    let reason = if status.is_server_error() {
        "the node could not answer; try again later".to_owned()
    } else {
        reason
    };
    let mut body = error_body(kind, status.as_u16(), &reason);
    if let Some((provider, consumer)) = pids {
        body["providerPid"] = Value::from(provider);
        body["consumerPid"] = Value::from(consumer);
    }
    (status, Json(body)).into_response()
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

/// What a negotiation or transfer handler does once the participant is known, off the async
/// threads: the status and body to answer (`None`: no body).
type Work = Box<dyn FnOnce(&Dsp, &str, &Value) -> Result<(StatusCode, Option<Value>)> + Send>;

/// Runs `work` for the participant of the request with its JSON body (`Value::Null` for a
/// GET), answering failures as `kind` about provider pid `pid`.
async fn process_call(
    node: Arc<Node>,
    headers: &HeaderMap,
    kind: &'static str,
    pid: &str,
    body: Option<Body>,
    work: Work,
) -> Response {
    let message: Value = match body.map(|b| serde_json::from_slice::<Value>(&b.0)) {
        None => Value::Null,
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            let e = Error::bad_request(format!("not JSON: {e}"));
            return dsp_error_about(kind, e, Some((pid, "")));
        }
    };
    let consumer = message["consumerPid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let participant = match node.dsp.participant(authorization(headers)).await {
        Ok(p) => p,
        Err(e) => return dsp_error_about(kind, e, Some((pid, &consumer))),
    };
    let worker = node.clone();
    let who = participant.clone();
    let done = blocking(org_share(&node, &participant), move || {
        work(&worker.dsp, &who, &message)
    })
    .await;
    match done {
        Ok((status, Some(body))) => (status, Json(body)).into_response(),
        Ok((status, None)) => status.into_response(),
        Err(e) => dsp_error_about(kind, e, Some((pid, &consumer))),
    }
}

const NEGOTIATION: &str = "ContractNegotiationError";

/// `GET <dsp>/negotiations/{providerPid}`
pub async fn negotiation(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(pid): PathParams<String>,
) -> Response {
    let id = pid.clone();
    let work: Work =
        Box::new(move |dsp, who, _| Ok((StatusCode::OK, Some(dsp.negotiation(who, &id)?))));
    process_call(node, &headers, NEGOTIATION, &pid, None, work).await
}

/// `POST <dsp>/negotiations/request`: 201 `ContractNegotiation`, `REQUESTED`.
pub async fn request_negotiation(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let work: Work =
        Box::new(|dsp, who, m| Ok((StatusCode::CREATED, Some(dsp.request_negotiation(who, m)?))));
    process_call(node, &headers, NEGOTIATION, "", Some(body), work).await
}

/// `POST <dsp>/negotiations/{providerPid}/<step>`: `request` (a counter-request), `events`,
/// `agreement/verification`, `termination`.
async fn negotiation_step(
    node: Arc<Node>,
    headers: HeaderMap,
    pid: String,
    body: Body,
    step: &'static str,
) -> Response {
    let id = pid.clone();
    let work: Work = Box::new(move |dsp, who, m| {
        match step {
            "verification" => dsp.verify_agreement(who, &id, m)?,
            "termination" => dsp.terminate_negotiation(who, &id, m)?,
            "request" => dsp.negotiation_out_of_order(who, &id, m, "ContractRequestMessage")?,
            _ => dsp.negotiation_out_of_order(who, &id, m, "ContractNegotiationEventMessage")?,
        }
        Ok((StatusCode::OK, None))
    });
    process_call(node, &headers, NEGOTIATION, &pid, Some(body), work).await
}

pub async fn counter_request(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(pid): PathParams<String>,
    body: Body,
) -> Response {
    negotiation_step(node, headers, pid, body, "request").await
}

pub async fn negotiation_event(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(pid): PathParams<String>,
    body: Body,
) -> Response {
    negotiation_step(node, headers, pid, body, "events").await
}

pub async fn verify_agreement(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(pid): PathParams<String>,
    body: Body,
) -> Response {
    negotiation_step(node, headers, pid, body, "verification").await
}

pub async fn terminate_negotiation(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(pid): PathParams<String>,
    body: Body,
) -> Response {
    negotiation_step(node, headers, pid, body, "termination").await
}

const TRANSFER: &str = "TransferError";

/// `GET <dsp>/transfers/{providerPid}`
pub async fn transfer(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(pid): PathParams<String>,
) -> Response {
    let id = pid.clone();
    let work: Work =
        Box::new(move |dsp, who, _| Ok((StatusCode::OK, Some(dsp.transfer(who, &id)?))));
    process_call(node, &headers, TRANSFER, &pid, None, work).await
}

/// `POST <dsp>/transfers/request`: 201 `TransferProcess`, `REQUESTED`.
pub async fn request_transfer(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let work: Work =
        Box::new(|dsp, who, m| Ok((StatusCode::CREATED, Some(dsp.request_transfer(who, m)?))));
    process_call(node, &headers, TRANSFER, "", Some(body), work).await
}

/// `POST <dsp>/transfers/{providerPid}/{start|completion|suspension|termination}`
pub async fn transfer_step(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams((pid, step)): PathParams<(String, String)>,
    body: Body,
) -> Response {
    if !["start", "completion", "suspension", "termination"].contains(&step.as_str()) {
        let e = Error::NotFound(format!("no transfer step {step}"));
        return dsp_error_about(TRANSFER, e, Some((&pid, "")));
    }
    let id = pid.clone();
    let work: Work = Box::new(move |dsp, who, m| {
        dsp.transfer_step(who, &id, &step, m)?;
        Ok((StatusCode::OK, None))
    });
    process_call(node, &headers, TRANSFER, &pid, Some(body), work).await
}

/// The forms a pull answers in: JSON-LD first (the default), then the other RDF syntaxes.
const PULL: &[(&str, Linked)] = &[
    ("application/ld+json", Linked::JsonLd),
    ("text/turtle", Linked::Rdf(RdfFormat::Turtle)),
    ("application/n-triples", Linked::Rdf(RdfFormat::NTriples)),
    ("application/n-quads", Linked::Rdf(RdfFormat::NQuads)),
    ("application/trig", Linked::Rdf(RdfFormat::TriG)),
];

/// `GET <dsp>/data/{transfer}` with the transfer's bearer token: the agreed consignment as the
/// participant's organisation reads it as linked data.
pub async fn pull(
    State(node): State<Arc<Node>>,
    headers: HeaderMap,
    PathParams(uuid): PathParams<String>,
) -> Result<Response> {
    let (media_type, format) = negotiate(&headers, PULL)?;
    let token = authorization(&headers)
        .and_then(|a| a.strip_prefix("Bearer "))
        .ok_or_else(|| Error::Unauthorized("the transfer's bearer token is required".into()))?
        .trim()
        .to_owned();
    let checking = node.clone();
    let (participant, hex) =
        tokio::task::spawn_blocking(move || checking.dsp.pull_target(&uuid, &token)).await??;
    let reading = node.clone();
    let who = participant.clone();
    let bytes = blocking(org_share(&node, &participant), move || {
        let caller = crate::auth::Caller::acting_for(String::new(), who);
        let id = format!("aig:{hex}");
        reading.views.linked(&caller, Scope::All, &id, format, None)
    })
    .await?;
    Ok(negotiated(media_type, bytes))
}

/// `GET /supply-chain/data-space/transfers`: the Dataspace Protocol transfers of the caller
/// organisation's consignments (it is their provider).
pub async fn provided_transfers(
    State(node): State<Arc<Node>>,
    caller: crate::auth::Caller,
) -> Result<Json<Value>> {
    let worker = node.clone();
    let org = caller.organization.clone();
    let list = blocking(super::reads::share(&node, &caller), move || {
        worker.dsp.provided_transfers(&org)
    })
    .await?;
    Ok(Json(serde_json::json!({"entities": list})))
}

/// `POST /supply-chain/data-space/transfers/{pid}/{suspend|resume|complete|terminate}`: the
/// publisher's own change of a transfer of its consignment; the consumer is told.
pub async fn provider_step(
    State(node): State<Arc<Node>>,
    caller: crate::auth::Caller,
    PathParams((pid, step)): PathParams<(String, String)>,
) -> Result<Json<Value>> {
    if !["suspend", "resume", "complete", "terminate"].contains(&step.as_str()) {
        return Err(Error::NotFound(format!(
            "no transfer step {step}: suspend, resume, complete or terminate"
        )));
    }
    let worker = node.clone();
    let org = caller.organization.clone();
    let done = blocking(super::reads::share(&node, &caller), move || {
        worker.dsp.provider_step(&org, &pid, &step)
    })
    .await?;
    Ok(Json(done))
}
