//! Start-up from the models snapshot a clean shutdown saves (store/snapshot.rs): the next start
//! serves the same lists and notifications without rebuilding them, and a snapshot that does
//! not describe the store as it is now is never used.

use serde_json::{json, Value};

use crate::common::*;

const SHARED: &str = "/supply-chain/data-space/consignments?scope=shared";

/// Publishes consignment `i`: the Kenyan example, so the agency's rule routes it.
async fn publish(node: &TestNode, trader: &Session, i: usize) {
    let mut activity = as_org(example("create-consignment"), trader.org());
    activity["object"]["identifier"] = json!(format!("S-{i}"));
    activity["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-8000-{i:012}"));
    assert_completed(&trader.publish(node, &activity).await);
}

/// What the trader and the agency see: own list, shared list, notifications (ids in order).
async fn seen(node: &TestNode, trader: &Session, agency: &Session) -> [Vec<String>; 3] {
    let field = |v: Value, key: &str| -> Vec<String> {
        v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[key].to_string())
            .collect()
    };
    [
        field(ok_json(trader.get(node, LIST).await).await, "identifier"),
        field(ok_json(agency.get(node, SHARED).await).await, "identifier"),
        field(ok_json(agency.get(node, NOTIFICATIONS).await).await, "id"),
    ]
}

fn snapshot_file(node: &TestNode) -> std::path::PathBuf {
    node.data_dir().join("models.snapshot")
}

#[tokio::test]
async fn the_models_saved_at_a_clean_shutdown_serve_the_next_start() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    for i in 0..4 {
        publish(&node, &trader, i).await;
    }
    let before = seen(&node, &trader, &agency).await;
    assert_eq!(before[0].len(), 4);
    assert_eq!(before[1], before[0], "every one routed to the agency");
    assert_eq!(before[2].len(), 4);
    let file = snapshot_file(&node);
    assert!(!file.exists(), "no snapshot while the node runs");
    let halted = node.halt().await;
    assert!(file.exists(), "saved at the clean shutdown");
    let node = TestNode::start_again(halted).await;
    assert!(!file.exists(), "taken at the start");
    assert_eq!(seen(&node, &trader, &agency).await, before);
    // The models go on from where they were: the next consignment lists first, the next
    // notification number follows the last one.
    publish(&node, &trader, 4).await;
    let after = seen(&node, &trader, &agency).await;
    assert_eq!(after[0][0], "\"S-4\"");
    assert_eq!(after[0][1..], before[0][..]);
    assert_eq!(after[1][0], "\"S-4\"");
    let number = |s: &str| s.trim_matches('"').parse::<u64>().unwrap();
    assert!(number(&after[2][0]) > number(&before[2][0]));
    assert_eq!(after[2][1..], before[2][..]);
}

#[tokio::test]
async fn a_snapshot_of_another_store_state_is_not_used() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    publish(&node, &trader, 0).await;
    let file = snapshot_file(&node);
    let halted = node.halt().await;
    let old = std::fs::read(&file).unwrap();
    let node = TestNode::start_again(halted).await;
    publish(&node, &trader, 1).await;
    let expected = seen(&node, &trader, &agency).await;
    assert_eq!(expected[0].len(), 2);
    // A crash after more writes leaves no snapshot for them: here the earlier one is put back,
    // as a restore of an old copy of the data dir's files would.
    let halted = node.halt().await;
    std::fs::write(&file, &old).unwrap();
    let node = TestNode::start_again(halted).await;
    assert_eq!(seen(&node, &trader, &agency).await, expected);
    // A damaged snapshot of the right state is not used either.
    let halted = node.halt().await;
    let mut torn = std::fs::read(&file).unwrap();
    torn.truncate(torn.len() / 2);
    std::fs::write(&file, &torn).unwrap();
    let node = TestNode::start_again(halted).await;
    assert_eq!(seen(&node, &trader, &agency).await, expected);
}

/// `deploy/dataspace-node.service` is a unit systemd takes without a warning, with the
/// hardening and limits the README promises. Checked with `systemd-analyze verify` where the
/// machine has it (Debian's `systemd` package), its `ExecStart` pointed at the built binary.
#[test]
fn the_systemd_unit_verifies_and_is_hardened() {
    let unit = include_str!("../../deploy/dataspace-node.service");
    for directive in [
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "LimitNOFILE=",
        "StateDirectory=dataspace-node",
        "Environment=DATASPACE_NODE_DATA_DIR=%S/dataspace-node",
    ] {
        assert!(
            unit.lines().any(|l| l.starts_with(directive)),
            "{directive}"
        );
    }
    let Ok(which) = std::process::Command::new("sh")
        .args(["-c", "command -v systemd-analyze"])
        .output()
    else {
        return;
    };
    if !which.status.success() {
        eprintln!("systemd-analyze is not installed: the unit's directives were checked only");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dataspace-node.service");
    let here = unit.replace(
        "/usr/local/bin/dataspace-node",
        env!("CARGO_BIN_EXE_dataspace-node"),
    );
    std::fs::write(&path, here).unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // An unknown or misspelt directive is only a warning to systemd: none may be printed.
    assert!(said.trim().is_empty(), "{said}");
}
