//! The one place where an [`Error`] becomes a status code and one of the spec's error bodies.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::error::Error;

fn general(status: StatusCode, message: String, properties: Map<String, Value>) -> Response {
    (
        status,
        Json(json!({"name": "GeneralError", "message": message, "properties": properties})),
    )
        .into_response()
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let message = self.to_string();
        match self {
            Error::BadRequest { properties, .. } => {
                general(StatusCode::BAD_REQUEST, message, properties)
            }
            Error::Unauthorized(_) => (
                StatusCode::UNAUTHORIZED,
                Json(json!({"name": "UnauthorizedError", "message": message})),
            )
                .into_response(),
            Error::Forbidden(_) => general(StatusCode::FORBIDDEN, message, Map::new()),
            Error::NotFound(_) => general(StatusCode::NOT_FOUND, message, Map::new()),
            Error::Conflict(_) => general(StatusCode::CONFLICT, message, Map::new()),
            Error::Ambiguous { candidates, .. } => {
                let mut properties = Map::new();
                properties.insert("candidates".into(), Value::Array(candidates));
                general(StatusCode::CONFLICT, message, properties)
            }
            Error::MethodNotAllowed => general(StatusCode::METHOD_NOT_ALLOWED, message, Map::new()),
            Error::NotAcceptable(_) => general(StatusCode::NOT_ACCEPTABLE, message, Map::new()),
            Error::RequestTimeout { .. } => {
                general(StatusCode::REQUEST_TIMEOUT, message, Map::new())
            }
            Error::PayloadTooLarge { limit } => {
                let mut properties = Map::new();
                properties.insert("limitBytes".into(), json!(limit));
                general(StatusCode::PAYLOAD_TOO_LARGE, message, properties)
            }
            Error::TooManyRequests { retry_after_secs } => {
                let mut response = general(StatusCode::TOO_MANY_REQUESTS, message, Map::new());
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
                response
            }
            Error::Unavailable(_) => general(StatusCode::SERVICE_UNAVAILABLE, message, Map::new()),
            Error::DuplicateEmail(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"name": "InternalServerError", "message": message})),
            )
                .into_response(),
            Error::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Json(json!({
                        "name": "InternalServerError",
                        "message": "the node could not complete the request; the details are in its log"
                    })),
                )
                    .into_response()
            }
        }
    }
}
