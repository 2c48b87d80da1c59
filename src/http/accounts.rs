//! `/authentication/*`: account creation, login, and the current session.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::extract::{ApiKey, Body, Fields, SESSION_COOKIE};
use crate::auth::{AccountInput, Caller};
use crate::error::{Error, Result};
use crate::node::Node;

/// `POST /authentication/login/create`
pub async fn create(
    State(node): State<Arc<Node>>,
    ApiKey(key): ApiKey,
    body: Body,
) -> Result<Response> {
    // The key is checked before the body is read, so an anonymous caller learns nothing.
    node.auth.key_holder(key.as_deref())?;
    let object = body.json_object()?;
    let fields = Fields(&object);
    let input = AccountInput {
        email: fields.required_str("email")?,
        password: fields.required_str("password")?,
        profile_name: fields.optional_str("profileName")?,
        organization: fields.optional_str("organizationId")?,
    };
    let (created, session) = node.auth.create_account(key.as_deref(), input).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "token": session.token,
            "expiry": session.expiry_ms,
            "identity": created.identity,
            "organizationId": created.organization,
            "apiKey": created.api_key,
        })),
    )
        .into_response())
}

/// `POST /authentication/login`
pub async fn login(
    State(node): State<Arc<Node>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    ApiKey(key): ApiKey,
    body: Body,
) -> Result<Response> {
    node.auth.key_holder(key.as_deref())?;
    let object = body.json_object()?;
    let fields = Fields(&object);
    let email = fields.required_str("email")?;
    let password = fields.required_str("password")?;
    logged_in(&node, key.as_deref(), client, &email, password, false).await
}

/// A login's answer: `{expiry, identity}`, and the session as the cookie; `console` makes it
/// a console session (`http/console.rs`).
pub(super) async fn logged_in(
    node: &Node,
    key: Option<&str>,
    client: SocketAddr,
    email: &str,
    password: String,
    console: bool,
) -> Result<Response> {
    let logged_in = node
        .auth
        .login(key, client.ip(), email, password, console)
        .await
        .inspect_err(|e| {
            if matches!(e, Error::TooManyRequests { .. }) {
                node.metrics.login_throttled();
            }
        })?;
    let mut response = Json(json!({
        "expiry": logged_in.session.expiry_ms,
        "identity": logged_in.identity,
    }))
    .into_response();
    set_cookie(node, &mut response, &logged_in.session.token, "")?;
    Ok(response)
}

/// Sets (or, with `Max-Age=0` as `extra`, clears) the session cookie.
pub(super) fn set_cookie(
    node: &Node,
    response: &mut Response,
    token: &str,
    extra: &str,
) -> Result<()> {
    let secure = if node.identity.is_https() {
        "; Secure"
    } else {
        ""
    };
    let cookie =
        format!("{SESSION_COOKIE}={token}; HttpOnly; Path=/; SameSite=Strict{secure}{extra}");
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(Error::internal)?,
    );
    Ok(())
}

/// `POST /authentication/logout`: the session ends now (its token is refused though
/// unexpired) and the cookie is cleared.
pub async fn logout(State(node): State<Arc<Node>>, caller: Caller) -> Result<Response> {
    node.auth.logout(&caller).await?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    set_cookie(&node, &mut response, "", "; Max-Age=0")?;
    Ok(response)
}

/// `POST /authentication/password` `{currentPassword, newPassword}`: every session of the
/// user ends; the answer carries the caller's new one (also as the cookie).
pub async fn password(
    State(node): State<Arc<Node>>,
    caller: Caller,
    body: Body,
) -> Result<Response> {
    let object = body.json_object()?;
    let fields = Fields(&object);
    let current = fields.required_str("currentPassword")?;
    let new = fields.required_str("newPassword")?;
    let session = node.auth.change_password(&caller, current, new).await?;
    // A console session's token stays out of reach of scripts: the cookie alone carries it.
    let body = if caller.console {
        json!({"expiry": session.expiry_ms})
    } else {
        json!({"token": session.token, "expiry": session.expiry_ms})
    };
    let mut response = Json(body).into_response();
    set_cookie(&node, &mut response, &session.token, "")?;
    Ok(response)
}

/// `GET /authentication/session`: who the session belongs to and when it ends.
pub async fn session(caller: Caller) -> Json<serde_json::Value> {
    Json(json!({
        "identity": caller.user,
        "organizationId": caller.organization,
        "expiry": caller.expiry_ms,
        "operator": caller.operator,
    }))
}
