//! The console as the node serves it: its headers, its assets' size and caching, and the
//! console session's rules (no key in the page, no change from another origin).

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{percent_encoded, Session, TestNode, LIST};

const POLICY_PARTS: [&str; 4] = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "frame-ancestors 'none'",
];

#[tokio::test]
async fn pages_and_assets_carry_a_strict_policy_and_the_assets_are_small_and_cached_by_hash() {
    let node = TestNode::start().await;
    for path in [
        "/console",
        "/console/",
        "/console/consignments/aig:x",
        "/console/sparql",
    ] {
        let r = node.client.get(node.url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        for part in POLICY_PARTS {
            assert!(csp.contains(part), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        assert_eq!(r.headers()["cache-control"], "no-cache");
        let html = r.text().await.unwrap();
        assert!(
            !html.contains("<script>") && !html.contains(" style="),
            "inline code: {html}"
        );
    }
    let html = node
        .client
        .get(node.url("/console"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let assets: Vec<&str> = html
        .split('"')
        .filter(|s| s.starts_with("/console/assets/"))
        .collect();
    assert_eq!(assets.len(), 2, "{html}");
    let mut total = 0;
    for asset in &assets {
        assert!(
            !asset.contains("http"),
            "served by the node itself: {asset}"
        );
        let r = node
            .client
            .get(node.url(asset))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{asset}");
        assert_eq!(
            r.headers()["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(r.headers()["content-encoding"], "gzip");
        total += r.bytes().await.unwrap().len();
    }
    assert!(total <= 500 * 1024, "{total} bytes compressed");
    let r = node
        .client
        .get(node.url("/console/assets/app-NOPE.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.json::<Value>().await.unwrap()["message"].is_string());
}

async fn console_cookie(node: &TestNode, who: &Session) -> String {
    let r = node
        .client
        .post(node.url("/console/session"))
        .header("x-console-request", "1")
        .json(&json!({"apiKey": who.account.api_key, "email": who.account.email, "password": who.account.password}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let body: Value = r.json().await.unwrap();
    assert!(
        !body.to_string().contains("eyJ"),
        "the token stays in the cookie: {body}"
    );
    set.split(';').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_console_session_reads_by_its_cookie_changes_only_with_the_console_header_and_ends_with_its_key(
) {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    clerk.publish_example(&node, "create-consignment").await;
    let cookie = console_cookie(&node, &clerk).await;
    let get = |path: &str| {
        node.client
            .get(node.url(path))
            .header("cookie", &cookie)
            .send()
    };
    let r = get(LIST).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.json::<Value>().await.unwrap()["entities"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // A form or script of another origin cannot add the header: refused, nothing done.
    let post = |header: bool| {
        let mut req = node
            .client
            .post(node.url("/supply-chain/data-space/inbox"))
            .header("cookie", &cookie)
            .json(&crate::common::as_org(
                crate::common::example("add-event"),
                clerk.org(),
            ));
        if header {
            req = req.header("x-console-request", "1");
        }
        req.send()
    };
    let r = post(false).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("x-console-request"));
    assert_eq!(post(true).await.unwrap().status(), StatusCode::CREATED);

    // An API session's cookie alone is not a console session: the key is still required.
    let r = node
        .client
        .get(node.url(LIST))
        .header("cookie", format!("access_token={}", clerk.token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("x-api-key"));

    // Revoking the key the console signed in with ends the console session.
    let keys = format!("/organizations/{}/keys", percent_encoded(clerk.org()));
    let listed: Value = clerk.get(&node, &keys).await.json().await.unwrap();
    let id = listed["entities"][0]["id"]
        .as_str()
        .expect("the key's id")
        .to_owned();
    let other: Value = clerk
        .post_to(&node, &keys, &json!({"name": "second"}))
        .await
        .json()
        .await
        .unwrap();
    let r = node
        .client
        .delete(node.url(&format!("{keys}/{id}")))
        .header("x-api-key", other["apiKey"].as_str().unwrap())
        .bearer_auth(&clerk.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(get(LIST).await.unwrap().status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn console_sign_in_answers_as_login_does() {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    let sign_in = |body: Value| {
        node.client
            .post(node.url("/console/session"))
            .header("x-console-request", "1")
            .json(&body)
            .send()
    };
    let a = &clerk.account;
    let wrong =
        sign_in(json!({"apiKey": a.api_key, "email": a.email, "password": "not it at all"}))
            .await
            .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        wrong.json::<Value>().await.unwrap()["message"],
        "invalid email or password"
    );
    let bad_key = sign_in(json!({"apiKey": "nope", "email": a.email, "password": a.password}))
        .await
        .unwrap();
    assert_eq!(bad_key.status(), StatusCode::UNAUTHORIZED);
    let missing = sign_in(json!({"email": a.email, "password": a.password}))
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    assert!(missing.text().await.unwrap().contains("apiKey"));
    let r = node
        .client
        .post(node.url("/console/session"))
        .body("not json")
        .header("content-type", "application/json")
        .header("x-console-request", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // A form of another site cannot add the header: no sign-in of its choosing.
    let r = node
        .client
        .post(node.url("/console/session"))
        .header("content-type", "text/plain")
        .body(json!({"apiKey": a.api_key, "email": a.email, "password": a.password}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn a_second_session_cookie_is_refused_and_a_console_password_change_keeps_the_token_in_the_cookie(
) {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    let cookie = console_cookie(&node, &clerk).await;
    // Another host's planted cookie sent beside the real one: neither is taken.
    let r = node
        .client
        .get(node.url(LIST))
        .header("cookie", format!("access_token=planted; {cookie}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("several"));

    let r = node
        .client
        .post(node.url("/authentication/password"))
        .header("cookie", &cookie)
        .header("x-console-request", "1")
        .json(&json!({"currentPassword": clerk.account.password, "newPassword": "another long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert!(body.get("token").is_none(), "{body}");
    let renewed = set.split(';').next().unwrap().to_owned();
    let r = node
        .client
        .get(node.url(LIST))
        .header("cookie", &renewed)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the new console session works");
}

#[tokio::test]
async fn an_operator_console_session_ends_when_the_node_runs_with_another_operator_key() {
    let node = TestNode::start().await;
    let _operator = crate::common::Operator::new(&node).await;
    let r = node
        .client
        .post(node.url("/console/session"))
        .header("x-console-request", "1")
        .json(
            &json!({"apiKey": crate::common::OPERATOR_KEY, "email": crate::common::OPERATOR_EMAIL,
                      "password": crate::common::OPERATOR_PASSWORD}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let session = |node: &TestNode| {
        node.client
            .get(node.url("/authentication/session"))
            .header("cookie", cookie.clone())
            .send()
    };
    let me: Value = session(&node).await.unwrap().json().await.unwrap();
    assert_eq!(me["operator"], true);

    let (mut config, addr, dir) = node.halt().await;
    config.api_key = Some("a-new-operator-key-0123456789".into());
    let node = TestNode::start_again((config, addr, dir)).await;
    let r = session(&node).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("operator key changed"));
}
