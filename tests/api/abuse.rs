//! Abuse: slow clients, many connections, expensive queries — the node cuts off what it must
//! and keeps answering everyone else. (Oversized bodies: `operations`; login brute force:
//! `accounts`; the SPARQL time limit and row cap: `sparql`.)

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

fn addr(node: &TestNode) -> String {
    node.base.trim_start_matches("http://").to_owned()
}

/// Reads what the server sends until it closes the connection (or `limit` passes).
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&out).into_owned()),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// `GET /health` answered. The deadline only catches a node that stopped answering: what the
/// tests below check is that others are served *while* the abuse goes on (an ordering), not
/// how fast — speed is the benchmark's.
async fn health_answers(node: &TestNode) {
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        node.client.get(node.url("/health")).send(),
    )
    .await
    .expect("health answered")
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

/// Whether the server has neither written to nor closed `stream` yet.
async fn still_open(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1];
    tokio::time::timeout(Duration::from_millis(10), stream.read(&mut buf))
        .await
        .is_err()
}

#[tokio::test]
async fn a_client_that_trickles_its_headers_is_cut_off() {
    let node = TestNode::start_with(|c| c.read_timeout_secs = 5).await;
    let mut slow = TcpStream::connect(addr(&node)).await.unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    health_answers(&node).await;
    assert!(
        still_open(&mut slow).await,
        "others are served while the slow client still holds its connection"
    );
    // No more header lines: the server gives up after the read timeout and closes.
    let answer = read_until_closed(&mut slow, Duration::from_secs(30)).await;
    let answer = answer.expect("the server closed the connection");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_client_that_trickles_its_body_gets_408() {
    let node = TestNode::start_with(|c| c.read_timeout_secs = 1).await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut slow = TcpStream::connect(addr(&node)).await.unwrap();
    let head = format!(
        "POST {INBOX} HTTP/1.1\r\nHost: x\r\nx-api-key: {}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"type\":",
        trader.account.api_key, trader.token
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let answer = read_until_closed(&mut slow, Duration::from_secs(5))
        .await
        .expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("GeneralError"), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(900));
    health_answers(&node).await;
}

#[tokio::test]
async fn a_thousand_concurrent_connections_are_served_and_health_is_answered_meanwhile() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    // 1,000 clients, each on its own connection, reading the list at the same time.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..1000 {
        let client = client.clone();
        let url = node.url("/supply-chain/data-space/consignments");
        let (key, token) = (trader.account.api_key.clone(), trader.token.clone());
        tasks.push(tokio::spawn(async move {
            client
                .get(url)
                .header("x-api-key", key)
                .bearer_auth(token)
                .send()
                .await
                .map(|r| r.status())
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    health_answers(&node).await;
    let mut ok = 0;
    for t in tasks {
        let status = t.await.unwrap().expect("every client got an answer");
        assert!(
            status == StatusCode::OK || status == StatusCode::SERVICE_UNAVAILABLE,
            "{status}"
        );
        ok += usize::from(status == StatusCode::OK);
    }
    assert!(ok > 0);
    health_answers(&node).await;
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_at_once() {
    let node = TestNode::start_with(|c| {
        c.max_connections = 20;
        c.read_timeout_secs = 2;
    })
    .await;
    // Let the health checks of start-up close their connections.
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(TcpStream::connect(addr(&node)).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = TcpStream::connect(addr(&node)).await.unwrap();
    extra
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .ok();
    // Generous for a loaded machine: a connection the node kept instead would be answered once
    // the idle ones are cut off (2 s), and the answer checked below would not be empty.
    let answer = read_until_closed(&mut extra, Duration::from_secs(20))
        .await
        .expect("closed at once");
    assert_eq!(answer, "", "no answer beyond the cap");
    // The idle connections are cut off after the read timeout; the node serves again.
    drop(idle);
    let mut served = false;
    for _ in 0..50 {
        if let Ok(r) = node.client.get(node.url("/health")).send().await {
            served = r.status() == StatusCode::OK;
            if served {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served);
}

#[tokio::test]
async fn an_expensive_query_runs_out_its_time_while_others_are_served() {
    let node = TestNode::start_with(|c| c.sparql_timeout_secs = 5).await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let (key, token) = (trader.account.api_key.clone(), trader.token.clone());
    let client = node.client.clone();
    let url = node.url("/supply-chain/data-space/sparql");
    let running = tokio::spawn(async move {
        client
            .post(url)
            .header("x-api-key", key)
            .bearer_auth(token)
            .form(&[("query", EXPENSIVE)])
            .send()
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    health_answers(&node).await;
    let r = trader
        .get(&node, "/supply-chain/data-space/consignments")
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        !running.is_finished(),
        "the list is answered while the query still runs"
    );
    let body = assert_error(
        running.await.unwrap(),
        StatusCode::SERVICE_UNAVAILABLE,
        "GeneralError",
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("time limit"),
        "{body}"
    );
}

/// `POST` of `q` to the SPARQL endpoint as `who`.
async fn post_query(node: &TestNode, who: &Session, q: String) -> reqwest::Response {
    node.client
        .post(node.url(SPARQL))
        .header("content-type", "application/sparql-query")
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token)
        .body(q)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn queries_nested_deeper_than_a_stack_holds_are_refused_and_the_node_stays_up() {
    let node = TestNode::start().await;
    let analyst = Session::new(&node, "analyst@customs.example").await;
    let nested = |n: usize| format!("SELECT * {{ FILTER({}1{}) }}", "(".repeat(n), ")".repeat(n));
    let union = |n: usize| format!("SELECT * {{ {} }}", vec!["{ ?s ?p ?o }"; n].join(" UNION "));
    let optional = |n: usize| {
        format!(
            "SELECT * {{ ?s ?p ?o {} }}",
            "OPTIONAL { ?s ?p ?o } ".repeat(n)
        )
    };
    let path = |n: usize| format!("SELECT * {{ ?s {} ?o }}", vec!["<urn:p>"; n].join("/"));
    let sum = |n: usize| format!("SELECT (1{} AS ?x) {{}}", "+1".repeat(n));
    let group = |n: usize| {
        let patterns: String = (0..n)
            .map(|i| format!("<urn:s> <urn:p{i}> ?o{i} . "))
            .collect();
        format!("SELECT * {{ {patterns} }}")
    };
    let binds = |n: usize| {
        let binds: String = (0..n).map(|i| format!("BIND({i} AS ?v{i}) ")).collect();
        format!("SELECT * {{ {binds} }}")
    };
    // Each of these aborted the whole process before (a thread out of stack).
    for (q, what) in [
        (nested(1000), "nests brackets"),
        (
            format!("SELECT * {}?s ?p ?o{}", "{".repeat(1000), "}".repeat(1000)),
            "nests brackets",
        ),
        (union(3000), "triple patterns"),
        (optional(3000), "triple patterns"),
        (path(3000), "path steps"),
        (group(2500), "triple patterns"),
        // The planner's time grows with the cube of these (`sparql::depth`).
        (union(65), "triple patterns"),
        (optional(43), "triple patterns"),
        (path(1000), "triple patterns"),
        (group(129), "triple patterns"),
        (sum(100_000), "levels"),
        (sum(500_000), "levels"),
        (
            format!("SELECT * {{ {} }}", "?s ?p ?o ".repeat(200_000)),
            "bytes",
        ),
        // Brackets behind a comparison's `<` that a later `>` made look like an IRI.
        (
            format!(
                "SELECT * {{ FILTER(1<{}1{}>0) }}",
                "(".repeat(30_000),
                ")".repeat(30_000)
            ),
            "nests brackets",
        ),
        // Evaluated as its pattern once per described resource.
        (
            format!(
                "DESCRIBE {} {{}}",
                (0..100_000).map(|i| format!("?v{i} ")).collect::<String>()
            ),
            "triple patterns",
        ),
    ] {
        let r = post_query(&node, &analyst, q.clone()).await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert!(body.to_string().contains(what), "{}: {body}", &q[..60]);
    }
    // Within the limits, as deep as they allow, answered.
    for q in [
        nested(100),
        union(64),
        optional(42),
        path(128),
        group(128),
        binds(1000),
        sum(1500),
    ] {
        let r = post_query(&node, &analyst, q.clone()).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", &q[..60]);
    }
    health_answers(&node).await;
}

#[tokio::test]
async fn an_activity_failing_at_every_value_gets_a_bounded_answer() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut create = as_org(example("create-consignment"), trader.org());
    // A 200 KB key over 10,000 items: each item's path repeated the key (2 GB of paths), and
    // the entry listed a failure for every one.
    let key = format!("q{}", "a".repeat(200_000));
    let items: Vec<serde_json::Value> =
        (0..10_000).map(|i| serde_json::json!({ "z": i })).collect();
    create["object"][key.as_str()] = serde_json::json!({ "k": items });
    let r = trader.publish(&node, &create).await;
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.len() < 200_000, "{} bytes", text.len());
    let error = &r["tasks"][0]["error"]["cause"]["properties"];
    let listed = error["failures"].as_array().unwrap().len();
    assert!((1..=200).contains(&listed), "{listed}");
    assert!(
        error["failures"][0]["path"].as_str().unwrap().contains('…'),
        "{error}"
    );
    health_answers(&node).await;
}
