//! The endpoints other nodes use: DID documents (public), the federation inbox for notices
//! and the datasets partners pull (both with a node token).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::extract::{Body, PathParams, QueryParams};
use super::reads::{blocking, other_share};
use crate::error::{Error, Result};
use crate::federation::notice;
use crate::federation::token::NodeCaller;
use crate::node::Node;

fn did_json(doc: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/did+json")], Json(doc)).into_response()
}

/// `GET /.well-known/did.json`: the node's DID document.
pub async fn node_document(State(node): State<Arc<Node>>) -> Response {
    did_json(node.federation.document(None))
}

/// `GET /org/{id}/did.json`: an organisation's DID document; 404 for an unknown id.
pub async fn organization_document(
    State(node): State<Arc<Node>>,
    PathParams(id): PathParams<String>,
) -> Result<Response> {
    let did = node.identity.organization_did(&id);
    let reading = node.clone();
    let exists = node.identity.local_organization(&did).is_some()
        && blocking(other_share(&node, None), move || {
            reading.accounts.organization_exists(&did)
        })
        .await?;
    if !exists {
        return Err(Error::NotFound("no such organisation on this node".into()));
    }
    Ok(did_json(node.federation.document(Some(&id))))
}

/// `POST /federation/inbox`: a notice from a partner node (202 when recorded; 429 past the
/// node's notices per minute).
pub async fn inbox(
    State(node): State<Arc<Node>>,
    caller: NodeCaller,
    body: Body,
) -> Result<Response> {
    node.federation.admit_notice(&caller.node)?;
    let body = Value::Object(body.json_object()?);
    let received = notice::parse(&body)?;
    let share = other_share(&node, Some(&caller.node));
    blocking(share, move || node.sharing.receive(&caller, &received)).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"status": "accepted"}))).into_response())
}

/// `GET /federation/datasets?id=`: one contribution, for a partner organisation in its circle.
pub async fn dataset(
    State(node): State<Arc<Node>>,
    caller: NodeCaller,
    QueryParams(params): QueryParams<HashMap<String, String>>,
) -> Result<Json<Value>> {
    let id = params
        .get("id")
        .cloned()
        .ok_or_else(|| Error::invalid_field("id", "required"))?;
    let share = other_share(&node, Some(&caller.node));
    Ok(Json(
        blocking(share, move || node.views.dataset(&caller.organization, &id)).await?,
    ))
}
