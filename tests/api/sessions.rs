//! Sessions on authenticated endpoints: cookie or Bearer, plus the api key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

const WHOAMI: &str = "/authentication/session";

#[tokio::test]
async fn cookie_and_bearer_both_authenticate() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let token = node.login(&a.api_key, &a.email, &a.password).await;
    for r in [
        node.get_with_cookie(WHOAMI, &a.api_key, &token).await,
        node.get_with_bearer(WHOAMI, &a.api_key, &token).await,
        // The token returned by account creation is a session as well.
        node.get_with_bearer(WHOAMI, &a.api_key, &a.token).await,
        // The operator key goes with any organisation's session.
        node.get_with_bearer(WHOAMI, OPERATOR_KEY, &token).await,
    ] {
        assert_eq!(r.status(), StatusCode::OK);
        let v = json_body(r).await;
        assert_eq!(v["identity"], a.identity.as_str());
        assert_eq!(v["organizationId"], a.organization.as_str());
    }
}

#[tokio::test]
async fn missing_credentials_are_401() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let r = node.client.get(node.url(WHOAMI)).send().await.unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Session without api key.
    let r = node
        .client
        .get(node.url(WHOAMI))
        .bearer_auth(&a.token)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Api key without session.
    let r = node
        .client
        .get(node.url(WHOAMI))
        .header("x-api-key", &a.api_key)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Unknown api key with a good session.
    let r = node.get_with_bearer(WHOAMI, "unknown-key", &a.token).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn session_of_one_organisation_with_the_key_of_another_is_401() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let b = node
        .create_account(OPERATOR_KEY, "b@two.example", None)
        .await;
    let r = node.get_with_bearer(WHOAMI, &b.api_key, &a.token).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let r = node.get_with_cookie(WHOAMI, &a.api_key, &b.token).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

fn claims_of(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[tokio::test]
async fn tampered_and_unsigned_tokens_are_401() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let b = node
        .create_account(OPERATOR_KEY, "b@two.example", None)
        .await;
    let parts: Vec<&str> = a.token.split('.').collect();

    // Claims rewritten to organisation B, signature of the original kept.
    let mut claims = claims_of(&a.token);
    assert_eq!(claims["org"], a.organization.as_str());
    assert!(claims["jti"].is_string() && claims["iat"].is_i64() && claims["exp"].is_i64());
    claims["org"] = Value::String(b.organization.clone());
    let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
    let forged = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
    let r = node.get_with_bearer(WHOAMI, &b.api_key, &forged).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;

    // A flipped signature character.
    let mut sig = parts[2].to_string();
    let last = sig.pop().unwrap();
    sig.push(if last == 'A' { 'B' } else { 'A' });
    let r = node
        .get_with_bearer(
            WHOAMI,
            &a.api_key,
            &format!("{}.{}.{}", parts[0], parts[1], sig),
        )
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;

    // alg: none, no signature.
    let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    for token in [
        format!("{none}.{}.", parts[1]),
        format!("{none}.{}", parts[1]),
    ] {
        let r = node.get_with_bearer(WHOAMI, &a.api_key, &token).await;
        assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    }
    // HS512 header: another algorithm is refused even if the secret were known.
    let hs512 = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS512","typ":"JWT"}"#);
    let r = node
        .get_with_bearer(
            WHOAMI,
            &a.api_key,
            &format!("{hs512}.{}.{}", parts[1], parts[2]),
        )
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn expired_sessions_are_401() {
    let node = TestNode::start_with(|c| c.session_lifetime_secs = 1).await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let token = node.login(&a.api_key, &a.email, &a.password).await;
    assert_eq!(
        node.get_with_cookie(WHOAMI, &a.api_key, &token)
            .await
            .status(),
        StatusCode::OK
    );
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let r = node.get_with_cookie(WHOAMI, &a.api_key, &token).await;
    let v = assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    assert!(v["message"].as_str().unwrap().contains("expired"));
}
