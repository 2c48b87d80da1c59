//! `dataspace-node export`, `import` and `compact` (the real binary): a backup of a node with
//! published, shared and documented consignments restores to a node that answers every read as
//! before; a compaction keeps every quad.

use std::path::{Path, PathBuf};
use std::process::Output;

use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::dataset::CanonicalizationAlgorithm;
use oxigraph::model::Dataset;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

const DOCUMENT: &str = "INV-2026-0917";

/// Runs the node binary with `args`; the environment's data dir never applies.
async fn cli(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args(args)
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .output()
        .await
        .expect("run dataspace-node")
}

/// `export` of a data dir into a file, in the format its extension says.
async fn export_to(data: &Path, file: &Path) -> Output {
    cli(&["export", "--data-dir", path(data), "--output", path(file)]).await
}

/// `import` of a file into a data dir, in the format its extension says.
async fn import_from(data: &Path, file: &Path) -> Output {
    cli(&["import", "--data-dir", path(data), "--input", path(file)]).await
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeded(out: &Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stderr(out)
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// An export file as a dataset with canonical blank node labels: two exports are the same
/// data exactly when these are equal.
fn canonical(file: &Path, format: RdfFormat) -> Dataset {
    let text = std::fs::read(file).unwrap();
    let mut dataset: Dataset = RdfParser::from_format(format)
        .for_slice(&text)
        .map(|q| q.expect("export parses"))
        .collect();
    dataset.canonicalize(CanonicalizationAlgorithm::Unstable);
    dataset
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The parts of a full backup next to the store.
fn copy_companions(from: &Path, to: &Path) {
    for dir in ["blobs", "secrets"] {
        copy_dir(&from.join(dir), &to.join(dir));
    }
}

fn sparql(q: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("query", q)
        .finish();
    format!("/supply-chain/data-space/sparql?{query}")
}

/// Everything a reader asks, answered (200 each).
async fn answers(node: &TestNode, who: &Session, paths: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for p in paths {
        let r = who.get(node, p).await;
        assert_eq!(r.status(), StatusCode::OK, "{p}");
        out.push(unsigned_links(json_body(r).await));
    }
    out
}

/// The node of the test: a trader with two consignments (one routed to the Kenyan agency by a
/// policy), an event and a `data:` document of its own and an event the agency added.
struct Published {
    node: TestNode,
    trader: Session,
    agency: Session,
    trader_reads: Vec<String>,
    agency_reads: Vec<String>,
}

async fn publish() -> Published {
    let node = TestNode::start().await;
    let (_, trader, agency) = kenya_circle(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    let other = consignment_at(trader.org(), 418, "TZDAR", "2026-12-27T06:00:00Z");
    let entry = trader.publish(&node, &other).await;
    assert_completed(&entry);
    trader.publish_example(&node, "add-event").await;
    trader.publish_example(&node, "add-document").await;
    let mut cleared = as_org(example("add-event"), agency.org());
    cleared["object"]["typeCode"] = json!("tlip:customs-cleared");
    cleared["object"]["occurrenceDateTime"] = json!("2026-12-03T10:00:00Z");
    assert_completed(&agency.publish(&node, &cleared).await);

    let view = format!("{LIST}/{IDENTIFIER}");
    let no_blanks = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o \
                     FILTER(!isBlank(?s) && !isBlank(?o)) } } ORDER BY ?g ?s ?p ?o";
    let per_port = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#> \
                    SELECT ?code (COUNT(*) AS ?n) WHERE { ?s dsn:portOfEntryCode ?code } \
                    GROUP BY ?code ORDER BY ?code";
    let count = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }";
    let log = format!(
        "/supply-chain/data-space/activity-logs/{}",
        entry["id"].as_str().unwrap()
    );
    let trader_reads = vec![
        LIST.to_owned(),
        format!("{LIST}?scope=all&limit=1"),
        view.clone(),
        format!("{view}/events"),
        format!("{view}/documents"),
        format!("{view}/documents/{DOCUMENT}"),
        "/supply-chain/data-space/documents".to_owned(),
        format!("/supply-chain/data-space/documents/{DOCUMENT}"),
        log,
        sparql(no_blanks),
        sparql(per_port),
        sparql(count),
    ];
    let agency_reads = vec![
        format!("{LIST}?scope=shared"),
        view.clone(),
        format!("{view}/events"),
        format!("{view}/documents"),
        "/supply-chain/data-space/notifications".to_owned(),
        sparql(no_blanks),
        sparql(count),
    ];
    Published {
        node,
        trader,
        agency,
        trader_reads,
        agency_reads,
    }
}

/// The document's download link (on `node`'s address) and its attestation.
async fn document_parts(node: &TestNode, who: &Session, base: &str) -> (Vec<u8>, Value) {
    let r = who
        .get(node, &format!("{LIST}/{IDENTIFIER}/documents/{DOCUMENT}"))
        .await;
    let doc = json_body(r).await;
    let href = doc["href"].as_str().unwrap().replacen(base, &node.base, 1);
    let r = node.client.get(&href).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{href}");
    let bytes = r.bytes().await.unwrap().to_vec();
    let r = attestation(node, doc["attestationId"].as_str().unwrap()).await;
    assert_eq!(r.status(), StatusCode::OK);
    (bytes, json_body(r).await)
}

#[tokio::test]
async fn a_backup_restores_a_node_that_answers_as_before() {
    let p = publish().await;
    let base = p.node.base.clone();
    let trader_before = answers(&p.node, &p.trader, &p.trader_reads).await;
    let agency_before = answers(&p.node, &p.agency, &p.agency_reads).await;
    let (bytes_before, attestation_before) = document_parts(&p.node, &p.trader, &base).await;
    assert!(bytes_before.starts_with(b"%PDF"));
    assert_eq!(agency_before[0]["entities"].as_array().unwrap().len(), 1);

    // While the node runs, export refuses and says why.
    let backups = tempfile::tempdir().unwrap();
    let first = backups.path().join("backup.nq");
    let data = p.node.data_dir();
    let out = export_to(&data, &first).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("stop the node"), "{}", stderr(&out));
    assert!(!first.exists());

    let old = p.node.stop().await;
    let said = succeeded(&export_to(old.path(), &first).await);
    // Password and key hashes: the node's user alone reads the file.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&first).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    let text = std::fs::read_to_string(&first).unwrap();
    // Derived markers stay out of a backup: the restored node writes them again.
    assert!(!text.contains("urn:dataspace-node:system:readable"));
    // Nor does the models snapshot's token: an edited dump imported beside the snapshot the
    // node left would otherwise make the restored node take that snapshot for its state.
    assert!(!text.contains("snapshotToken"));
    let lines = text.lines().count();
    assert!(lines > 100, "{lines}");
    assert!(said.contains(&format!("exported {lines} quads")), "{said}");
    assert!(said.contains("blobs") && said.contains("secrets"), "{said}");

    // Restore: import into an empty data dir, copy blobs and secrets, start with the same
    // base URL (the ids are did:web ids derived from it).
    let restored = tempfile::tempdir().unwrap();
    let said = succeeded(&import_from(restored.path(), &first).await);
    assert!(said.contains(&format!("imported {lines} quads")), "{said}");
    let second = backups.path().join("again.nq");
    succeeded(&export_to(restored.path(), &second).await);
    assert_eq!(
        canonical(&first, RdfFormat::NQuads),
        canonical(&second, RdfFormat::NQuads)
    );
    copy_companions(old.path(), restored.path());
    let node = TestNode::start_in(restored, |c| c.base_url = Some(base.clone())).await;

    // The sessions of before still hold (same signing key), and every answer is the same.
    assert_eq!(
        answers(&node, &p.trader, &p.trader_reads).await,
        trader_before
    );
    assert_eq!(
        answers(&node, &p.agency, &p.agency_reads).await,
        agency_before
    );
    let (bytes, attestation) = document_parts(&node, &p.trader, &base).await;
    assert_eq!(bytes, bytes_before);
    assert_eq!(attestation, attestation_before);
    // Logins work (accounts and key hashes), and the in-memory indexes came back: the policy
    // still routes, notification numbers continue, the list order holds a new consignment.
    node.login(
        &p.agency.account.api_key,
        &p.agency.account.email,
        &p.agency.account.password,
    )
    .await;
    let third = consignment_at(p.trader.org(), 419, "KEMBA", "2026-12-24T06:00:00Z");
    assert_completed(&p.trader.publish(&node, &third).await);
    let notes = json_body(
        p.agency
            .get(&node, "/supply-chain/data-space/notifications")
            .await,
    )
    .await;
    let numbers: Vec<u64> = notes["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(numbers.len(), 2, "{notes}");
    assert!(numbers[0] > numbers[1], "{numbers:?}");
    let list = json_body(p.trader.get(&node, LIST).await).await;
    let ids: Vec<&str> = list["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["identifier"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids.len(), 3, "{list}");
    assert_eq!(ids[0], "FWD-2026-000419", "{list}");

    // A second import into the now filled store is refused, and changes nothing.
    let dir = node.stop().await;
    let before = backups.path().join("before.nq");
    succeeded(&export_to(dir.path(), &before).await);
    let out = import_from(dir.path(), &first).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    let after = backups.path().join("after.nq");
    succeeded(&export_to(dir.path(), &after).await);
    assert_eq!(
        std::fs::read(&before).unwrap(),
        std::fs::read(&after).unwrap()
    );
}

#[tokio::test]
async fn trig_round_trips_and_malformed_input_leaves_no_store() {
    let p = publish().await;
    let old = p.node.stop().await;
    let backups = tempfile::tempdir().unwrap();
    let nquads = backups.path().join("backup.nq");
    let trig = backups.path().join("backup.trig");
    succeeded(&export_to(old.path(), &nquads).await);
    // TriG by the file's extension, and by --format to stdout.
    succeeded(&export_to(old.path(), &trig).await);
    let text = std::fs::read_to_string(&trig).unwrap();
    assert!(text.starts_with("@prefix"), "{}", &text[..200]);
    let out = cli(&["export", "--data-dir", path(old.path()), "--format", "trig"]).await;
    succeeded(&out);
    assert_eq!(
        canonical(&trig, RdfFormat::TriG),
        canonical(&nquads, RdfFormat::NQuads)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);

    let restored = tempfile::tempdir().unwrap();
    let data = restored.path().join("data");
    succeeded(&import_from(&data, &trig).await);
    let again = backups.path().join("again.nq");
    succeeded(&export_to(&data, &again).await);
    assert_eq!(
        canonical(&again, RdfFormat::NQuads),
        canonical(&nquads, RdfFormat::NQuads)
    );

    // A file broken on its third line: a clear message with the line, a failed exit, and no
    // store (not even an empty one) in the data dir.
    let mut lines: Vec<String> = std::fs::read_to_string(&nquads)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines[2] = "<urn:x:s> <urn:x:p> \"unterminated .".to_owned();
    let broken = backups.path().join("broken.nq");
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let target = tempfile::tempdir().unwrap();
    let out = import_from(target.path(), &broken).await;
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("line 3") && said.contains("nothing was imported"),
        "{said}"
    );
    assert!(!target.path().join("store").exists());
    // An unknown extension without --format is refused before anything happens.
    let renamed: PathBuf = backups.path().join("backup.data");
    std::fs::copy(&nquads, &renamed).unwrap();
    let out = import_from(target.path(), &renamed).await;
    assert!(stderr(&out).contains("--format"), "{}", stderr(&out));
    assert!(!target.path().join("store").exists());
    // With --format it loads.
    succeeded(
        &cli(&[
            "import",
            "--data-dir",
            path(target.path()),
            "-i",
            path(&renamed),
            "--format",
            "nquads",
        ])
        .await,
    );
}

#[tokio::test]
async fn compact_keeps_every_quad_and_refuses_a_running_node() {
    let p = publish().await;
    let data = p.node.data_dir();
    let out = cli(&["compact", "--data-dir", path(&data)]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("stop the node"), "{}", stderr(&out));

    let old = p.node.stop().await;
    let backups = tempfile::tempdir().unwrap();
    let (before, after) = (
        backups.path().join("before.nq"),
        backups.path().join("after.nq"),
    );
    succeeded(&export_to(old.path(), &before).await);
    let said = succeeded(&cli(&["compact", "--data-dir", path(old.path())]).await);
    assert!(
        said.contains("compacted") && said.contains("MB after"),
        "{said}"
    );
    succeeded(&export_to(old.path(), &after).await);
    assert_eq!(
        canonical(&after, RdfFormat::NQuads),
        canonical(&before, RdfFormat::NQuads)
    );
    // Nothing changed: the models the node saved at its shutdown still match the store.
    let store = dataspace_node::store::Store::open(&old.path().join("store")).unwrap();
    assert!(store.snapshot_token().is_some());
    let empty = tempfile::tempdir().unwrap();
    let out = cli(&["compact", "--data-dir", path(empty.path())]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("holds no store"), "{}", stderr(&out));
}
