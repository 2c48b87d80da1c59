//! The SPARQL replica: a real Virtuoso (`virtuoso-t` as a child process) the node mirrors its
//! contribution graphs and readable-graph markers into, and answers analysts from.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::common::*;
use dataspace_node::store::graphs;

/// `dataspace-node replica <action>` on `data_dir` against `v`: exit code and stdout.
fn replica_command(action: &str, data_dir: &Path, v: &Virtuoso) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
        .args(["replica", action, "--data-dir"])
        .arg(data_dir)
        .args(v.args())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("replica {action}: {stderr}");
    (out.status.code().unwrap_or(-1), stdout)
}

/// Values of `?x` in the replica's answer to `q`.
async fn values(v: &Virtuoso, q: &str) -> Vec<String> {
    v.select(q).await["results"]["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["x"]["value"].as_str().unwrap().to_owned())
        .collect()
}

fn contribution_of(org: &str) -> String {
    // The example consignment's aig hex is derived by the node; its graphs are found by
    // the organisation key at their end.
    graphs::org_key(org)
}

/// The node's graphs on the replica holding `identifier`'s description.
async fn graphs_with(v: &Virtuoso, text: &str) -> Vec<String> {
    values(
        v,
        &format!(
            "SELECT DISTINCT ?x WHERE {{ GRAPH ?x {{ ?s ?p ?o FILTER(STR(?o) = \"{text}\") }} }}"
        ),
    )
    .await
}

/// Whether the marker graph of `org` on the replica marks `graph` readable.
async fn marked(v: &Virtuoso, org: &str, graph: &str) -> bool {
    let q = format!(
        "SELECT ?x WHERE {{ GRAPH <{}> {{ <{graph}> ?p ?x }} }}",
        graphs::readable(org).as_str()
    );
    !values(v, &q).await.is_empty()
}

#[tokio::test]
async fn publish_update_add_share_and_revoke_reach_the_replica_in_their_final_state() {
    let v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_max_lag_ms = 0;
    })
    .await;
    let operator = Operator::new(&node).await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let agency = Session::new(&node, "officer@kra.example").await;
    // Kenya and Tanzania: the update below moves the arrival to Dar es Salaam.
    let mut uids = Vec::new();
    for country in ["KE", "TZ"] {
        let p = operator
            .policy(
                &node,
                rule(
                    &node,
                    agency.org(),
                    "portOfEntryCountry",
                    "eq",
                    json!(country),
                ),
            )
            .await;
        uids.push(p["uid"].as_str().unwrap().to_owned());
    }

    // Publish: the trader's contribution graph, marked for the trader and the agency.
    trader.publish_example(&node, "create-consignment").await;
    caught_up(&node, &trader).await;
    let described = graphs_with(&v, IDENTIFIER).await;
    assert_eq!(described.len(), 1, "{described:?}");
    let trader_graph = described[0].clone();
    assert!(trader_graph.ends_with(&contribution_of(trader.org())));
    assert!(marked(&v, trader.org(), &trader_graph).await);
    assert!(marked(&v, agency.org(), &trader_graph).await);

    // Update: the replica holds the new description only.
    trader.publish_example(&node, "update-consignment").await;
    caught_up(&node, &trader).await;
    let summary = "Roasted coffee beans, 2 containers (arrival moved to Dar es Salaam)";
    assert_eq!(graphs_with(&v, summary).await, vec![trader_graph.clone()]);
    assert!(graphs_with(&v, "Roasted coffee beans, 2 containers")
        .await
        .is_empty());
    // Mombasa stays only as what the Create revision declared (the history keeps it).
    let declared = values(
        &v,
        "SELECT DISTINCT ?x WHERE { GRAPH ?g { ?s ?x ?o FILTER(STR(?o) = \"KEMBA\") } }",
    )
    .await;
    assert_eq!(
        declared,
        ["https://w3id.org/dataspace-node/ns#declaredPortOfEntry"]
    );
    assert!(
        graphs_with(&v, "MSKU1234565").await.is_empty(),
        "the old equipment is gone"
    );

    // Add: the agency's event in a graph of its own, shared with the trader.
    agency.publish_example(&node, "add-event").await;
    caught_up(&node, &agency).await;
    let agency_graphs: Vec<String> = values(
        &v,
        "SELECT DISTINCT ?x WHERE { GRAPH ?x { ?s ?p ?o } FILTER(STRSTARTS(STR(?x), \"urn:dataspace-node:contribution:\")) }",
    )
    .await
    .into_iter()
    .filter(|g| g.ends_with(&contribution_of(agency.org())))
    .collect();
    assert_eq!(agency_graphs.len(), 1);
    assert!(marked(&v, trader.org(), &agency_graphs[0]).await);
    assert!(marked(&v, agency.org(), &agency_graphs[0]).await);

    // Revoke (both rules that share it with the agency): the agency's markers of the
    // trader's graph go; its own graph stays its own.
    for uid in &uids {
        operator.delete(&node, uid).await;
    }
    caught_up(&node, &trader).await;
    assert!(!marked(&v, agency.org(), &trader_graph).await);
    assert!(marked(&v, agency.org(), &agency_graphs[0]).await);
    assert!(marked(&v, trader.org(), &trader_graph).await);

    // Through the node, the answer comes from the replica and says so.
    let r = query(
        &node,
        &agency,
        &format!("{PREFIXES}SELECT ?c WHERE {{ ?s dsn:portOfEntryCode ?c }}"),
        &[("scope", "shared")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["sparql-source"], "replica");
    assert_eq!(r.headers()["replica-lag-ms"], "0");
    let body = json_body(r).await;
    assert_eq!(
        body["results"]["bindings"],
        json!([]),
        "revoked: nothing shared"
    );

    // No system graph but the markers is on the replica: no accounts, keys, index, grants,
    // policies, activity logs, notifications, outbox or replication log.
    for g in values(
        &v,
        "SELECT DISTINCT ?x WHERE { GRAPH ?x { ?s ?p ?o } FILTER(STRSTARTS(STR(?x), \"urn:dataspace-node:\")) }",
    )
    .await
    {
        let allowed = graphs::parse_contribution(&g).is_some()
            || g.starts_with("urn:dataspace-node:system:readable:")
            || g == "urn:dataspace-node:replica";
        assert!(allowed, "{g} must not be replicated");
    }
    let hashes = values(
        &v,
        "SELECT (COUNT(*) AS ?x) WHERE { GRAPH ?g { ?s <https://w3id.org/dataspace-node/ns#passwordHash> ?h } }",
    )
    .await;
    assert_eq!(hashes, vec!["0".to_owned()]);

    // The replica equals the store.
    let dir = node.stop().await;
    let (code, differences) = replica_command("verify", dir.path(), &v);
    assert_eq!(code, 0, "{differences}");
}

/// Publishes consignments `from..to` as `who`, in order; stops at the first failure (the
/// node was killed) and returns how many were acknowledged.
async fn publish_range(node: &TestNode, who: &Session, from: u32, to: u32) -> u32 {
    let mut done = 0;
    for n in from..to {
        let a = consignment_at(who.org(), n, "KEMBA", "2026-12-24T06:00:00Z");
        let sent = node
            .client
            .post(node.url(INBOX))
            .header("x-api-key", &who.account.api_key)
            .bearer_auth(&who.token)
            .json(&a)
            .send()
            .await;
        match sent {
            Ok(r) if r.status() == StatusCode::CREATED => done += 1,
            _ => break,
        }
    }
    done
}

/// Rounds of the crash tests: three in CI; `DATASPACE_NODE_TEST_CRASH_ROUNDS=10` for the
/// issue's count.
fn rounds() -> u32 {
    std::env::var("DATASPACE_NODE_TEST_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn free_bind() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[tokio::test]
async fn a_node_killed_mid_stream_leaves_nothing_lost_or_reordered_on_the_replica() {
    let v = Virtuoso::start().await;
    let dir = tempfile::tempdir().unwrap();
    let bind = free_bind();
    let mut args: Vec<String> = vec![
        "--bind".into(),
        bind.clone(),
        "--replica-max-lag-ms".into(),
        "0".into(),
    ];
    args.extend(v.args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut p = NodeProcess::spawn_on(dir.path(), &args);
    let (_, trader, _) = kenya_circle(&p.node).await;
    let trader = std::sync::Arc::new(trader);
    let mut next = 1;
    let mut acknowledged = 0;
    // Kills at different points of the stream.
    for kill in 0..rounds() as u64 {
        let node = TestNode::external(p.node.base.clone(), p.node.config.clone());
        let who = trader.clone();
        let from = next;
        let writer =
            tokio::spawn(async move { publish_range(&node, &who, from, from + 1_000).await });
        tokio::time::sleep(Duration::from_millis(300 + 170 * kill)).await;
        p.kill();
        let written = writer.await.unwrap();
        assert!(written > 0, "nothing was written before the kill");
        acknowledged += written;
        // The one in flight at the kill may or may not have been committed: its id is not
        // used again.
        next += written + 1;
        p = NodeProcess::spawn_on(dir.path(), &args);
        // A consignment updated after the restart ends in its last state on the replica.
        let mut update = consignment_at(trader.org(), from, "TZDAR", "2026-12-27T06:00:00Z");
        update["type"] = json!("Update");
        assert_completed(&trader.publish(&p.node, &update).await);
    }
    caught_up(&p.node, &trader).await;
    let count = |port: &str| {
        format!("{PREFIXES}SELECT (COUNT(?s) AS ?n) WHERE {{ ?s dsn:portOfEntryCode \"{port}\" }}")
    };
    let n = |body: serde_json::Value| -> u32 {
        body["results"]["bindings"][0]["n"]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    // Every update in its last state; every acknowledged consignment there (plus at most
    // the one in flight at each kill).
    let moved = n(json_body(query(&p.node, &trader, &count("TZDAR"), &[]).await).await);
    assert_eq!(moved, rounds());
    let kept = n(json_body(query(&p.node, &trader, &count("KEMBA"), &[]).await).await);
    let total = moved + kept;
    assert!(
        total >= acknowledged && total <= acknowledged + rounds(),
        "{total} on the replica, {acknowledged} acknowledged"
    );
    p.terminate();
    assert!(p.exited_within(Duration::from_secs(20)).await.is_some());
    let (code, differences) = replica_command("verify", dir.path(), &v);
    assert_eq!(code, 0, "{differences}");
}

#[tokio::test]
async fn a_restarted_replica_catches_up_and_the_store_answers_while_it_is_down() {
    let mut v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_max_lag_ms = 0;
    })
    .await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    assert_eq!(publish_range(&node, &trader, 1, 4).await, 3);
    caught_up(&node, &trader).await;
    let count = format!("{PREFIXES}SELECT (COUNT(?s) AS ?n) WHERE {{ ?s dsn:portOfEntryCode ?c }}");
    let ask = |node: &TestNode| {
        node.client
            .get(node.url(SPARQL))
            .query(&[("query", count.as_str())])
            .header("x-api-key", &trader.account.api_key)
            .bearer_auth(&trader.token)
            .send()
    };

    let mut published = 3;
    for round in 0..rounds() {
        // Killed: the inbox never waits for it, and the store answers, with everything.
        v.kill();
        let from = 4 + 3 * round;
        assert_eq!(publish_range(&node, &trader, from, from + 3).await, 3);
        published += 3;
        let r = ask(&node).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["sparql-source"], "store");
        let lag: u64 = r.headers()["replica-lag-ms"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(lag > 0);
        assert_eq!(
            json_body(r).await["results"]["bindings"][0]["n"]["value"],
            published.to_string()
        );
        // Back: it catches up, and answers again.
        v.restart().await;
        caught_up(&node, &trader).await;
        let r = query(&node, &trader, &count, &[]).await;
        assert_eq!(r.headers()["sparql-source"], "replica");
        assert_eq!(
            json_body(r).await["results"]["bindings"][0]["n"]["value"],
            published.to_string()
        );
    }
    let dir = node.stop().await;
    let (code, differences) = replica_command("verify", dir.path(), &v);
    assert_eq!(code, 0, "{differences}");
}

#[tokio::test]
async fn a_stale_or_empty_replica_is_synced_whole_and_verify_reports_differences() {
    // A node that ran without a replica, then gets one: the start-up fills it.
    let node = TestNode::start().await;
    let (_, trader, agency) = kenya_circle(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    agency.publish_example(&node, "add-event").await;
    let (config, addr, dir) = node.halt().await;
    let v = Virtuoso::start().await;
    let mut config = config;
    v.configure(&mut config);
    config.replica.replica_max_lag_ms = 0;
    let node = TestNode::start_again((config, addr, dir)).await;
    caught_up(&node, &trader).await;
    assert_eq!(graphs_with(&v, IDENTIFIER).await.len(), 1);
    let dir = node.stop().await;
    assert_eq!(replica_command("verify", dir.path(), &v).0, 0);

    // Tampered with behind the node's back: a triple added, a graph dropped, a stray graph.
    let trader_graph = graphs_with(&v, IDENTIFIER).await[0].clone();
    let markers = graphs::readable(agency.org()).into_string();
    v.update(&format!(
        "INSERT DATA {{ GRAPH <{trader_graph}> {{ <urn:x> <urn:y> \"z\" }} }}"
    ));
    v.update(&format!("DROP SILENT GRAPH <{markers}>"));
    v.update(
        "INSERT DATA { GRAPH <urn:dataspace-node:contribution:ffff:0000> { <urn:x> <urn:y> \"z\" } }",
    );
    let (code, out) = replica_command("verify", dir.path(), &v);
    assert_eq!(code, 1, "{out}");
    for g in [
        trader_graph.as_str(),
        markers.as_str(),
        "urn:dataspace-node:contribution:ffff:0000",
    ] {
        assert!(out.contains(g), "{g} not reported: {out}");
    }
    assert_eq!(out.lines().count(), 3, "{out}");
    assert_eq!(replica_command("sync", dir.path(), &v).0, 0);
    let (code, out) = replica_command("verify", dir.path(), &v);
    assert_eq!(code, 0, "{out}");
}

#[tokio::test]
async fn wrong_replica_credentials_leave_queries_to_the_store() {
    let v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_password = Some("not-the-password".into());
    })
    .await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let started = Instant::now();
    // The start-up sync fails (401 twice): the replica is never used.
    while started.elapsed() < Duration::from_secs(2) {
        let r = node
            .client
            .get(node.url(SPARQL))
            .query(&[(
                "query",
                format!("{PREFIXES}SELECT ?c WHERE {{ ?s dsn:portOfEntryCode ?c }}"),
            )])
            .header("x-api-key", &trader.account.api_key)
            .bearer_auth(&trader.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["sparql-source"], "store");
        let rows = json_body(r).await;
        assert_eq!(rows["results"]["bindings"][0]["c"]["value"], "KEMBA");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        graphs_with(&v, IDENTIFIER).await.is_empty(),
        "nothing written without credentials"
    );
}

#[tokio::test]
async fn the_row_cap_and_the_time_limit_hold_on_the_replica() {
    let v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_max_lag_ms = 0;
        c.sparql_max_rows = 2;
        c.sparql_timeout_secs = 1;
    })
    .await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    assert_eq!(publish_range(&node, &trader, 1, 4).await, 3);
    // Two rows: answered by the replica.
    let two = format!("{PREFIXES}SELECT ?s WHERE {{ ?s dsn:portOfEntryCode ?c }} LIMIT 2");
    let r = query(&node, &trader, &two, &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["sparql-source"], "replica");
    // Three rows, with and without ORDER BY (which the replica gets without a LIMIT).
    for q in [
        "SELECT ?s WHERE { ?s dsn:portOfEntryCode ?c }",
        "SELECT ?s WHERE { ?s dsn:portOfEntryCode ?c } ORDER BY ?s",
    ] {
        let r = query(&node, &trader, &format!("{PREFIXES}{q}"), &[]).await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert!(
            body.to_string().contains("more than 2 results"),
            "{q}: {body}"
        );
    }
    // The time limit: the replica's request is given up and the caller answered 503.
    caught_up(&node, &trader).await;
    let started = Instant::now();
    let r = query(&node, &trader, EXPENSIVE, &[]).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    // The cross product would run for hours: a minute tells the request was given up.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn the_replicas_own_functions_are_refused_before_it_sees_the_query() {
    let v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_max_lag_ms = 0;
    })
    .await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let outsider = Session::new(&node, "analyst@elsewhere.example").await;
    assert_eq!(publish_range(&node, &trader, 1, 2).await, 1);
    caught_up(&node, &outsider).await;
    // Virtuoso's SQL functions read every graph, past the graph checks of the rewrite: sent
    // as it is, this query hands the outsider the trader's identifier.
    let inner = "select ?o where { graph ?g { ?s <https://vocabulary.uncefact.org/identifier> ?o \
                 FILTER(STRSTARTS(STR(?o), 'FWD')) } }";
    let leak = format!(
        "SELECT (STR(<bif:aref>(<bif:aref>(<sql:SPARQL_EVAL_TO_ARRAY>(\"{inner}\", \"\", 10), 0), 0)) AS ?x) {{}}"
    );
    assert_eq!(values(&v, &leak).await, ["FWD-2026-000001"]);
    let url = "(<bif:http_get>(\"http://127.0.0.1:9/\") AS ?x)";
    for (q, iri) in [
        (leak.clone(), "bif:aref"),
        (format!("SELECT {url} {{}}"), "bif:http_get"),
        (
            "SELECT (<bif:exec>(\"select 1\") AS ?x) WHERE { ?s ?p ?o }".to_owned(),
            "bif:exec",
        ),
    ] {
        let r = query(&node, &outsider, &q, &[]).await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert!(body.to_string().contains(iri), "{q}: {body}");
    }
    // A cast stays available, answered by the replica.
    let cast = "SELECT (<http://www.w3.org/2001/XMLSchema#integer>(\"7\") AS ?x) {}";
    let r = query(&node, &outsider, cast, &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["sparql-source"], "replica");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["results"]["bindings"][0]["x"]["value"], "7");
}

/// A TCP relay to the replica's update endpoint that can be held: while held it forwards
/// nothing (new and open connections alike), so the node's shipment waits without failing.
struct Relay {
    port: u16,
    open: tokio::sync::watch::Sender<bool>,
}

impl Relay {
    async fn to(target_port: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (open, watch) = tokio::sync::watch::channel(true);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", target_port)).await
                else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(Self::pump(cr, sw, watch.clone()));
                tokio::spawn(Self::pump(sr, cw, watch.clone()));
            }
        });
        Self { port, open }
    }

    async fn pump(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        mut open: tokio::sync::watch::Receiver<bool>,
    ) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let Ok(n) = from.read(&mut buf).await else {
                return;
            };
            if n == 0 {
                return;
            }
            // Held: the bytes wait here until the relay opens again.
            if open.wait_for(|o| *o).await.is_err() {
                return;
            }
            if to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    }

    fn hold(&self) {
        self.open.send_replace(false);
    }

    fn release(&self) {
        self.open.send_replace(true);
    }
}

/// Identifiers of the consignments `who` reads through the endpoint, and where the answer
/// came from.
async fn identifiers(node: &TestNode, who: &Session) -> (Vec<String>, String) {
    let q = format!("{PREFIXES}SELECT ?x WHERE {{ ?s dsn:identifier ?x }}");
    let r = node
        .client
        .get(node.url(SPARQL))
        .query(&[("query", q.as_str()), ("scope", "all")])
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let source = r.headers()["sparql-source"].to_str().unwrap().to_owned();
    let body: serde_json::Value = r.json().await.unwrap();
    let ids = body["results"]["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["x"]["value"].as_str().unwrap().to_owned())
        .collect();
    (ids, source)
}

/// A revocation the replica has not applied yet is never read there: the organisation it
/// concerns is answered by the store until the replica has the change, while the others
/// keep the replica.
#[tokio::test]
async fn a_revoked_agency_is_answered_by_the_store_until_the_replica_has_the_revocation() {
    let v = Virtuoso::start().await;
    let relay = Relay::to(v.http_port).await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_update_url = Some(format!("http://127.0.0.1:{}/sparql-auth", relay.port));
        // Lag alone never sends queries to the store here: only the watermark can.
        c.replica.replica_max_lag_ms = 600_000;
    })
    .await;
    let (operator, trader, agency, policy) = kenya_circle_with_policy(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    caught_up(&node, &agency).await;
    let (ids, source) = identifiers(&node, &agency).await;
    assert_eq!(
        (ids, source.as_str()),
        (vec!["FWD-2026-000417".to_owned()], "replica")
    );

    // The replica gets nothing more; the policy goes.
    relay.hold();
    operator
        .delete(&node, policy["uid"].as_str().unwrap())
        .await;
    let (ids, source) = identifiers(&node, &agency).await;
    assert_eq!(ids, Vec::<String>::new(), "read after the revocation");
    assert_eq!(source, "store");
    // The trader's readable graphs did not change: it stays on the replica.
    let (ids, source) = identifiers(&node, &trader).await;
    assert_eq!(
        (ids, source.as_str()),
        (vec!["FWD-2026-000417".to_owned()], "replica")
    );

    // Once the replica has the revocation, the agency is back on it, still reading nothing.
    relay.release();
    caught_up(&node, &agency).await;
    let (ids, source) = identifiers(&node, &agency).await;
    assert_eq!((ids, source.as_str()), (Vec::<String>::new(), "replica"));
}

/// One organisation's query the replica cannot run as the store does (here a negated path of
/// any length, which Virtuoso refuses) is answered by the store, that query alone: the next
/// organisation's query still goes to the replica.
#[tokio::test]
async fn a_query_the_replica_cannot_run_leaves_the_replica_to_the_others() {
    let v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_max_lag_ms = 0;
    })
    .await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    caught_up(&node, &agency).await;
    for _ in 0..3 {
        let r = query(
            &node,
            &trader,
            "SELECT ?s ?o WHERE { ?s (!<urn:x>)+ ?o } LIMIT 1",
            &[],
        )
        .await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["sparql-source"], "store");
        let (ids, source) = identifiers(&node, &agency).await;
        assert_eq!(
            (ids, source.as_str()),
            (vec!["FWD-2026-000417".to_owned()], "replica")
        );
    }
}
