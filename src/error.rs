//! The node's one error type. Domain code returns it; `http::error` turns it into a status and
//! one of the spec's error bodies. Internal causes are logged there and never sent to a caller.

use serde_json::{Map, Value};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400 `GeneralError`: the request is malformed; `properties` says which fields and why.
    #[error("{message}")]
    BadRequest {
        message: String,
        properties: Map<String, Value>,
    },
    /// 401 `UnauthorizedError`.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 `GeneralError`.
    #[error("{0}")]
    Forbidden(String),
    /// 404 `GeneralError`. The message never says whether the resource exists for someone else.
    #[error("{0}")]
    NotFound(String),
    /// 409 `GeneralError`: the resource already exists (a policy uid).
    #[error("{0}")]
    Conflict(String),
    /// 409 `GeneralError`: an id names consignments (or documents) of several publishers the
    /// caller may read; `properties.candidates` lists them (`aigId`, `publisher`; for a
    /// document id `consignmentId`, `publisher`) so that it can name one.
    #[error("{message}")]
    Ambiguous {
        message: String,
        candidates: Vec<Value>,
    },
    /// 405 `GeneralError`.
    #[error("method not allowed on this path")]
    MethodNotAllowed,

    /// No representation the client accepts; lists what the endpoint offers.
    #[error("none of the accepted media types is available here; available: {0}")]
    NotAcceptable(String),
    /// 408 `GeneralError`: the request body did not arrive within the read timeout.
    #[error("the request body did not arrive within {secs} s")]
    RequestTimeout { secs: u64 },
    /// 413 `GeneralError`.
    #[error("request body is larger than the limit of {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// 429 `GeneralError` with `Retry-After`: too many failed logins, too many queries at once.
    #[error("too many requests; retry after {retry_after_secs} s")]
    TooManyRequests { retry_after_secs: u64 },
    /// 503 `GeneralError`: the node cannot serve right now (store unavailable, overloaded).
    #[error("{0}")]
    Unavailable(String),
    /// 500 `InternalServerError` with a message the caller may read: the spec pairs a
    /// duplicate email on account creation with status 500.
    #[error("{0}")]
    DuplicateEmail(String),
    /// 500 `InternalServerError`; the cause is logged, the caller gets a generic message.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::BadRequest {
            message: message.into(),
            properties: Map::new(),
        }
    }

    /// A 400 naming one offending field.
    pub fn invalid_field(field: &str, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let mut properties = Map::new();
        properties.insert("field".into(), Value::String(field.into()));
        properties.insert("reason".into(), Value::String(reason.clone()));
        Self::BadRequest {
            message: format!("invalid field `{field}`: {reason}"),
            properties,
        }
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }
}

impl From<oxigraph::store::StorageError> for Error {
    fn from(e: oxigraph::store::StorageError) -> Self {
        Self::internal(format!("store: {e}"))
    }
}

impl From<oxigraph::sparql::QueryEvaluationError> for Error {
    fn from(e: oxigraph::sparql::QueryEvaluationError) -> Self {
        Self::internal(format!("query: {e}"))
    }
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Self {
        Self::internal(format!("blocking task: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::internal(format!("io: {e}"))
    }
}

/// An error with its causes: the top level of a transport error alone says little ("error
/// sending request").
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}
