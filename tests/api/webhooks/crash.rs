//! Deliveries survive a SIGKILL: queued in the commit, picked up by the next start.

use serde_json::json;

use super::delivery::{hook, types};
use super::receiver::Receiver;
use crate::common::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_node_killed_while_its_receiver_is_down_delivers_every_event_once_both_are_back() {
    let dir = tempfile::tempdir().unwrap();
    let bind = format!("127.0.0.1:{}", free_port());
    let args = [
        "--bind",
        bind.as_str(),
        "--webhook-allow-http",
        "127.0.0.1",
        "--webhook-retry-base-ms",
        "50",
    ];
    let receiver = Receiver::start().await;
    let addr = receiver.addr.to_string();
    let mut running = NodeProcess::spawn_on(dir.path(), &args);
    let trader = Session::new(&running.node, "sigkill@example.com").await;
    let (_, secret) = hook(
        &running.node,
        &trader,
        &receiver,
        json!(["consignment.created", "consignment.event_added"]),
    )
    .await;
    receiver.stop();
    let node = &running.node;
    trader
        .publish(node, &as_org(example("create-consignment"), trader.org()))
        .await;
    for (n, code) in ["tlip:vessel-departed", "tlip:vessel-arrived"]
        .iter()
        .enumerate()
    {
        let at = format!("2026-12-0{}T09:00:00Z", n + 1);
        trader
            .publish(node, &example_event(&trader, code, &at))
            .await;
    }
    running.kill();
    let running = NodeProcess::spawn_on(dir.path(), &args);
    let receiver = Receiver::start_at(&addr).await;
    let got = receiver.wait_for(3).await;
    assert_eq!(
        types(&got),
        [
            "consignment.created",
            "consignment.event_added",
            "consignment.event_added"
        ]
    );
    assert!(got.iter().all(|r| r.signed_by(&secret)));
    let mut ids: Vec<String> = got.iter().map(|r| r.id()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three deliveries, each under its own id");
    drop(running);
}
