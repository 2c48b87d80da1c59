//! The HTTP figures of `/metrics`: each answered request counted by method, route template
//! and status, its time to the answer's headers observed.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::node::Node;

/// A route layer: it runs once the router matched, so the template is known.
pub async fn counted(State(node): State<Arc<Node>>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    // A label value per method a client invents would grow the series without bound.
    let method = match request.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS") => m.to_owned(),
        _ => "other".to_owned(),
    };
    let started = Instant::now();
    let response = next.run(request).await;
    node.metrics.request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}
