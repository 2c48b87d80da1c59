//! `dataspace-node load` (the real binary): the same activities posted to one node's inbox and
//! loaded into another's data dir leave the two nodes answering every read and SPARQL query
//! alike; bad lines are reported by number and nothing of them is applied; a second load of the
//! same file applies nothing twice.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::common::*;

const SHARED: &str = "/supply-chain/data-space/consignments?scope=shared";

async fn load(node_base: &str, data: &Path, org: &str, files: &[&Path]) -> Output {
    load_in_batches(node_base, data, org, files, 3).await
}

async fn load_in_batches(
    node_base: &str,
    data: &Path,
    org: &str,
    files: &[&Path],
    batch: usize,
) -> Output {
    let mut args = vec![
        "load".to_owned(),
        "--data-dir".into(),
        data.to_str().unwrap().into(),
        "--base-url".into(),
        node_base.into(),
        "--organization".into(),
        org.into(),
        "--batch".into(),
        batch.to_string(),
    ];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_owned()));
    tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args(&args)
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .output()
        .await
        .expect("run dataspace-node load")
}

/// The good activities of `org`, in order: three Creates (two routed to Kenya), an Update that
/// moves the first to Tanzania, an event and a document on it, and the first Create again.
fn history(org: &str) -> Vec<Value> {
    let pdf = data_url("application/pdf", b"%PDF-1.4 invoice of the load test");
    vec![
        as_org(example("create-consignment"), org),
        consignment_at(org, 2, "KEMBA", "2026-12-20T06:00:00Z"),
        consignment_at(org, 3, "TZDAR", "2026-12-21T06:00:00Z"),
        as_org(example("update-consignment"), org),
        as_org(example("add-event"), org),
        add_document(org, &pdf, "INV-LOAD-1"),
        as_org(example("create-consignment"), org),
    ]
}

/// Lines a load must refuse, each with what makes it bad.
fn bad_lines(org: &str) -> Vec<String> {
    let mut stranger = consignment_at(org, 9, "KEMBA", "2026-12-22T06:00:00Z");
    stranger["actor"]["registeredId"]["@value"] = json!("did:web:elsewhere.example:org:x");
    let mut missing = as_org(example("create-consignment"), org);
    missing["object"]
        .as_object_mut()
        .unwrap()
        .remove("globalId");
    missing["object"]["identifier"] = json!("FWD-NO-GLOBAL-ID");
    // Same ids as line 2, other content: a conflict.
    let conflict = consignment_at(org, 2, "KEMBA", "2027-01-05T06:00:00Z");
    vec![
        "{\"type\": \"Create\", not json".into(),
        stranger.to_string(),
        missing.to_string(),
        conflict.to_string(),
    ]
}

/// Strings that differ between two nodes for the same history — the base URL, organisation
/// DIDs, minted ids, times, link signatures — replaced by placeholders.
fn normal(v: &Value, names: &[(&str, &str)]) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (from, to) in names {
                s = s.replace(from, to);
            }
            if let Some((head, _)) = s.split_once('?').filter(|_| s.contains("{base}")) {
                s = head.to_owned();
            }
            Value::String(masked(&s))
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| normal(x, names)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), normal(x, names)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// UUIDs, runs of 16+ hex digits (minted ids, blank nodes) and ISO date-times masked.
fn masked(s: &str) -> String {
    let b = s.as_bytes();
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        let hex = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let uuid = b.len() - i >= 36
            && b[i..i + 36].iter().enumerate().all(|(k, c)| {
                if [8, 13, 18, 23].contains(&k) {
                    *c == b'-'
                } else {
                    c.is_ascii_hexdigit()
                }
            });
        let time = b.len() - i >= 19
            && b[i..i + 19].iter().enumerate().all(|(k, c)| match k {
                4 | 7 => *c == b'-',
                10 => *c == b'T',
                13 | 16 => *c == b':',
                _ => c.is_ascii_digit(),
            });
        if uuid {
            out.push_str("{uuid}");
            i += 36;
        } else if time {
            i += 19;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'Z') {
                i += 1;
            }
            out.push_str("{time}");
        } else if hex >= 16 {
            out.push_str("{hex}");
            i += hex;
        } else {
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Everything the trader and the agency read, normalised.
async fn reads(node: &TestNode, trader: &Session, agency: &Session) -> Value {
    let did = format!(
        "did:web:{}",
        node.base.trim_start_matches("http://").replace(':', "%3A")
    );
    let names = [
        (trader.org(), "{trader}"),
        (agency.org(), "{agency}"),
        (did.as_str(), "{node}"),
        (node.base.as_str(), "{base}"),
    ];
    let mut all = serde_json::Map::new();
    let own = ok_json(trader.get(node, LIST).await).await;
    for entity in own["entities"].as_array().unwrap() {
        let id = entity["identifier"].as_str().unwrap();
        for (who, session) in [("trader", trader), ("agency", agency)] {
            for part in ["", "/events", "/documents"] {
                let path = format!("{LIST}/{id}{part}");
                let r = session.get(node, &path).await;
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap_or(Value::Null);
                all.insert(format!("{who} {path}"), json!([status, body]));
            }
        }
    }
    all.insert("own".into(), own);
    all.insert(
        "shared".into(),
        ok_json(agency.get(node, SHARED).await).await,
    );
    let notes = ok_json(agency.get(node, NOTIFICATIONS).await).await;
    all.insert("notifications".into(), notes);
    let q = "SELECT ?type (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s a ?type } } GROUP BY ?type ORDER BY ?type";
    for (who, session) in [("trader", trader), ("agency", agency)] {
        let answer = rows(node, session, q, &[]).await;
        all.insert(format!("sparql {who}"), Value::Array(answer));
    }
    normal(&Value::Object(all), &names)
}

#[tokio::test]
async fn a_load_leaves_the_node_as_if_each_activity_had_been_posted() {
    // Posted, one at a time, through the inbox.
    let posted = TestNode::start().await;
    let (_op, trader_p, agency_p) = kenya_circle(&posted).await;
    for activity in history(trader_p.org()) {
        // 201 for each new one, 200 for the last (the first again: a replay).
        let entry = json_body(trader_p.post(&posted, &activity).await).await;
        assert_completed(&entry);
    }
    let expected = reads(&posted, &trader_p, &agency_p).await;

    // Loaded: the same accounts and policy, the node stopped, the same lines plus bad ones.
    let (base, halted, trader, agency) = halted_circle().await;
    let data = halted.0.data_dir.clone();
    let org = trader.org().to_owned();
    let mut lines: Vec<String> = history(&org).iter().map(Value::to_string).collect();
    let bad = bad_lines(&org);
    // Bad lines among the good ones: 2, 5, 7, 10 (1-based), then a torn last line.
    for (at, line) in [(1, &bad[0]), (4, &bad[1]), (6, &bad[2]), (9, &bad[3])] {
        lines.insert(at, line.clone());
    }
    let torn = history(&org)[1].to_string();
    let file = halted.2.path().join("history.jsonl");
    let text = format!("{}\n\n{}", lines.join("\n"), &torn[..torn.len() / 2]);
    std::fs::write(&file, text).unwrap();
    let out = load(&base, &data, &org, &[&file]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (reported, numbers) = refused_lines(&stdout);
    assert_eq!(numbers, vec![2, 5, 7, 10, 13], "{stdout}");
    assert_eq!(
        reported[2]["error"]["cause"]["name"], "ValidationError",
        "{stdout}"
    );
    assert!(
        stdout.contains("globalId"),
        "the shape failure names the field: {stdout}"
    );
    let node = TestNode::start_again(halted).await;
    same(&reads(&node, &trader, &agency).await, &expected);

    // Loaded again: every good line is a replay, nothing changes.
    let halted = node.halt().await;
    let out = load(&base, &data, &org, &[&file]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0 applied, 7 applied before, 5 refused"),
        "{stderr}"
    );
    let node = TestNode::start_again(halted).await;
    same(&reads(&node, &trader, &agency).await, &expected);
}

/// A node with the Kenya circle's accounts, stopped for a load: its base URL, what `halt`
/// left (config, address, data dir), the trader and the agency.
async fn halted_circle() -> (
    String,
    (dataspace_node::Config, String, tempfile::TempDir),
    Session,
    Session,
) {
    let node = TestNode::start().await;
    let (_op, trader, agency) = kenya_circle(&node).await;
    let base = node.base.clone();
    (base, node.halt().await, trader, agency)
}

/// The refused lines a load reported on stdout, and their numbers.
fn refused_lines(stdout: &str) -> (Vec<Value>, Vec<u64>) {
    let reported: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let numbers = reported
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    (reported, numbers)
}

/// Read by read, so a failure names the read that differs.
fn same(loaded: &Value, posted: &Value) {
    let (l, p) = (loaded.as_object().unwrap(), posted.as_object().unwrap());
    assert_eq!(
        l.keys().collect::<Vec<_>>(),
        p.keys().collect::<Vec<_>>(),
        "the same reads"
    );
    for (k, v) in p {
        assert_eq!(&l[k], v, "{k}: loaded (left) vs posted (right)");
    }
}

#[tokio::test]
async fn a_load_needs_an_organisation_of_the_node() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let base = node.base.clone();
    let halted = node.halt().await;
    let file = halted.2.path().join("one.jsonl");
    std::fs::write(&file, history(trader.org())[0].to_string()).unwrap();
    let unknown = "did:web:elsewhere.example:org:nobody";
    let out = load(&base, &halted.0.data_dir, unknown, &[&file]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an organisation of this node"));
    // Nothing was applied: the trader's list is empty.
    let node = TestNode::start_again(halted).await;
    let own = ok_json(trader.get(&node, LIST).await).await;
    assert_eq!(own["entities"].as_array().unwrap().len(), 0);
}

/// A batch's `Create`s share one commit whose records the bulk loader writes after the checks
/// of every line: a line must still find the ids an earlier line of its batch took, and be a
/// replay of an identical earlier line.
#[tokio::test]
async fn a_load_refuses_ids_taken_earlier_in_the_same_batch() {
    let (base, halted, trader, _agency) = halted_circle().await;
    let org = trader.org().to_owned();
    let first = consignment_at(&org, 2, "KEMBA", "2026-12-20T06:00:00Z");
    // The same ids, other content.
    let same_ids = consignment_at(&org, 2, "TZDAR", "2027-01-05T06:00:00Z");
    // Its globalId is new, its identifier the first one's.
    let mut crossed = consignment_at(&org, 3, "TZDAR", "2027-01-06T06:00:00Z");
    crossed["object"]["identifier"] = first["object"]["identifier"].clone();
    let other = consignment_at(&org, 4, "KEMBA", "2026-12-21T06:00:00Z");
    let lines = [&first, &same_ids, &first, &crossed, &other];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let file = halted.2.path().join("one-batch.jsonl");
    std::fs::write(&file, text.join("\n")).unwrap();
    let out = load_in_batches(&base, &halted.0.data_dir, &org, &[&file], 100).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("2 applied, 1 applied before, 2 refused"),
        "{stderr}"
    );
    let (reported, numbers) = refused_lines(&stdout);
    assert_eq!(numbers, vec![2, 4], "{stdout}");
    for r in &reported {
        assert_eq!(r["error"]["cause"]["name"], "ConflictError", "{stdout}");
    }

    let node = TestNode::start_again(halted).await;
    let mut listed = list_all(&node, &trader).await;
    listed.sort();
    let ids = |v: &Value| v["object"]["identifier"].as_str().unwrap().to_owned();
    assert_eq!(listed, vec![ids(&first), ids(&other)]);
    // The first line's content, not the refused line's with the same ids.
    let page = ok_json(trader.get(&node, LIST).await).await;
    let row = page["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["identifier"] == first["object"]["identifier"])
        .cloned()
        .unwrap();
    assert_eq!(row["portOfEntryCode"], "KEMBA", "{row}");
}

/// An activity the inbox failed before is applied by a load without deferring its writes (its
/// failed entry is replaced in the transaction); it must still find the ids an earlier line of
/// its batch took with deferred writes.
#[tokio::test]
async fn a_load_line_that_failed_before_finds_the_ids_its_batch_took() {
    let node = TestNode::start().await;
    let (_op, trader, _agency) = kenya_circle(&node).await;
    let org = trader.org().to_owned();
    let x = consignment_at(&org, 5, "KEMBA", "2026-12-20T06:00:00Z");
    assert_completed(&trader.publish(&node, &x).await);
    // The identifier is x's: a conflict, and a failed entry.
    let mut late = consignment_at(&org, 6, "KEMBA", "2026-12-21T06:00:00Z");
    late["object"]["identifier"] = x["object"]["identifier"].clone();
    let entry = trader.publish(&node, &late).await;
    assert_eq!(task_error(&entry)["name"], "ConflictError", "{entry}");
    // x takes another identifier: the failed line would apply now, were it alone.
    let mut renamed = as_org(example("update-consignment"), &org);
    renamed["object"]["globalId"] = x["object"]["globalId"].clone();
    renamed["object"]["identifier"] = json!("FWD-2026-RENAMED");
    assert_completed(&trader.publish(&node, &renamed).await);
    let base = node.base.clone();
    let halted = node.halt().await;

    // Before it in the batch, a new line takes its globalId.
    let mut first = consignment_at(&org, 7, "KEMBA", "2026-12-22T06:00:00Z");
    first["object"]["globalId"] = late["object"]["globalId"].clone();
    let file = halted.2.path().join("retried.jsonl");
    std::fs::write(&file, format!("{first}\n{late}")).unwrap();
    let out = load_in_batches(&base, &halted.0.data_dir, &org, &[&file], 100).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 applied, 0 applied before, 1 refused"),
        "{stderr}"
    );
    let reported: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(reported["line"], 2, "{stdout}");
    assert_eq!(
        reported["error"]["cause"]["name"], "ConflictError",
        "{stdout}"
    );

    let node = TestNode::start_again(halted).await;
    let mut listed = list_all(&node, &trader).await;
    listed.sort();
    assert_eq!(listed, vec!["FWD-2026-000007", "FWD-2026-RENAMED"]);
}

#[tokio::test]
async fn a_load_killed_mid_way_leaves_whole_activities_and_a_second_load_completes_it() {
    let (base, halted, trader, _agency) = halted_circle().await;
    let org = trader.org().to_owned();
    let total: u32 = 1_500;
    let file = halted.2.path().join("many.jsonl");
    let lines: Vec<String> = (0..total)
        .map(|n| consignment_at(&org, 10_000 + n, "NLRTM", "2026-12-20T06:00:00Z").to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let data = halted.0.data_dir.to_str().unwrap().to_owned();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args([
            "load",
            "--data-dir",
            &data,
            "--base-url",
            &base,
            "--organization",
            &org,
        ])
        .args(["--batch", "100", file.to_str().unwrap()])
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wherever the kill lands — before the first batch, between two, inside one, after the
    // last — what follows must hold.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    // It may have finished already: nothing to kill then.
    let _ = child.start_kill();
    child.wait().await.unwrap();

    let node = TestNode::start_again(halted).await;
    let listed = list_all(&node, &trader).await;
    assert!(listed.len() <= total as usize);
    for id in listed.iter().take(20) {
        let r = trader.get(&node, &format!("{LIST}/{id}")).await;
        assert_eq!(r.status(), reqwest::StatusCode::OK, "{id}");
    }
    let halted = node.halt().await;
    let out = load(&base, &halted.0.data_dir, &org, &[&file]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Every activity is either wholly there (a replay now) or not at all (applied now): a
    // half-written one would be a conflict.
    let expected = format!(
        "{} applied, {} applied before, 0 refused",
        total as usize - listed.len(),
        listed.len()
    );
    assert!(stderr.contains(&expected), "{expected}: {stderr}");
    let node = TestNode::start_again(halted).await;
    assert_eq!(list_all(&node, &trader).await.len(), total as usize);
}

/// Every identifier of the caller's own list, page by page.
async fn list_all(node: &TestNode, who: &Session) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("{LIST}?limit=100&cursor={c}"),
            None => format!("{LIST}?limit=100"),
        };
        let page = ok_json(who.get(node, &path).await).await;
        for e in page["entities"].as_array().unwrap() {
            ids.push(e["identifier"].as_str().unwrap().to_owned());
        }
        match page["cursor"].as_str() {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => return ids,
        }
    }
}

#[tokio::test]
async fn lines_and_files_over_the_body_limit_are_refused_without_being_read_whole() {
    let (base, halted, trader, _agency) = halted_circle().await;
    let data = halted.0.data_dir.clone();
    let org = trader.org().to_owned();
    let good = history(&org)[0].to_string();
    assert!(good.len() < 8_000);
    let dir = halted.2.path();
    let lines = dir.join("lines.jsonl");
    // Line 2 is over the limit; the last one too, with no newline after it.
    let long = format!("\"{}\"", "x".repeat(20_000));
    std::fs::write(&lines, format!("{good}\n{long}\n\n{long}")).unwrap();
    let whole = dir.join("whole.json");
    std::fs::write(&whole, &long).unwrap();
    // One byte over, and not a newline: over the limit too.
    let edge = dir.join("edge.json");
    std::fs::write(&edge, format!("\"{}\"", "x".repeat(7_999))).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args([
            "load",
            "--data-dir",
            data.to_str().unwrap(),
            "--base-url",
            &base,
        ])
        .args(["--organization", &org, "--body-limit-bytes", "8000"])
        .arg(&lines)
        .arg(&whole)
        .arg(&edge)
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (reported, numbers) = refused_lines(&stdout);
    assert_eq!(numbers, vec![2, 4, 1, 1], "{stdout}");
    for r in &reported {
        assert_eq!(r["error"]["properties"]["limitBytes"], 8000, "{r}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 applied, 0 applied before, 4 refused"),
        "{stderr}"
    );
}

/// The node's identity is its base URL: the data dir records the first start's, and `load`,
/// `serve` and `import` under another refuse, naming both, unless `--change-base-url`.
#[tokio::test]
async fn a_data_dir_keeps_the_base_url_it_was_first_served_under() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let base = node.base.clone();
    let halted = node.halt().await;
    let data = halted.0.data_dir.clone();
    let file = halted.2.path().join("one.jsonl");
    std::fs::write(&file, history(trader.org())[0].to_string()).unwrap();
    let elsewhere = "https://node.example.com";
    let names_both = |out: &Output| {
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{said}");
        assert!(said.contains(&base) && said.contains(elsewhere), "{said}");
        assert!(said.contains("--change-base-url"), "{said}");
    };
    names_both(&load(elsewhere, &data, trader.org(), &[&file]).await);

    let serve = tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args(["serve", "--bind", "127.0.0.1:0", "--base-url", elsewhere])
        .arg("--data-dir")
        .arg(&data)
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .kill_on_drop(true)
        .output();
    // Generous: a refusal is immediate; a node that started would never end by itself.
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), serve)
        .await
        .expect("serve under another base URL must exit")
        .unwrap();
    names_both(&out);

    // An export carries the base URL: an import under another is refused and leaves nothing.
    let export = halted.2.path().join("all.nq");
    let out = cli(
        &["export", "--data-dir", data.to_str().unwrap(), "--output"],
        &export,
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let restored = tempfile::tempdir().unwrap();
    let target = restored.path().join("node");
    let import = |extra: Option<&'static str>| {
        let target = target.to_str().unwrap().to_owned();
        let export = export.clone();
        async move {
            let mut args = vec!["import", "--base-url", elsewhere, "--data-dir", &target];
            args.extend(extra);
            args.push("--input");
            cli(&args, &export).await
        }
    };
    names_both(&import(None).await);
    assert!(!target.exists());
    let out = import(Some("--change-base-url")).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Nothing was loaded, and the node still starts under its own URL.
    let node = TestNode::start_again(halted).await;
    let own = ok_json(trader.get(&node, LIST).await).await;
    assert_eq!(own["entities"].as_array().unwrap().len(), 0);
}

/// `dataspace-node ARGS… FILE`.
async fn cli(args: &[&str], file: &Path) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args(args)
        .arg(file)
        .env_remove("DATASPACE_NODE_DATA_DIR")
        .env_remove("DATASPACE_NODE_BASE_URL")
        .output()
        .await
        .expect("run dataspace-node")
}
