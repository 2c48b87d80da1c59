//! Answers read as JSON, error bodies checked, and the ways tests encode ids into paths.

use reqwest::{Response, StatusCode};
use serde_json::Value;

use super::{Session, TestNode};

pub async fn json_body(r: Response) -> Value {
    r.json().await.expect("JSON body")
}

/// Asserts an error status and the spec's body shape for it.
pub async fn assert_error(r: Response, status: StatusCode, name: &str) -> Value {
    assert_eq!(r.status(), status);
    let body = json_body(r).await;
    assert_eq!(body["name"], name, "body: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "body: {body}"
    );
    if name == "GeneralError" {
        assert!(body["properties"].is_object(), "body: {body}");
    } else {
        assert_eq!(body.as_object().unwrap().len(), 2, "body: {body}");
    }
    body
}

/// The body of an answer that must be 200.
pub async fn ok_json(r: Response) -> Value {
    assert_eq!(r.status(), StatusCode::OK);
    json_body(r).await
}

/// `GET path` as `session`; it must answer 200 (the failure names the path).
pub async fn get_json(session: &Session, node: &TestNode, path: &str) -> Value {
    let r = session.get(node, path).await;
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    json_body(r).await
}

/// `application/x-www-form-urlencoded` (a space becomes `+`).
pub fn form_encoded(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Every byte but ASCII letters and digits percent-encoded.
pub fn percent_encoded(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Only `:` encoded (`%3A`): an id as a client that encodes little would send it.
pub fn colons_encoded(s: &str) -> String {
    s.replace(':', "%3A")
}
