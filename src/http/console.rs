//! `/console`: the web console, built from `console/` into the binary (`build.rs`), and its
//! sign-in. Its pages call the same REST endpoints as any client; its session is an HttpOnly
//! cookie that names the organisation's key instead of carrying it (docs/ARCHITECTURE.md,
//! "Console").

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::accounts::logged_in;
use super::extract::{Body, Fields, PathParams, CONSOLE_HEADER};
use crate::error::{Error, Result};
use crate::node::Node;

/// A built asset: its hashed file name, its bytes, and their gzip when the build made one.
struct Asset {
    name: &'static str,
    plain: &'static [u8],
    gz: Option<&'static [u8]>,
}

mod built {
    include!(concat!(env!("OUT_DIR"), "/console_assets.rs"));
}

/// No inline script or style, nothing from another origin, never framed: payload text can
/// only ever be text.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; manifest-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

fn hardened(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", POLICY),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// `GET /console` and every page under it: the one HTML page; the script draws the page the
/// address names.
pub async fn page() -> Response {
    let Some(index) = built::INDEX else {
        return hardened(
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "This build of the node has no console: run `npm ci && npm run build` in console/ \
                 (.ci/node does it), then build the node again.\n",
            )
                .into_response(),
        );
    };
    hardened(
        (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            index,
        )
            .into_response(),
    )
}

/// `GET /console/assets/{file}`: a hashed asset, cached for good; gzip when the client takes it.
pub async fn asset(PathParams(file): PathParams<String>, headers: HeaderMap) -> Result<Response> {
    let asset = built::ASSETS
        .iter()
        .find(|asset| asset.name == file)
        .ok_or_else(|| Error::NotFound("no such console asset".into()))?;
    let kind = match file.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    };
    let takes_gzip = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| coding.split(';').next().map(str::trim) == Some("gzip"));
    let mut response = match asset.gz {
        Some(gz) if takes_gzip => ([(header::CONTENT_ENCODING, "gzip")], gz).into_response(),
        _ => asset.plain.into_response(),
    };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    Ok(hardened(response))
}

/// `POST /console/session` `{apiKey, email, password}`: a login (same checks, throttle and
/// answers) whose session is a console session, set as the HttpOnly cookie only. Like every
/// console request that changes something it needs `x-console-request`: a page of another
/// origin must not sign a browser in to an account of its choosing.
pub async fn sign_in(
    State(node): State<Arc<Node>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    if !headers.contains_key(CONSOLE_HEADER) {
        return Err(Error::Forbidden(format!(
            "the console signs in with the {CONSOLE_HEADER} header"
        )));
    }
    let object = body.json_object()?;
    let fields = Fields(&object);
    let key = fields.required_str("apiKey")?;
    let email = fields.required_str("email")?;
    let password = fields.required_str("password")?;
    logged_in(&node, Some(&key), client, &email, password, true).await
}
