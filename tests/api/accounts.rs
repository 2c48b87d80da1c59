//! POST /authentication/login/create and POST /authentication/login.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::*;

const CREATE: &str = "/authentication/login/create";
const LOGIN: &str = "/authentication/login";

#[tokio::test]
async fn create_needs_a_known_api_key() {
    let node = TestNode::start().await;
    let body = json!({"email": "a@example.com", "password": "long enough"});
    let r = node.post_json(CREATE, None, &body).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let r = node.post_json(CREATE, Some("not-a-key"), &body).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn operator_creates_an_organisation_with_did_identities() {
    let node = TestNode::start().await;
    let r = node
        .post_json(
            CREATE,
            Some(OPERATOR_KEY),
            &json!({"email": "Trader@Example.com", "password": "long enough", "profileName": "Ana"}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v = json_body(r).await;
    let host = node.base.trim_start_matches("http://").replace(':', "%3A");
    let org = v["organizationId"].as_str().unwrap();
    let user = v["identity"].as_str().unwrap();
    assert!(org.starts_with(&format!("did:web:{host}:org:")), "{org}");
    assert!(user.starts_with(&format!("did:web:{host}:user:")), "{user}");
    assert!(v["apiKey"].as_str().unwrap().len() > 32);
    assert!(v["token"].as_str().unwrap().split('.').count() == 3);
    let expiry = v["expiry"].as_i64().unwrap();
    let now_ms = chrono::Utc::now().timestamp_millis();
    assert!(
        expiry > now_ms + 3_500_000 && expiry < now_ms + 3_700_000,
        "{expiry}"
    );
    // The email was normalised: login with any case works.
    node.login(
        v["apiKey"].as_str().unwrap(),
        "trader@example.com",
        "long enough",
    )
    .await;
}

#[tokio::test]
async fn organisation_key_adds_users_to_its_own_organisation_only() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let b = node
        .create_account(OPERATOR_KEY, "b@two.example", None)
        .await;
    assert_ne!(a.organization, b.organization);

    let a2 = node
        .create_account(&a.api_key, "a2@one.example", None)
        .await;
    assert_eq!(a2.organization, a.organization);
    assert_eq!(a2.api_key, a.api_key);

    let r = node
        .post_json(
            CREATE,
            Some(&a.api_key),
            &json!({"email": "x@one.example", "password": "long enough", "organizationId": b.organization}),
        )
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
}

#[tokio::test]
async fn operator_joins_an_existing_organisation() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let joined = node
        .create_account(OPERATOR_KEY, "second@one.example", Some(&a.organization))
        .await;
    assert_eq!(joined.organization, a.organization);
    // The key handed out on joining works for the organisation, and so does the first one.
    node.login(&joined.api_key, "second@one.example", &joined.password)
        .await;
    node.login(&a.api_key, "second@one.example", &joined.password)
        .await;
}

#[tokio::test]
async fn unknown_organisation_is_404() {
    let node = TestNode::start().await;
    let r = node
        .post_json(
            CREATE,
            Some(OPERATOR_KEY),
            &json!({"email": "a@one.example", "password": "long enough",
                    "organizationId": "did:web:nowhere.example:org:missing"}),
        )
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // Nothing was created: the email is still free.
    node.create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
}

#[tokio::test]
async fn duplicate_email_is_500_and_the_first_account_still_works() {
    let node = TestNode::start().await;
    let first = node
        .create_account(OPERATOR_KEY, "dup@example.com", None)
        .await;
    let r = node
        .post_json(
            CREATE,
            Some(OPERATOR_KEY),
            &json!({"email": "DUP@example.com", "password": "another password"}),
        )
        .await;
    let body = assert_error(r, StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError").await;
    assert!(body["message"].as_str().unwrap().contains("already exists"));
    node.login(&first.api_key, "dup@example.com", &first.password)
        .await;
    let r = node
        .post_json(
            LOGIN,
            Some(&first.api_key),
            &json!({"email": "dup@example.com", "password": "another password"}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn concurrent_creation_with_one_email_succeeds_once() {
    let node = TestNode::start().await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let client = node.client.clone();
        let url = node.url(CREATE);
        tasks.push(tokio::spawn(async move {
            client
                .post(url)
                .header("x-api-key", OPERATOR_KEY)
                .json(&json!({"email": "race@example.com", "password": "long enough"}))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut created = 0;
    for t in tasks {
        let status = t.await.unwrap();
        if status == StatusCode::CREATED {
            created += 1;
        } else {
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        }
    }
    assert_eq!(created, 1);
}

#[tokio::test]
async fn create_rejects_bad_fields_naming_them() {
    let node = TestNode::start().await;
    let cases = [
        (json!({"password": "long enough"}), "email"),
        (json!({"email": "a@example.com"}), "password"),
        (
            json!({"email": "not-an-email", "password": "long enough"}),
            "email",
        ),
        (
            json!({"email": "a@example.com", "password": "short"}),
            "password",
        ),
        (json!({"email": 5, "password": "long enough"}), "email"),
        (
            json!({"email": "a@example.com", "password": "long enough", "profileName": 3}),
            "profileName",
        ),
        (
            json!({"email": "a@example.com", "password": "long enough", "organizationId": "acme"}),
            "organizationId",
        ),
    ];
    for (body, field) in cases {
        let r = node.post_json(CREATE, Some(OPERATOR_KEY), &body).await;
        let v = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(v["properties"]["field"], field, "{body} → {v}");
    }
    let r = node
        .client
        .post(node.url(CREATE))
        .header("x-api-key", OPERATOR_KEY)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let r = node
        .post_json(CREATE, Some(OPERATOR_KEY), &json!([1, 2]))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
}

#[tokio::test]
async fn login_sets_the_session_cookie() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let r = node
        .post_json(
            LOGIN,
            Some(&a.api_key),
            &json!({"email": a.email, "password": a.password}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    let token = session_cookie(&r).unwrap();
    assert_eq!(
        cookie,
        format!("access_token={token}; HttpOnly; Path=/; SameSite=Strict")
    );
    let v = json_body(r).await;
    assert_eq!(v["identity"], a.identity.as_str());
    assert!(v["expiry"].as_i64().unwrap() > chrono::Utc::now().timestamp_millis());
    assert_eq!(v.as_object().unwrap().len(), 2, "{v}");
    // The operator key also logs a user in.
    node.login(OPERATOR_KEY, &a.email, &a.password).await;
}

#[tokio::test]
async fn login_cookie_is_secure_behind_an_https_base_url() {
    let node = TestNode::start_with(|c| c.base_url = Some("https://node.example.com".into())).await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    assert!(a.organization.starts_with("did:web:node.example.com:org:"));
    let r = node
        .post_json(
            LOGIN,
            Some(&a.api_key),
            &json!({"email": a.email, "password": a.password}),
        )
        .await;
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.ends_with("; HttpOnly; Path=/; SameSite=Strict; Secure"),
        "{cookie}"
    );
}

#[tokio::test]
async fn login_failures_are_401_with_one_message() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let wrong_password = node
        .post_json(
            LOGIN,
            Some(&a.api_key),
            &json!({"email": a.email, "password": "wrong password"}),
        )
        .await;
    let m1 = assert_error(
        wrong_password,
        StatusCode::UNAUTHORIZED,
        "UnauthorizedError",
    )
    .await;
    let unknown_email = node
        .post_json(
            LOGIN,
            Some(&a.api_key),
            &json!({"email": "nobody@one.example", "password": "wrong password"}),
        )
        .await;
    let m2 = assert_error(unknown_email, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    assert_eq!(m1["message"], m2["message"]);

    let r = node
        .post_json(
            LOGIN,
            None,
            &json!({"email": a.email, "password": a.password}),
        )
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let b = node
        .create_account(OPERATOR_KEY, "b@two.example", None)
        .await;
    let r = node
        .post_json(
            LOGIN,
            Some(&b.api_key),
            &json!({"email": a.email, "password": a.password}),
        )
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn login_rejects_missing_or_malformed_fields() {
    let node = TestNode::start().await;
    for body in [
        json!({"password": "long enough"}),
        json!({"email": "a@one.example"}),
        json!({"email": "a@one.example", "password": 12345678}),
        json!({"email": "no-at-sign", "password": "long enough"}),
    ] {
        let r = node.post_json(LOGIN, Some(OPERATOR_KEY), &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    }
}

#[tokio::test]
async fn repeated_failures_are_throttled() {
    let node = TestNode::start_with(|c| c.login_max_failures = 3).await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let bad = json!({"email": a.email, "password": "wrong password"});
    for _ in 0..3 {
        let r = node.post_json(LOGIN, Some(&a.api_key), &bad).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    // Locked now, even with the right password.
    let r = node
        .post_json(
            LOGIN,
            Some(&a.api_key),
            &json!({"email": a.email, "password": a.password}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 0 && retry <= 300);
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "GeneralError").await;
}

/// The failures used to be counted after the ~45 ms password check, so a burst of attempts all
/// passed the check-before: 40 concurrent ones got 32 password checks with a limit of 5.
#[tokio::test]
async fn concurrent_logins_for_one_email_get_at_most_the_limit_of_password_checks() {
    let node = TestNode::start().await;
    let limit = node.config.login_max_failures as usize;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let spellings = [
        "a@one.example",
        "A@ONE.example",
        "  a@One.Example",
        "a@one.EXAMPLE\t",
    ];
    let attempts = (0..40).map(|i| {
        let body =
            json!({"email": spellings[i % spellings.len()], "password": format!("wrong {i}")});
        let (node, key) = (&node, a.api_key.as_str());
        async move { node.post_json(LOGIN, Some(key), &body).await }
    });
    let answers = futures_util::future::join_all(attempts).await;
    let mut checked = 0;
    for r in answers {
        match r.status() {
            StatusCode::UNAUTHORIZED => checked += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(r.headers().contains_key("retry-after"));
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(checked <= limit, "{checked} password checks, limit {limit}");
    assert!(checked > 0);
}

/// A key of another organisation must not turn login into a password oracle: the answer for a
/// user the key cannot log in is the answer for a wrong password, whatever the password.
#[tokio::test]
async fn a_key_of_another_organisation_answers_like_a_wrong_password() {
    let node = TestNode::start().await;
    let x = node
        .create_account(OPERATOR_KEY, "x@one.example", None)
        .await;
    let y = node
        .create_account(OPERATOR_KEY, "y@two.example", None)
        .await;
    let answer = |password: &str| {
        let body = json!({"email": x.email, "password": password});
        let (node, key) = (&node, y.api_key.as_str());
        async move {
            let r = node.post_json(LOGIN, Some(key), &body).await;
            (r.status(), r.bytes().await.unwrap())
        }
    };
    let right = answer(&x.password).await;
    let wrong = answer("wrong password").await;
    assert_eq!(right.0, StatusCode::UNAUTHORIZED);
    assert_eq!(right, wrong, "{:?} / {:?}", right.1, wrong.1);
    // And it is the answer of a wrong password with the right key.
    let own = node
        .post_json(
            LOGIN,
            Some(&x.api_key),
            &json!({"email": x.email, "password": "wrong password"}),
        )
        .await;
    assert_eq!((own.status(), own.bytes().await.unwrap()), wrong);
}

/// Attempts are counted before the password check; a login that succeeds takes its count back,
/// so users behind one address who know their passwords never lock the address out.
#[tokio::test]
async fn successful_logins_do_not_use_up_the_attempts() {
    // One attempt per email, four per client address.
    let node = TestNode::start_with(|c| c.login_max_failures = 1).await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    for _ in 0..6 {
        node.login(&a.api_key, &a.email, &a.password).await;
    }
    let bad = json!({"email": a.email, "password": "wrong password"});
    let r = node.post_json(LOGIN, Some(&a.api_key), &bad).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = node.post_json(LOGIN, Some(&a.api_key), &bad).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
}

/// Another organisation's key can never log a user in; its failed attempts on the user's email
/// must not lock the user out of the own organisation's key.
#[tokio::test]
async fn another_organisations_failures_do_not_lock_a_user_out() {
    let node = TestNode::start_with(|c| c.login_max_failures = 3).await;
    let x = node
        .create_account(OPERATOR_KEY, "x@one.example", None)
        .await;
    let y = node
        .create_account(OPERATOR_KEY, "y@two.example", None)
        .await;
    let bad = json!({"email": x.email, "password": "wrong password"});
    for _ in 0..3 {
        let r = node.post_json(LOGIN, Some(&y.api_key), &bad).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = node.post_json(LOGIN, Some(&y.api_key), &bad).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    node.login(&x.api_key, &x.email, &x.password).await;
    // Its own key's failures still count for it.
    for _ in 0..3 {
        let r = node.post_json(LOGIN, Some(&x.api_key), &bad).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = node.post_json(LOGIN, Some(&x.api_key), &bad).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
}
