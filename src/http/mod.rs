//! HTTP adapter: routes, extractors and the error mapping. Handlers only translate between
//! HTTP and the domain modules; they hold no rules of their own.

mod accounts;
mod console;
mod documents;
mod dsp;
pub mod error;
pub mod extract;
mod federation;
mod inbox;
mod metrics;
mod negotiate;
mod ops;
mod organizations;
mod reads;
pub mod serve;
mod sharing;
mod sparql;
mod webhooks;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderName;
use axum::routing::{delete, get, patch, post};
use axum::Router;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::identity::DSP_PATH;
use crate::node::Node;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

pub fn router(node: Arc<Node>) -> Router {
    let body_limit = node.config.body_limit_bytes;
    let routes = Router::new()
        .route("/health", get(ops::health))
        .route("/metrics", get(ops::metrics))
        .route(
            "/operations/backups",
            post(ops::take_backup).get(ops::list_backups),
        )
        .route("/openapi.json", get(ops::openapi))
        .route("/ns", get(ops::vocabulary))
        .route("/shapes/{name}", get(ops::shapes))
        .route("/.well-known/did.json", get(federation::node_document))
        .route("/.well-known/dspace-version", get(dsp::versions))
        .route(&format!("{DSP_PATH}/catalog/request"), post(dsp::catalog))
        .route(
            &format!("{DSP_PATH}/catalog/datasets/{{id}}"),
            get(dsp::dataset),
        )
        .route(
            &format!("{DSP_PATH}/negotiations/request"),
            post(dsp::request_negotiation),
        )
        .route(
            &format!("{DSP_PATH}/negotiations/{{pid}}"),
            get(dsp::negotiation),
        )
        .route(
            &format!("{DSP_PATH}/negotiations/{{pid}}/request"),
            post(dsp::counter_request),
        )
        .route(
            &format!("{DSP_PATH}/negotiations/{{pid}}/events"),
            post(dsp::negotiation_event),
        )
        .route(
            &format!("{DSP_PATH}/negotiations/{{pid}}/agreement/verification"),
            post(dsp::verify_agreement),
        )
        .route(
            &format!("{DSP_PATH}/negotiations/{{pid}}/termination"),
            post(dsp::terminate_negotiation),
        )
        .route(
            &format!("{DSP_PATH}/transfers/request"),
            post(dsp::request_transfer),
        )
        .route(&format!("{DSP_PATH}/transfers/{{pid}}"), get(dsp::transfer))
        .route(
            &format!("{DSP_PATH}/transfers/{{pid}}/{{step}}"),
            post(dsp::transfer_step),
        )
        .route(&format!("{DSP_PATH}/data/{{transfer}}"), get(dsp::pull))
        .route(
            "/supply-chain/data-space/transfers",
            get(dsp::provided_transfers),
        )
        .route(
            "/supply-chain/data-space/transfers/{pid}/{step}",
            post(dsp::provider_step),
        )
        .route("/org/{id}/did.json", get(federation::organization_document))
        .route("/federation/inbox", post(federation::inbox))
        .route("/federation/datasets", get(federation::dataset))
        .route("/console", get(console::page))
        .route("/console/", get(console::page))
        .route("/console/assets/{file}", get(console::asset))
        .route("/console/session", post(console::sign_in))
        .route("/console/{*page}", get(console::page))
        .route("/authentication/login", post(accounts::login))
        .route("/authentication/login/create", post(accounts::create))
        .route("/authentication/session", get(accounts::session))
        .route("/authentication/logout", post(accounts::logout))
        .route("/authentication/password", post(accounts::password))
        .route("/organizations", get(organizations::list))
        .route(
            "/organizations/{id}/keys",
            get(organizations::keys).post(organizations::create_key),
        )
        .route(
            "/organizations/{id}/keys/{key_id}",
            delete(organizations::revoke_key),
        )
        .route("/organizations/{id}/users", get(organizations::users))
        .route(
            "/organizations/{id}/users/{user_id}",
            patch(organizations::update_user),
        )
        .route("/operations/operator", post(organizations::create_operator))
        .route("/operations/audit", get(organizations::audit))
        .route("/supply-chain/data-space/inbox", post(inbox::post))
        .route(
            "/supply-chain/data-space/inbox/validate",
            post(inbox::validate),
        )
        .route(
            "/supply-chain/data-space/activity-logs/{id}",
            get(inbox::log_entry),
        )
        .route("/supply-chain/data-space/consignments", get(reads::list))
        .route(
            "/supply-chain/data-space/consignments/{id}",
            get(reads::view),
        )
        .route(
            "/supply-chain/data-space/consignments/{id}/events",
            get(reads::events),
        )
        .route(
            "/supply-chain/data-space/consignments/{id}/history",
            get(reads::history),
        )
        .route(
            "/supply-chain/data-space/consignments/{id}/history/{revision}",
            get(reads::revision),
        )
        .route(
            "/supply-chain/data-space/consignments/{id}/documents",
            get(reads::documents),
        )
        .route(
            "/supply-chain/data-space/consignments/{id}/documents/{document_id}",
            get(reads::document),
        )
        .route(
            "/supply-chain/data-space/documents",
            get(reads::all_documents),
        )
        .route(
            "/supply-chain/data-space/documents/{document_id}",
            get(reads::find_document),
        )
        .route(
            "/supply-chain/data-space/blobs/{blob_id}",
            get(documents::blob),
        )
        .route(
            "/supply-chain/data-space/attestations/{id}",
            get(documents::attestation),
        )
        .route(
            "/supply-chain/data-space/sparql",
            get(sparql::get).post(sparql::post),
        )
        .route(
            "/supply-chain/data-space/policies",
            get(sharing::list_policies).post(sharing::create_policy),
        )
        .route(
            "/supply-chain/data-space/policies/{uid}",
            get(sharing::get_policy).delete(sharing::delete_policy),
        )
        .route(
            "/supply-chain/data-space/notifications",
            get(sharing::notifications),
        )
        .route(
            "/supply-chain/data-space/notifications/stream",
            get(sharing::stream),
        )
        .route(
            "/supply-chain/data-space/subscriptions",
            get(webhooks::list).post(webhooks::create),
        )
        .route(
            "/supply-chain/data-space/subscriptions/{id}",
            get(webhooks::read)
                .patch(webhooks::change)
                .delete(webhooks::delete),
        )
        .route(
            "/supply-chain/data-space/subscriptions/{id}/rotate-secret",
            post(webhooks::rotate_secret),
        )
        .route(
            "/supply-chain/data-space/subscriptions/{id}/deliveries",
            get(webhooks::deliveries),
        )
        .route(
            "/supply-chain/data-space/subscriptions/{id}/deliveries/{delivery_id}/retry",
            post(webhooks::retry),
        )
        .route(
            "/supply-chain/data-space/subscriptions/{id}/replay",
            post(webhooks::replay),
        );
    // Counted per matched route (a layer of the routes sees which one matched).
    let routes = if node.metrics.on() {
        routes.route_layer(axum::middleware::from_fn_with_state(
            node.clone(),
            metrics::counted,
        ))
    } else {
        routes
    };
    routes
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let id = req
                .headers()
                .get(REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            tracing::info_span!("request", id, method = %req.method(), path = req.uri().path())
        })
        // One line per answered request at the default level: status and latency.
        .on_response(DefaultOnResponse::new().level(Level::INFO)))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(node)
}
