//! Accounts an organisation can run: named API keys revoked at once, users with roles and
//! standing, logging out, changing a password, the operator account and the audit log — all
//! surviving a restart.

use std::time::Duration;

use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

use crate::common::*;

const WHOAMI: &str = "/authentication/session";

/// A request with `key` and the session `token` (as a Bearer token).
async fn send(
    node: &TestNode,
    method: Method,
    path: &str,
    key: &str,
    token: &str,
    body: Option<Value>,
) -> Response {
    let mut req = node
        .client
        .request(method, node.url(path))
        .header("x-api-key", key)
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap()
}

fn org_path(org: &str, rest: &str) -> String {
    format!("/organizations/{}{rest}", percent_encoded(org))
}

async fn log_in(node: &TestNode, key: &str, email: &str, password: &str) -> Response {
    let body = json!({"email": email, "password": password});
    node.post_json("/authentication/login", Some(key), &body)
        .await
}

async fn change_password(
    node: &TestNode,
    key: &str,
    token: &str,
    current: &str,
    new: &str,
) -> Response {
    let body = json!({"currentPassword": current, "newPassword": new});
    send(
        node,
        Method::POST,
        "/authentication/password",
        key,
        token,
        Some(body),
    )
    .await
}

async fn create_operator(node: &TestNode, key: Option<&str>, password: &str) -> Response {
    let body = json!({"email": OPERATOR_EMAIL, "password": password});
    node.post_json("/operations/operator", key, &body).await
}

/// A key's id: the first 16 hex digits of its SHA-256.
fn id_of_key(key: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(key.as_bytes()))[..16].to_owned()
}

fn node_did_of(node: &TestNode) -> String {
    format!(
        "did:web:{}",
        node.base.trim_start_matches("http://").replace(':', "%3A")
    )
}

async fn whoami(node: &TestNode, key: &str, token: &str) -> StatusCode {
    node.get_with_bearer(WHOAMI, key, token).await.status()
}

#[tokio::test]
async fn a_revoked_key_and_the_sessions_made_with_it_are_refused_at_once_and_after_a_restart() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "admin@one.example", None)
        .await;
    let keys = org_path(&a.organization, "/keys");
    // A second, named key, shown once.
    let r = send(
        &node,
        Method::POST,
        &keys,
        &a.api_key,
        &a.token,
        Some(json!({"name": "ci"})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created = json_body(r).await;
    let second = created["apiKey"].as_str().unwrap().to_owned();
    let second_id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["name"], "ci");
    // A session made with the second key works with either key of the organisation.
    let with_second = node.login(&second, &a.email, &a.password).await;
    assert_eq!(whoami(&node, &second, &with_second).await, StatusCode::OK);
    assert_eq!(
        whoami(&node, &a.api_key, &with_second).await,
        StatusCode::OK
    );
    // Listed by name and use, never the key itself.
    let r = send(&node, Method::GET, &keys, &a.api_key, &a.token, None).await;
    let text = r.text().await.unwrap();
    assert!(
        !text.contains(&second) && !text.contains(&a.api_key),
        "{text}"
    );
    let listed: Value = serde_json::from_str(&text).unwrap();
    let listed = listed["entities"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed.iter().all(|k| k["lastUsed"].is_string()),
        "{listed:?}"
    );
    assert_eq!(listed[1]["name"], "ci");

    let revoke = format!("{keys}/{second_id}");
    let r = send(&node, Method::DELETE, &revoke, &a.api_key, &a.token, None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // The key is refused, and so is its session presented with the other key.
    assert_eq!(
        whoami(&node, &second, &a.token).await,
        StatusCode::UNAUTHORIZED
    );
    let r = node.get_with_bearer(WHOAMI, &a.api_key, &with_second).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    assert_eq!(whoami(&node, &a.api_key, &a.token).await, StatusCode::OK);
    // Revoked twice: 404.
    let r = send(&node, Method::DELETE, &revoke, &a.api_key, &a.token, None).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;

    let node = node.restart().await;
    assert_eq!(
        whoami(&node, &second, &a.token).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        whoami(&node, &a.api_key, &with_second).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(whoami(&node, &a.api_key, &a.token).await, StatusCode::OK);
    let r = send(&node, Method::GET, &keys, &a.api_key, &a.token, None).await;
    let listed = json_body(r).await;
    assert_eq!(listed["entities"].as_array().unwrap().len(), 1, "{listed}");
}

#[tokio::test]
async fn members_and_other_organisations_cannot_manage_keys() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "admin@one.example", None)
        .await;
    let member = node
        .create_account(&a.api_key, "member@one.example", None)
        .await;
    let b = node
        .create_account(OPERATOR_KEY, "admin@two.example", None)
        .await;
    let keys = org_path(&a.organization, "/keys");
    let body = || Some(json!({"name": "x"}));
    // A member: 403.
    let r = send(&node, Method::GET, &keys, &a.api_key, &member.token, None).await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    let r = send(
        &node,
        Method::POST,
        &keys,
        &a.api_key,
        &member.token,
        body(),
    )
    .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    // Another organisation's admin: 404, reading or writing.
    let r = send(&node, Method::GET, &keys, &b.api_key, &b.token, None).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = send(&node, Method::POST, &keys, &b.api_key, &b.token, body()).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // A key id of another organisation under one's own: 404, and the key still works.
    let b_keys = org_path(&b.organization, "/keys");
    let r = send(&node, Method::GET, &b_keys, &b.api_key, &b.token, None).await;
    let b_key_id = json_body(r).await["entities"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = send(
        &node,
        Method::DELETE,
        &format!("{keys}/{b_key_id}"),
        &a.api_key,
        &a.token,
        None,
    )
    .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    assert_eq!(whoami(&node, &b.api_key, &b.token).await, StatusCode::OK);
    // Bad bodies name the field; nothing was created.
    for (bad, field) in [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": 7}), "name"),
        (json!({"name": "x", "secret": "y"}), "secret"),
    ] {
        let r = send(&node, Method::POST, &keys, &a.api_key, &a.token, Some(bad)).await;
        let e = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(e["properties"]["field"], field, "{e}");
    }
    let r = send(&node, Method::GET, &keys, &a.api_key, &a.token, None).await;
    assert_eq!(json_body(r).await["entities"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_disabled_user_is_refused_everywhere_its_stream_ends_and_an_organisation_keeps_an_admin()
{
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "first@one.example", None)
        .await;
    let m = node
        .create_account(&a.api_key, "second@one.example", None)
        .await;
    let users = org_path(&a.organization, "/users");
    let r = send(&node, Method::GET, &users, &a.api_key, &a.token, None).await;
    let listed = json_body(r).await;
    let roles: Vec<(&str, &str)> = listed["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["email"].as_str().unwrap(), u["role"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [
            ("first@one.example", "admin"),
            ("second@one.example", "member")
        ]
    );
    let user = |u: &str| org_path(&a.organization, &format!("/users/{}", percent_encoded(u)));

    // The only admin cannot step down or disable itself.
    for (body, field) in [
        (json!({"role": "member"}), "role"),
        (json!({"disabled": true}), "disabled"),
    ] {
        let r = send(
            &node,
            Method::PATCH,
            &user(&a.identity),
            &a.api_key,
            &a.token,
            Some(body),
        )
        .await;
        let e = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(e["properties"]["field"], field, "{e}");
    }
    for (body, field) in [
        (json!({"role": "owner"}), "role"),
        (json!({"disabled": "yes"}), "disabled"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let r = send(
            &node,
            Method::PATCH,
            &user(&m.identity),
            &a.api_key,
            &a.token,
            Some(body),
        )
        .await;
        let e = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(e["properties"]["field"], field, "{e}");
    }
    // A member cannot change roles.
    let r = send(
        &node,
        Method::PATCH,
        &user(&m.identity),
        &a.api_key,
        &m.token,
        Some(json!({"role": "admin"})),
    )
    .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    // The admin makes the member an admin, which then disables the first user.
    let r = send(
        &node,
        Method::PATCH,
        &user(&m.identity),
        &a.api_key,
        &a.token,
        Some(json!({"role": "admin"})),
    )
    .await;
    assert_eq!(json_body(r).await["role"], "admin");
    let first = node.login(&a.api_key, &a.email, &a.password).await;
    let mut stream = node
        .client
        .get(node.url("/supply-chain/data-space/notifications/stream"))
        .header("x-api-key", &a.api_key)
        .bearer_auth(&first)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let r = send(
        &node,
        Method::PATCH,
        &user(&a.identity),
        &a.api_key,
        &m.token,
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(json_body(r).await["disabled"], true);
    // The open stream ends (the bound is only against a hang).
    let ended = tokio::time::timeout(Duration::from_secs(120), async {
        while stream.chunk().await.unwrap().is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the disabled user's stream went on");
    for token in [&a.token, &first] {
        let r = node.get_with_bearer(WHOAMI, &a.api_key, token).await;
        assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    }
    // Its login is refused like a wrong password.
    let disabled = assert_error(
        log_in(&node, &a.api_key, &a.email, &a.password).await,
        StatusCode::UNAUTHORIZED,
        "UnauthorizedError",
    )
    .await;
    let wrong = assert_error(
        log_in(&node, &a.api_key, &a.email, "not the password").await,
        StatusCode::UNAUTHORIZED,
        "UnauthorizedError",
    )
    .await;
    assert_eq!(disabled, wrong);

    // Still disabled after a restart; enabled again, it logs in.
    let node = node.restart().await;
    let r = node
        .post_json(
            "/authentication/login",
            Some(&a.api_key),
            &json!({"email": a.email, "password": a.password}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = send(
        &node,
        Method::PATCH,
        &user(&a.identity),
        &a.api_key,
        &m.token,
        Some(json!({"disabled": false})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let token = node.login(&a.api_key, &a.email, &a.password).await;
    assert_eq!(whoami(&node, &a.api_key, &token).await, StatusCode::OK);
    // Another organisation's admin cannot see or touch these users.
    let b = node
        .create_account(OPERATOR_KEY, "admin@two.example", None)
        .await;
    let r = send(&node, Method::GET, &users, &b.api_key, &b.token, None).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = send(
        &node,
        Method::PATCH,
        &org_path(
            &b.organization,
            &format!("/users/{}", percent_encoded(&a.identity)),
        ),
        &b.api_key,
        &b.token,
        Some(json!({"disabled": true})),
    )
    .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    assert_eq!(whoami(&node, &a.api_key, &token).await, StatusCode::OK);
}

#[tokio::test]
async fn a_logged_out_session_and_the_sessions_before_a_password_change_are_refused() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let one = node.login(&a.api_key, &a.email, &a.password).await;
    let two = node.login(&a.api_key, &a.email, &a.password).await;
    let r = node
        .client
        .post(node.url("/authentication/logout"))
        .header("x-api-key", &a.api_key)
        .header("cookie", format!("access_token={one}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let cleared = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cleared.starts_with("access_token=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    // Though unexpired, the token is refused as cookie and as Bearer; the other session stays.
    let r = node.get_with_cookie(WHOAMI, &a.api_key, &one).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    assert_eq!(
        whoami(&node, &a.api_key, &one).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(whoami(&node, &a.api_key, &two).await, StatusCode::OK);

    let r = change_password(
        &node,
        &a.api_key,
        &two,
        "not the password",
        "a new long password",
    )
    .await;
    let e = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    assert_eq!(e["properties"]["field"], "currentPassword");
    let r = change_password(&node, &a.api_key, &two, &a.password, "short").await;
    let e = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    assert_eq!(e["properties"]["field"], "newPassword");
    assert_eq!(
        whoami(&node, &a.api_key, &two).await,
        StatusCode::OK,
        "nothing changed"
    );
    let r = change_password(&node, &a.api_key, &two, &a.password, "a new long password").await;
    assert_eq!(r.status(), StatusCode::OK);
    let renewed = json_body(r).await["token"].as_str().unwrap().to_owned();
    // Every earlier session ended; the caller goes on with the new one.
    for old in [&two, &a.token] {
        assert_eq!(
            whoami(&node, &a.api_key, old).await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(whoami(&node, &a.api_key, &renewed).await, StatusCode::OK);
    assert_eq!(
        log_in(&node, &a.api_key, &a.email, &a.password)
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        log_in(&node, &a.api_key, &a.email, "a new long password")
            .await
            .status(),
        StatusCode::OK
    );

    let node = node.restart().await;
    assert_eq!(
        whoami(&node, &a.api_key, &one).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        whoami(&node, &a.api_key, &two).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(whoami(&node, &a.api_key, &renewed).await, StatusCode::OK);
}

#[tokio::test]
async fn only_the_operator_account_manages_policies_and_organisations() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    // The operator key with a user's session acts as that user, nothing more.
    let as_user = node.login(OPERATOR_KEY, &a.email, &a.password).await;
    let policy = rule(
        &node,
        &a.organization,
        "portOfEntryCountry",
        "eq",
        json!("KE"),
    );
    let r = send(
        &node,
        Method::POST,
        POLICIES,
        OPERATOR_KEY,
        &as_user,
        Some(policy.clone()),
    )
    .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    let r = send(
        &node,
        Method::GET,
        "/organizations",
        OPERATOR_KEY,
        &as_user,
        None,
    )
    .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;

    // The account is made with the operator key alone, once.
    let r = create_operator(&node, None, OPERATOR_PASSWORD).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let r = create_operator(&node, Some(&a.api_key), OPERATOR_PASSWORD).await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    let r = create_operator(&node, Some(OPERATOR_KEY), "short").await;
    let e = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    assert_eq!(e["properties"]["field"], "password");
    assert_eq!(
        create_operator(&node, Some(OPERATOR_KEY), OPERATOR_PASSWORD)
            .await
            .status(),
        StatusCode::CREATED
    );
    let r = create_operator(&node, Some(OPERATOR_KEY), OPERATOR_PASSWORD).await;
    assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
    // It signs in with the operator key only.
    let r = node
        .post_json(
            "/authentication/login",
            Some(&a.api_key),
            &json!({"email": OPERATOR_EMAIL, "password": OPERATOR_PASSWORD}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let operator = node
        .login(OPERATOR_KEY, OPERATOR_EMAIL, OPERATOR_PASSWORD)
        .await;
    let r = send(
        &node,
        Method::POST,
        POLICIES,
        OPERATOR_KEY,
        &operator,
        Some(policy),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = send(
        &node,
        Method::GET,
        "/organizations",
        OPERATOR_KEY,
        &operator,
        None,
    )
    .await;
    let orgs = json_body(r).await;
    assert_eq!(
        orgs["entities"],
        json!([{"id": a.organization, "users": 1, "keys": 1}])
    );
    // It manages any organisation's keys, and a key it makes works for that organisation.
    let keys = org_path(&a.organization, "/keys");
    let r = send(
        &node,
        Method::POST,
        &keys,
        OPERATOR_KEY,
        &operator,
        Some(json!({"name": "ops"})),
    )
    .await;
    let made = json_body(r).await;
    let key = made["apiKey"].as_str().unwrap();
    assert_eq!(whoami(&node, key, &a.token).await, StatusCode::OK);
    // It publishes nothing: the node's account is no organisation's.
    let activity = as_org(example("create-consignment"), &node_did_of(&node));
    let r = send(
        &node,
        Method::POST,
        INBOX,
        OPERATOR_KEY,
        &operator,
        Some(activity),
    )
    .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    // Its session with an organisation's key is nobody's.
    assert_eq!(
        whoami(&node, &a.api_key, &operator).await,
        StatusCode::UNAUTHORIZED
    );
    // An unknown organisation: 404.
    let r = send(
        &node,
        Method::GET,
        &org_path("did:web:elsewhere.example:org:x", "/keys"),
        OPERATOR_KEY,
        &operator,
        None,
    )
    .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn the_audit_log_records_who_changed_what_without_secrets() {
    let node = TestNode::start().await;
    let operator = Operator::new(&node).await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let m = node.create_account(&a.api_key, "m@one.example", None).await;
    let b = node
        .create_account(OPERATOR_KEY, "b@two.example", None)
        .await;
    let keys = org_path(&a.organization, "/keys");
    let r = send(
        &node,
        Method::POST,
        &keys,
        &a.api_key,
        &a.token,
        Some(json!({"name": "ci"})),
    )
    .await;
    let made = json_body(r).await;
    let (secret, key_id) = (
        made["apiKey"].as_str().unwrap().to_owned(),
        made["id"].as_str().unwrap().to_owned(),
    );
    let r = send(
        &node,
        Method::DELETE,
        &format!("{keys}/{key_id}"),
        &a.api_key,
        &a.token,
        None,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let user_path = org_path(
        &a.organization,
        &format!("/users/{}", percent_encoded(&m.identity)),
    );
    let r = send(
        &node,
        Method::PATCH,
        &user_path,
        &a.api_key,
        &a.token,
        Some(json!({"role": "admin"})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let body = json!({"currentPassword": m.password, "newPassword": "another long password"});
    let r = send(
        &node,
        Method::POST,
        "/authentication/password",
        &a.api_key,
        &m.token,
        Some(body),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let rule = rule(
        &node,
        &b.organization,
        "portOfEntryCountry",
        "eq",
        json!("KE"),
    );
    let uid = operator.policy(&node, rule).await["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    operator.delete(&node, &uid).await;

    // The operator reads everything, newest first, a page at a time.
    let mut all = Vec::new();
    let mut path = "/operations/audit?limit=2".to_owned();
    loop {
        let r = operator.send(&node, Method::GET, &path, None).await;
        let text = r.text().await.unwrap();
        for leaked in [
            secret.as_str(),
            &a.api_key,
            &m.password,
            "another long password",
            "argon2",
        ] {
            assert!(!text.contains(leaked), "{leaked} in {text}");
        }
        let page: Value = serde_json::from_str(&text).unwrap();
        all.extend(page["entities"].as_array().unwrap().iter().cloned());
        match page["cursor"].as_str() {
            Some(c) => path = format!("/operations/audit?limit=2&cursor={}", form_encoded(c)),
            None => break,
        }
    }
    let actions: Vec<(&str, &str)> = all
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    let operator_account = all.last().unwrap()["target"].as_str().unwrap();
    assert_eq!(
        actions,
        [
            ("policy.deleted", uid.as_str()),
            ("policy.created", uid.as_str()),
            ("password.changed", m.identity.as_str()),
            ("user.updated", m.identity.as_str()),
            ("key.revoked", key_id.as_str()),
            ("key.created", key_id.as_str()),
            ("user.created", b.identity.as_str()),
            ("key.created", id_of_key(&b.api_key).as_str()),
            ("user.created", m.identity.as_str()),
            ("user.created", a.identity.as_str()),
            ("key.created", id_of_key(&a.api_key).as_str()),
            ("operator.created", operator_account),
        ]
    );
    let by = |action: &str| all.iter().find(|e| e["action"] == action).unwrap().clone();
    assert_eq!(by("key.revoked")["actor"], a.identity.as_str());
    assert_eq!(
        by("user.updated")["details"],
        json!({"role": "admin", "disabled": false})
    );
    assert_eq!(by("password.changed")["actor"], m.identity.as_str());

    // An organisation's admin reads its organisation's entries only; a member none.
    let r = send(
        &node,
        Method::GET,
        "/operations/audit",
        &a.api_key,
        &a.token,
        None,
    )
    .await;
    let own = json_body(r).await;
    let own = own["entities"].as_array().unwrap();
    assert_eq!(own.len(), 7, "{own:?}");
    assert!(own
        .iter()
        .all(|e| e["organization"] == a.organization.as_str()));
    let r = send(
        &node,
        Method::GET,
        "/operations/audit",
        &b.api_key,
        &b.token,
        None,
    )
    .await;
    let theirs = json_body(r).await;
    let theirs: Vec<&str> = theirs["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        theirs,
        [
            "policy.deleted",
            "policy.created",
            "user.created",
            "key.created"
        ]
    );
    let member = node
        .create_account(&b.api_key, "member@two.example", None)
        .await;
    let r = send(
        &node,
        Method::GET,
        "/operations/audit",
        &b.api_key,
        &member.token,
        None,
    )
    .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    let r = send(
        &node,
        Method::GET,
        &format!(
            "/operations/audit?organizationId={}",
            form_encoded(&a.organization)
        ),
        &b.api_key,
        &b.token,
        None,
    )
    .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = operator
        .send(
            &node,
            Method::GET,
            "/operations/audit?cursor=nonsense",
            None,
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
}
