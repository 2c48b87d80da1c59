//! Health, error shapes for routes, methods and body size, secrets, restarts.

use std::os::unix::fs::PermissionsExt;

use reqwest::StatusCode;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn health_needs_no_credentials_and_requests_get_an_id() {
    let node = TestNode::start().await;
    let r = node.client.get(node.url("/health")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers().get("x-request-id").is_some());
    assert_eq!(json_body(r).await["status"], "ok");
    // A caller-chosen request id is echoed back.
    let r = node
        .client
        .get(node.url("/health"))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "trace-me-42");
}

#[tokio::test]
async fn unknown_route_is_404_and_wrong_method_is_405() {
    let node = TestNode::start().await;
    let r = node
        .client
        .get(node.url("/no/such/thing"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = node
        .client
        .get(node.url("/authentication/login"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::METHOD_NOT_ALLOWED, "GeneralError").await;
}

#[tokio::test]
async fn body_over_the_limit_is_413() {
    let node = TestNode::start_with(|c| c.body_limit_bytes = 1024).await;
    let big = json!({"email": "a@one.example", "password": "x".repeat(4096)});
    let r = node
        .post_json("/authentication/login/create", Some(OPERATOR_KEY), &big)
        .await;
    let v = assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "GeneralError").await;
    assert_eq!(v["properties"]["limitBytes"], 1024);
    // Still serving.
    node.create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
}

#[tokio::test]
async fn generated_operator_key_is_kept_private_and_survives_restarts() {
    let node = TestNode::start_with(|c| c.api_key = None).await;
    let path = node.data_dir().join("secrets/operator-api-key");
    let key = std::fs::read_to_string(&path).unwrap().trim().to_string();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(key.len() >= 40);
    let a = node.create_account(&key, "a@one.example", None).await;
    let node = node.restart().await;
    assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), key);
    // The session issued before the restart is still valid: the signing key was persisted.
    let r = node
        .get_with_bearer("/authentication/session", &a.api_key, &a.token)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    node.create_account(&key, "b@two.example", None).await;
}

#[tokio::test]
async fn accounts_survive_a_restart() {
    let node = TestNode::start().await;
    let a = node
        .create_account(OPERATOR_KEY, "a@one.example", None)
        .await;
    let node = node.restart().await;
    let token = node.login(&a.api_key, &a.email, &a.password).await;
    let r = node
        .get_with_cookie("/authentication/session", &a.api_key, &token)
        .await;
    assert_eq!(
        json_body(r).await["organizationId"],
        a.organization.as_str()
    );
    // The organisation key still adds users after the restart (its hash was reloaded).
    let a2 = node
        .create_account(&a.api_key, "a2@one.example", None)
        .await;
    assert_eq!(a2.organization, a.organization);
}

/// `/metrics` is the operator's, in the Prometheus text format, and counts what the node did:
/// read back with an independent parser of the format after known traffic.
#[tokio::test]
async fn metrics_count_requests_activities_queries_and_throttled_logins() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let create = as_org(example("create-consignment"), trader.org());
    // Applied, then a replay.
    for expected in [StatusCode::CREATED, StatusCode::OK] {
        let r = node
            .client
            .post(node.url("/supply-chain/data-space/inbox"))
            .header("x-api-key", &trader.account.api_key)
            .bearer_auth(&trader.token)
            .json(&create)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), expected);
    }
    let r = query(&node, &trader, "SELECT * WHERE { ?s ?p ?o } LIMIT 1", &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    for _ in 0..8 {
        node.client
            .post(node.url("/authentication/login"))
            .header("x-api-key", &trader.account.api_key)
            .json(&json!({"email": trader.account.email, "password": "not the password"}))
            .send()
            .await
            .unwrap();
    }

    let scrape = |key: Option<&str>| {
        let mut r = node.client.get(node.url("/metrics"));
        if let Some(key) = key {
            r = r.bearer_auth(key);
        }
        r.send()
    };
    assert_error(
        scrape(None).await.unwrap(),
        StatusCode::UNAUTHORIZED,
        "UnauthorizedError",
    )
    .await;
    let organisation = Some(trader.account.api_key.as_str());
    assert_error(
        scrape(organisation).await.unwrap(),
        StatusCode::FORBIDDEN,
        "GeneralError",
    )
    .await;
    let r = scrape(Some(OPERATOR_KEY)).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = r.text().await.unwrap();
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scraped = prometheus_parse::Scrape::parse(lines).unwrap();
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        scraped
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    let inbox = "/supply-chain/data-space/inbox";
    assert_eq!(
        value(
            "dataspace_inbox_activities_total",
            &[("type", "Create"), ("outcome", "applied")]
        ),
        1.0
    );
    assert_eq!(
        value(
            "dataspace_inbox_activities_total",
            &[("type", "Create"), ("outcome", "replayed")]
        ),
        1.0
    );
    let posted = |status| {
        value(
            "dataspace_http_requests_total",
            &[("method", "POST"), ("route", inbox), ("status", status)],
        )
    };
    assert_eq!((posted("201"), posted("200")), (1.0, 1.0));
    assert_eq!(
        value(
            "dataspace_sparql_queries_total",
            &[("source", "store"), ("outcome", "ok")]
        ),
        1.0
    );
    assert!(
        value("dataspace_login_throttled_total", &[]) >= 1.0,
        "{text}"
    );
    for present in [
        "dataspace_webhook_waiting_deliveries",
        "dataspace_outbox_waiting_notices",
    ] {
        assert!(
            scraped.samples.iter().any(|s| s.metric == present),
            "{present}: {text}"
        );
    }
    for gauge in [
        "process_resident_memory_bytes",
        "process_open_fds",
        "dataspace_store_size_bytes",
    ] {
        assert!(value(gauge, &[]) > 0.0, "{gauge}: {text}");
    }
    // The write path: the account, the session and the Create each committed; one sync
    // covers one commit or several.
    let commits = value("dataspace_store_commits_total", &[]);
    let syncs = value("dataspace_store_syncs_total", &[]);
    assert!(commits >= 3.0, "{text}");
    assert!(syncs >= 1.0 && syncs <= commits, "{text}");
    assert!(
        value("dataspace_store_writer_lock_seconds_total", &[]) > 0.0,
        "{text}"
    );
    // Latencies are histograms by route template.
    assert!(
        text.contains(&format!(
            "dataspace_http_request_duration_seconds_count{{method=\"POST\",route=\"{inbox}\"}} 2"
        )),
        "{text}"
    );
    // No organisation, user or caller's text in any label.
    assert!(
        !text.contains("did:web") && !text.contains("forwarder"),
        "{text}"
    );
}

/// `--metrics false`: nothing counted, and `/metrics` is 404 even for the operator.
#[tokio::test]
async fn metrics_off_answers_404() {
    let node = TestNode::start_with(|c| c.metrics = false).await;
    let r = node
        .client
        .get(node.url("/metrics"))
        .bearer_auth(OPERATOR_KEY)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // The other routes answer as before.
    let r = node.client.get(node.url("/health")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}
