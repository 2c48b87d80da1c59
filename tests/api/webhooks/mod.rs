//! Webhook subscriptions and their deliveries, through the HTTP API.

mod crash;
mod delivery;
mod receiver;
mod subscriptions;

use reqwest::{Method, Response};
use serde_json::Value;

use crate::common::*;

pub const SUBSCRIPTIONS: &str = "/supply-chain/data-space/subscriptions";

/// `method path` as `who` (its organisation's key and its session), with a JSON body.
pub async fn call(
    node: &TestNode,
    who: &Session,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let mut request = node
        .client
        .request(method, node.url(path))
        .header("x-api-key", &who.account.api_key)
        .header("cookie", format!("access_token={}", who.token));
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.unwrap()
}

/// A subscription of `who`'s organisation to `url`; the answer (with its secret).
pub async fn subscribe(node: &TestNode, who: &Session, body: Value) -> Value {
    let r = call(node, who, Method::POST, SUBSCRIPTIONS, Some(&body)).await;
    assert_eq!(r.status(), 201, "{body}");
    json_body(r).await
}
