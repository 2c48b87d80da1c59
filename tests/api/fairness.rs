//! One organisation cannot starve the others: its inbox requests in flight are capped
//! (`--inbox-max-concurrent-per-org`, 429 with `Retry-After` beyond) while another's are
//! accepted. The requests held in flight are ones whose body is still being sent: the node
//! counts a request from its headers on, and its `100 Continue` says it has done so — no
//! timing decides what is in flight. (The scheduler's order: `fair::tests`.)

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

const VALIDATE: &str = "/supply-chain/data-space/inbox/validate";

/// A node allowing one inbox request in flight per organisation, with two organisations.
async fn two_organisations() -> (TestNode, Session, Session) {
    let node = TestNode::start_with(|c| {
        c.inbox_max_concurrent_per_org = 1;
        // The held bodies wait on the test, never on this.
        c.read_timeout_secs = 600;
    })
    .await;
    let flood = Session::new(&node, "flood@forwarder.example").await;
    let other = Session::new(&node, "other@carrier.example").await;
    (node, flood, other)
}

/// An activity of `who`'s own: the example consignment with ids numbered `n`.
fn create(who: &Session, n: u32) -> Value {
    consignment_at(who.org(), n, "KEMBA", "2026-12-01T06:00:00Z")
}

/// An inbox post whose headers are sent and whose body is not: once this returns, the node
/// has admitted it (it answered `100 Continue`, which it does when it starts reading the
/// body) and counts it in flight until the body is finished or the connection dropped.
struct Held {
    stream: TcpStream,
    body: Vec<u8>,
}

impl Held {
    async fn open(node: &TestNode, who: &Session, path: &str, activity: &Value) -> Self {
        let body = serde_json::to_vec(activity).unwrap();
        let mut stream = TcpStream::connect(node.base.trim_start_matches("http://"))
            .await
            .unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nx-api-key: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
            who.account.api_key,
            who.token,
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let interim = read_head(&mut stream).await;
        assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");
        Self { stream, body }
    }

    /// Sends the rest of the body; the node's answer's status line.
    async fn finish(mut self) -> String {
        self.stream.write_all(&self.body).await.unwrap();
        read_head(&mut self.stream).await
    }
}

/// The next response head on `stream` (up to its blank line). The limit only turns a node
/// that never answers into a failure instead of a hang.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    let read = async {
        while !out.ends_with(b"\r\n\r\n") {
            let n = stream.read(&mut byte).await.unwrap();
            assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&out));
            out.push(byte[0]);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("a response head");
    String::from_utf8_lossy(&out).into_owned()
}

async fn assert_too_many(r: reqwest::Response) {
    let retry_after = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(retry_after.is_some_and(|s| s >= 1), "{:?}", r.headers());
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "GeneralError").await;
}

#[tokio::test]
async fn an_organisation_beyond_its_inbox_limit_gets_429_while_another_is_accepted() {
    let (node, flood, other) = two_organisations().await;
    let held = Held::open(&node, &flood, INBOX, &create(&flood, 1)).await;
    // The flooding organisation's next post, and its validation, are refused at once ...
    assert_too_many(flood.post(&node, &create(&flood, 2)).await).await;
    let r = node
        .client
        .post(node.url(VALIDATE))
        .header("x-api-key", &flood.account.api_key)
        .bearer_auth(&flood.token)
        .json(&create(&flood, 2))
        .send()
        .await
        .unwrap();
    assert_too_many(r).await;
    // ... while the other organisation's post at the same moment is applied.
    assert_completed(&other.publish(&node, &create(&other, 3)).await);
    // The held post goes through once its body arrives, and its place is free again.
    let status = held.finish().await;
    assert!(status.starts_with("HTTP/1.1 201"), "{status}");
    assert_completed(&flood.publish(&node, &create(&flood, 2)).await);
}

#[tokio::test]
async fn the_limit_counts_each_organisation_on_its_own() {
    let node = TestNode::start_with(|c| {
        c.inbox_max_concurrent_per_org = 2;
        c.read_timeout_secs = 600;
    })
    .await;
    let flood = Session::new(&node, "flood@forwarder.example").await;
    let other = Session::new(&node, "other@carrier.example").await;
    let first = Held::open(&node, &flood, INBOX, &create(&flood, 1)).await;
    let second = Held::open(&node, &flood, VALIDATE, &create(&flood, 2)).await;
    assert_too_many(flood.post(&node, &create(&flood, 3)).await).await;
    // The other organisation holds as many as its own limit allows, too.
    let theirs = Held::open(&node, &other, INBOX, &create(&other, 4)).await;
    assert_completed(&other.publish(&node, &create(&other, 5)).await);
    for held in [first, second, theirs] {
        let status = held.finish().await;
        assert!(
            status.starts_with("HTTP/1.1 201") || status.starts_with("HTTP/1.1 200"),
            "{status}"
        );
    }
}

#[tokio::test]
async fn a_client_that_leaves_mid_body_frees_its_place() {
    let (node, flood, _) = two_organisations().await;
    let held = Held::open(&node, &flood, INBOX, &create(&flood, 1)).await;
    assert_too_many(flood.post(&node, &create(&flood, 2)).await).await;
    drop(held);
    // The node sees the connection go when it next reads the body, an instant later; the
    // deadline only fails a node that never frees the place.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = flood.post(&node, &create(&flood, 2)).await;
        if r.status() != StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(r.status(), StatusCode::CREATED);
            break;
        }
        assert!(Instant::now() < deadline, "the place was never freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = flood
        .get(&node, "/supply-chain/data-space/consignments")
        .await;
    let list = json_body(r).await;
    assert_eq!(list["entities"].as_array().map(Vec::len), Some(1), "{list}");
}
