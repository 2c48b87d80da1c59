//! Managing subscriptions: each organisation its own, secrets answered once, bad input named.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{call, subscribe, SUBSCRIPTIONS};
use crate::common::*;

async fn node_allowing_loopback() -> TestNode {
    TestNode::start_with(|c| c.webhook_allow_http = vec!["127.0.0.1".into()]).await
}

#[tokio::test]
async fn an_organisation_manages_its_own_subscriptions_and_sees_no_secret_after_creation() {
    let node = node_allowing_loopback().await;
    let (owner, other) = (
        Session::new(&node, "hooks-owner@example.com").await,
        Session::new(&node, "hooks-other@example.com").await,
    );
    let created = subscribe(
        &node,
        &owner,
        json!({"url": "http://127.0.0.1:9/hook", "events": ["consignment.created"],
            "filter": {"portOfEntryCountryId": "KE", "scope": "own"}, "description": "customs"}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(created["state"], "enabled");
    assert_eq!(created["full"], false);
    assert_eq!(
        created["filter"],
        json!({"portOfEntryCountryId": "KE", "scope": "own"})
    );
    let path = format!("{SUBSCRIPTIONS}/{id}");

    let read = ok_json(call(&node, &owner, Method::GET, &path, None).await).await;
    assert!(read.get("secret").is_none() && !read.to_string().contains("whsec_"));
    assert_eq!(read["url"], "http://127.0.0.1:9/hook");
    let list = ok_json(call(&node, &owner, Method::GET, SUBSCRIPTIONS, None).await).await;
    assert_eq!(list["entities"], json!([read]));
    assert!(!list.to_string().contains("whsec_"));

    // Another organisation: its list is empty and the id is as missing as any other.
    let theirs = ok_json(call(&node, &other, Method::GET, SUBSCRIPTIONS, None).await).await;
    assert_eq!(theirs["entities"], json!([]));
    let patch = json!({"state": "disabled"});
    for (method, at, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(&patch)),
        (Method::DELETE, path.clone(), None),
        (Method::POST, format!("{path}/rotate-secret"), None),
    ] {
        let r = call(&node, &other, method.clone(), &at, body).await;
        assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    }

    let changed = ok_json(
        call(
            &node,
            &owner,
            Method::PATCH,
            &path,
            Some(
                &json!({"events": ["consignment.updated", "consignment.shared"],
                "full": true, "state": "disabled"}),
            ),
        )
        .await,
    )
    .await;
    assert_eq!(
        changed["events"],
        json!(["consignment.updated", "consignment.shared"])
    );
    assert_eq!(
        (changed["full"].clone(), changed["state"].clone()),
        (json!(true), json!("disabled"))
    );
    assert!(changed["disabledAt"].is_string() && changed["updated"].is_string());
    let enabled = ok_json(
        call(
            &node,
            &owner,
            Method::PATCH,
            &path,
            Some(&json!({"state": "enabled"})),
        )
        .await,
    )
    .await;
    assert!(enabled.get("disabledAt").is_none(), "{enabled}");

    let rotated = ok_json(
        call(
            &node,
            &owner,
            Method::POST,
            &format!("{path}/rotate-secret"),
            None,
        )
        .await,
    )
    .await;
    let new_secret = rotated["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);

    // Kept across a restart.
    let node = node.restart().await;
    let owner = owner.logged_in_again(&node).await;
    let again = ok_json(call(&node, &owner, Method::GET, &path, None).await).await;
    assert_eq!(again["events"], changed["events"]);

    let r = call(&node, &owner, Method::DELETE, &path, None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = call(&node, &owner, Method::GET, &path, None).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn bad_subscriptions_are_400_naming_the_field_and_nothing_is_stored() {
    let node = node_allowing_loopback().await;
    let who = Session::new(&node, "hooks-bad@example.com").await;
    let ok = json!({"url": "https://hooks.example.com/x", "events": ["consignment.created"]});
    let with = |key: &str, value: Value| {
        let mut body = ok.clone();
        body[key] = value;
        body
    };
    let cases = [
        (with("url", json!("not a url")), "url"),
        (with("url", json!("ftp://hooks.example.com/x")), "url"),
        (with("url", json!("http://hooks.example.com/x")), "url"),
        (
            with("url", json!("https://169.254.169.254/latest/meta-data")),
            "url",
        ),
        (
            with("url", json!("http://169.254.169.254/latest/meta-data")),
            "url",
        ),
        (with("events", json!(["consignment.deleted"])), "events"),
        (with("events", json!([])), "events"),
        (with("filter", json!({"airport": "NBO"})), "filter.airport"),
        (
            with("filter", json!({"scope": "everything"})),
            "filter.scope",
        ),
        (
            with("filter", json!({"portOfExitCountryId": "Kenya"})),
            "filter.portOfExitCountryId",
        ),
        (with("full", json!("yes")), "full"),
        (with("state", json!("enabled")), "state"),
        (json!({"events": ["consignment.created"]}), "url"),
        (json!({"url": "https://hooks.example.com/x"}), "events"),
    ];
    for (body, field) in cases {
        let r = call(&node, &who, Method::POST, SUBSCRIPTIONS, Some(&body)).await;
        let error = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(error["properties"]["field"], field, "{body}: {error}");
    }
    let huge = json!({"url": "https://hooks.example.com/x", "events": ["consignment.created"],
        "description": "x".repeat(node.config.body_limit_bytes)});
    let r = call(&node, &who, Method::POST, SUBSCRIPTIONS, Some(&huge)).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "GeneralError").await;
    let list = ok_json(call(&node, &who, Method::GET, SUBSCRIPTIONS, None).await).await;
    assert_eq!(list["entities"], json!([]));

    // A change is checked the same way and leaves the subscription as it was.
    let created = subscribe(&node, &who, ok.clone()).await;
    let path = format!("{SUBSCRIPTIONS}/{}", created["id"].as_str().unwrap());
    let r = call(
        &node,
        &who,
        Method::PATCH,
        &path,
        Some(&json!({"events": ["consignment.updated"], "url": "gopher://x"})),
    )
    .await;
    let error = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    assert_eq!(error["properties"]["field"], "url");
    let read = ok_json(call(&node, &who, Method::GET, &path, None).await).await;
    assert_eq!(read["events"], json!(["consignment.created"]));
}

#[tokio::test]
async fn subscriptions_are_listed_newest_first_page_by_page() {
    let node = node_allowing_loopback().await;
    let who = Session::new(&node, "hooks-pages@example.com").await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let s = subscribe(
            &node,
            &who,
            json!({"url": format!("https://h{n}.example.com/"),
            "events": ["consignment.created"]}),
        )
        .await;
        ids.push(s["id"].as_str().unwrap().to_owned());
    }
    ids.reverse();
    let first = ok_json(
        call(
            &node,
            &who,
            Method::GET,
            &format!("{SUBSCRIPTIONS}?limit=2"),
            None,
        )
        .await,
    )
    .await;
    let cursor = first["cursor"].as_str().expect("a cursor").to_owned();
    let next = ok_json(
        call(
            &node,
            &who,
            Method::GET,
            &format!("{SUBSCRIPTIONS}?limit=2&cursor={cursor}"),
            None,
        )
        .await,
    )
    .await;
    assert!(next.get("cursor").is_none());
    let seen: Vec<Value> = first["entities"]
        .as_array()
        .unwrap()
        .iter()
        .chain(next["entities"].as_array().unwrap())
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(seen, ids.iter().map(|i| json!(i)).collect::<Vec<_>>());
}
