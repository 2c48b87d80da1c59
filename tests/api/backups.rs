//! Online backups: taken while several clients post Creates, restored into a new data dir the
//! node starts on; a damaged backup is refused naming the file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::common::*;

async fn cli(args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args(args)
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_backup_taken_under_load_restores_every_acknowledged_write() {
    let backups = tempfile::tempdir().unwrap();
    let dir = backups.path().to_owned();
    let node = Arc::new(TestNode::start_with(move |c| c.backup_dir = Some(dir)).await);
    let operator = Operator::new(&node).await;
    let trader = Arc::new(Session::new(&node, "trader@forwarder.example").await);
    trader.publish_example(&node, "create-consignment").await;
    trader.publish_example(&node, "add-document").await;
    let (bytes_before, _) = document_bytes(&node, &trader, &node.base).await;

    // Four clients post Creates until told to stop; each acknowledgement is noted with its time.
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(u32, Instant)>>> = Arc::default();
    let mut clients = Vec::new();
    for c in 0..4u32 {
        let (node, trader, stop, acked) =
            (node.clone(), trader.clone(), stop.clone(), acked.clone());
        clients.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let n = 100_000 + c * 10_000 + i;
                let activity = consignment_at(trader.org(), n, "KEMBA", "2026-12-24T06:00:00Z");
                let entry = trader.publish(&node, &activity).await;
                assert_completed(&entry);
                acked.lock().unwrap().push((n, Instant::now()));
                i += 1;
            }
        }));
    }
    while acked.lock().unwrap().len() < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let began = Instant::now();
    let r = operator
        .send(&node, Method::POST, "/operations/backups", None)
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let taken = json_body(r).await;
    // Writes went on during the backup.
    let during = acked
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, at)| *at > began)
        .count();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    eprintln!("{during} Creates acknowledged while the backup ran");
    let before: Vec<u32> = acked
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(n, _)| *n)
        .collect();

    let listed = json_body(
        operator
            .send(&node, Method::GET, "/operations/backups", None)
            .await,
    )
    .await;
    assert_eq!(listed["entities"][0]["name"], taken["name"]);
    assert!(taken["quads"].as_u64().unwrap() > 100);
    // An organisation's session cannot take or list backups.
    let r = trader.get(&node, "/operations/backups").await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;

    let backup = backups.path().join(taken["name"].as_str().unwrap());
    let backup_arg = backup.to_str().unwrap();
    // A damaged copy is refused, naming the file; so is a data dir that is not empty.
    let damaged = tempfile::tempdir().unwrap();
    copy_dir(&backup, damaged.path());
    let blob = find_file(&damaged.path().join("blobs"));
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let target = tempfile::tempdir().unwrap();
    let into = target.path().join("restored");
    let out = cli(&[
        "restore",
        damaged.path().to_str().unwrap(),
        "--data-dir",
        into.to_str().unwrap(),
    ])
    .await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains(blob.file_name().unwrap().to_str().unwrap()),
        "{said}"
    );
    assert!(!into.exists() || std::fs::read_dir(&into).unwrap().next().is_none());
    // Files that match their hashes but a store that is not the manifest's moment (its
    // digest altered): refused after the copy, and nothing left in the data dir.
    let altered = tempfile::tempdir().unwrap();
    copy_dir(&backup, altered.path());
    let manifest_path = altered.path().join("manifest.json");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["digest"] = Value::String("0".repeat(64));
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let out = cli(&[
        "restore",
        altered.path().to_str().unwrap(),
        "--data-dir",
        into.to_str().unwrap(),
    ])
    .await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("digest"), "{said}");
    assert!(!into.exists() || std::fs::read_dir(&into).unwrap().next().is_none());
    let out = cli(&[
        "restore",
        backup_arg,
        "--data-dir",
        node.data_dir().to_str().unwrap(),
    ])
    .await;
    assert!(!out.status.success(), "a data dir in use is not empty");

    let fresh = tempfile::tempdir().unwrap();
    let out = cli(&[
        "restore",
        backup_arg,
        "--data-dir",
        fresh.path().to_str().unwrap(),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The restored store is the backup's moment, quad for quad: an export of it has the
    // manifest's count and digest (computed here from the N-Quads lines, as the manifest
    // defines it: the XOR of each line's SHA-256).
    let exported = target.path().join("restored.nq");
    let out = cli(&[
        "export",
        "--data-dir",
        fresh.path().to_str().unwrap(),
        "--output",
        exported.to_str().unwrap(),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (count, digest) = nquads_digest(&std::fs::read_to_string(&exported).unwrap());
    assert_eq!(count, taken["quads"].as_u64().unwrap());
    assert_eq!(digest, taken["digest"].as_str().unwrap());
    let base = node.base.clone();
    let restored = TestNode::start_in(fresh, |c| c.base_url = Some(base)).await;
    for n in &before {
        let r = trader
            .get(
                &restored,
                &format!("{LIST}/urn:uuid:00000000-0000-4000-8000-{n:012}"),
            )
            .await;
        assert_eq!(
            r.status(),
            StatusCode::OK,
            "consignment {n} acknowledged before the backup"
        );
    }
    // Nothing half-written: every Create posted is either whole in the restored node (its
    // view answers) or absent, never a part of one.
    let posted: Vec<u32> = acked.lock().unwrap().iter().map(|(n, _)| *n).collect();
    for n in posted.iter().chain(before.iter()) {
        let r = trader
            .get(
                &restored,
                &format!("{LIST}/urn:uuid:00000000-0000-4000-8000-{n:012}"),
            )
            .await;
        assert!(
            matches!(r.status(), StatusCode::OK | StatusCode::NOT_FOUND),
            "consignment {n}: {}",
            r.status()
        );
    }
    let (bytes_after, _) = document_bytes(&restored, &trader, &node.base).await;
    assert_eq!(bytes_after, bytes_before);
}

/// The quad count of an N-Quads text and the XOR of its lines' SHA-256, in hex.
fn nquads_digest(text: &str) -> (u64, String) {
    use sha2::Digest;
    let mut xor = [0u8; 32];
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        for (x, b) in xor.iter_mut().zip(sha2::Sha256::digest(line.as_bytes())) {
            *x ^= b;
        }
        count += 1;
    }
    (count, hex::encode(xor))
}

/// The example document's bytes as `who` downloads them (links name `base`).
async fn document_bytes(node: &TestNode, who: &Session, base: &str) -> (Vec<u8>, Value) {
    let doc = json_body(
        who.get(
            node,
            &format!("{LIST}/{IDENTIFIER}/documents/INV-2026-0917"),
        )
        .await,
    )
    .await;
    let href = doc["href"].as_str().unwrap().replacen(base, &node.base, 1);
    let r = node.client.get(&href).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{href}");
    (r.bytes().await.unwrap().to_vec(), doc)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn find_file(dir: &std::path::Path) -> std::path::PathBuf {
    let entry = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap_or_else(|| panic!("no file under {}", dir.display()))
        .unwrap();
    if entry.file_type().unwrap().is_dir() {
        find_file(&entry.path())
    } else {
        entry.path()
    }
}

/// A backup directory the node cannot write (here a path under a file, which no user,
/// root included, can create) is a clear error naming it, and no backup is listed.
#[tokio::test]
async fn a_backup_directory_that_cannot_be_written_is_a_clear_error() {
    let parent = tempfile::tempdir().unwrap();
    let file = parent.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let dir = file.join("backups");
    let node = TestNode::start_with({
        let dir = dir.clone();
        move |c| c.backup_dir = Some(dir)
    })
    .await;
    let operator = Operator::new(&node).await;
    let r = operator
        .send(&node, Method::POST, "/operations/backups", None)
        .await;
    assert!(r.status().is_server_error(), "{}", r.status());
    let body = json_body(r).await;
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("--backup-dir"), "{body}");
    let listed = json_body(
        operator
            .send(&node, Method::GET, "/operations/backups", None)
            .await,
    )
    .await;
    assert_eq!(listed["entities"], serde_json::json!([]), "{listed}");
}
