//! Extractors: the caller's credentials and request bodies, failing with the spec's errors.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::request::Parts;
use axum::http::Method;
use serde_json::{Map, Value};

use crate::auth::Caller;
use crate::error::Error;
use crate::federation::token::NodeCaller;
use crate::node::Node;

pub const API_KEY_HEADER: &str = "x-api-key";
pub const SESSION_COOKIE: &str = "access_token";

/// The `x-api-key` header, if any. Checking it is the domain's job.
pub struct ApiKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for ApiKey {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Error> {
        Ok(Self(
            parts
                .headers
                .get(API_KEY_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        ))
    }
}

/// The `Authorization: Bearer …` token, if any.
fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// The `access_token` cookie, if any. Several are refused: a page of a sibling host can set
/// one for a narrower path, which the browser would send first (cookie tossing).
fn session_cookie(parts: &Parts) -> Result<Option<&str>, Error> {
    let mut found = parts
        .headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim());
    let first = found.next();
    if found.next().is_some() {
        return Err(Error::Unauthorized(format!(
            "several {SESSION_COOKIE} cookies: sign in again"
        )));
    }
    Ok(first)
}

/// The header the console sends with every request that changes something (`console/src/api.js`).
pub const CONSOLE_HEADER: &str = "x-console-request";

impl FromRequestParts<Arc<Node>> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, node: &Arc<Node>) -> Result<Self, Error> {
        let key = parts
            .headers
            .get(API_KEY_HEADER)
            .and_then(|v| v.to_str().ok());
        if let Some(bearer) = bearer(parts) {
            return node.auth.authenticate(key, Some(bearer));
        }
        match (key, session_cookie(parts)?) {
            // Only a cookie: the console's session, which a script cannot read or send elsewhere.
            (None, Some(cookie)) => {
                let read = matches!(parts.method, Method::GET | Method::HEAD);
                let same_origin = read || parts.headers.contains_key(CONSOLE_HEADER);
                node.auth.authenticate_console(cookie, same_origin)
            }
            (key, cookie) => node.auth.authenticate(key, cookie),
        }
    }
}

/// A partner node's call: its node token (`Authorization: Bearer`), verified. Session tokens
/// and API keys never authenticate node traffic.
impl FromRequestParts<Arc<Node>> for NodeCaller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, node: &Arc<Node>) -> Result<Self, Error> {
        let token =
            bearer(parts).ok_or_else(|| Error::Unauthorized("a node token is required".into()))?;
        node.federation.authenticate(token).await
    }
}

/// The raw request body, limited by the node's body limit (413 beyond it).
pub struct Body(pub Bytes);

impl FromRequest<Arc<Node>> for Body {
    type Rejection = Error;

    async fn from_request(req: Request, node: &Arc<Node>) -> Result<Self, Error> {
        // A client that trickles its body holds a connection and a buffer: it gets the same
        // time for the body as for the headers.
        let secs = node.config.read_timeout_secs;
        let limit = node.config.body_limit_bytes;
        tokio::time::timeout(
            std::time::Duration::from_secs(secs),
            read_capped(req, limit),
        )
        .await
        .map_err(|_| Error::RequestTimeout { secs })?
    }
}

/// What of a body over the limit is still read, and dropped, before the 413: a client
/// that is still sending when the answer comes sees its write fail and never reads the
/// answer, unless the server reads on a while (as nginx's lingering close does).
const DRAINED_AT_MOST: usize = 64 * 1024 * 1024;

/// The body, up to `limit` bytes; beyond it a 413 once the rest was read (up to
/// [`DRAINED_AT_MOST`]).
async fn read_capped(req: Request, limit: usize) -> Result<Body, Error> {
    use futures_util::StreamExt;
    let mut stream = req.into_body().into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut over: Option<usize> = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| Error::bad_request(format!("could not read the request body: {e}")))?;
        match over.as_mut() {
            Some(drained) => {
                *drained += chunk.len();
                if *drained > DRAINED_AT_MOST {
                    break;
                }
            }
            None if buf.len() + chunk.len() > limit => {
                over = Some(chunk.len());
                buf = Vec::new();
            }
            None => buf.extend_from_slice(&chunk),
        }
    }
    match over {
        Some(_) => Err(Error::PayloadTooLarge { limit }),
        None => Ok(Body(Bytes::from(buf))),
    }
}

impl Body {
    /// The body as a JSON object (400 when it is not JSON or not an object).
    pub fn json_object(&self) -> Result<Map<String, Value>, Error> {
        match serde_json::from_slice::<Value>(&self.0) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(Error::bad_request("the request body must be a JSON object")),
            Err(e) => Err(Error::bad_request(format!(
                "the request body is not valid JSON: {e}"
            ))),
        }
    }
}

/// Reads typed fields of a JSON object, naming the field in every error.
pub struct Fields<'a>(pub &'a Map<String, Value>);

impl Fields<'_> {
    pub fn required_str(&self, name: &str) -> Result<String, Error> {
        match self.0.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            None | Some(Value::Null) => Err(Error::invalid_field(name, "required")),
            Some(_) => Err(Error::invalid_field(name, "must be a string")),
        }
    }

    pub fn optional_str(&self, name: &str) -> Result<Option<String>, Error> {
        match self.0.get(name) {
            Some(Value::String(s)) => Ok(Some(s.clone())),
            None | Some(Value::Null) => Ok(None),
            Some(_) => Err(Error::invalid_field(name, "must be a string")),
        }
    }
}

impl From<PathRejection> for Error {
    fn from(rejection: PathRejection) -> Self {
        Error::bad_request(format!("invalid path: {}", rejection.body_text()))
    }
}

impl From<QueryRejection> for Error {
    fn from(rejection: QueryRejection) -> Self {
        Error::bad_request(format!("invalid query string: {}", rejection.body_text()))
    }
}

/// `axum::extract::Path` whose failures are the spec's 400 `GeneralError`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(Error))]
pub struct PathParams<T>(pub T);

/// `axum::extract::Query` whose failures are the spec's 400 `GeneralError`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(Error))]
pub struct QueryParams<T>(pub T);
