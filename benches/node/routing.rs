//! Routing: sharing policies stored through HTTP, then Creates that they match and Creates
//! that no policy names, taken in turns.

use std::time::Instant;

use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::cli::Args;
use crate::client::Client;
use crate::node::create_account;
use crate::report::Table;
use crate::stats::{percentile, run_of, Run};

/// What the routing phase measured.
pub struct Routed {
    /// Creates to a port no policy names.
    pub unrouted: Run,
    pub routed: Run,
    /// p50 and p99 of the first list page (`limit=50`, the default scope `all`) of the border
    /// agency the first matching policy names: rows shared with it, each checked for an own
    /// copy of its identifier.
    pub agency_list: (f64, f64),
}

/// Valid ISO 3166 codes other than the benchmark consignment's KE (entry) and BR (exit), and
/// other than the countries of the fill-up's ports of entry (`client::PORTS`): until
/// 2026-11-25 the list held seven of them, so ~40 country policies each matched seven in eight
/// fill-up consignments, which were then shared with ~35 organisations each instead of the two
/// policies' assignees in one in eight (KEMBA) the benchmark meant.
const OTHER_COUNTRIES: &[&str] = &[
    "FR", "ES", "PT", "IT", "GR", "TR", "EG", "MA", "NG", "GH", "CI", "SN", "ZA", "UG", "RW", "ET",
    "DJ", "SO", "MZ", "AO", "NA", "IN", "PK", "BD", "LK", "JP", "KR", "MY", "TH", "VN", "ID", "PH",
    "AU", "NZ", "CA", "MX", "PA", "CO", "PE", "CL", "AR", "UY", "GB", "IE", "NO", "SE", "DK", "FI",
    "PL", "AE", "SA", "OM", "QA",
];

/// Three letters from `i`: the location part of a made-up UN/LOCODE.
fn letters(i: usize) -> String {
    let a = b'A' + (i % 26) as u8;
    let b = b'A' + (i / 26 % 26) as u8;
    let c = b'A' + (i / 676 % 26) as u8;
    String::from_utf8(vec![a, b, c]).unwrap()
}

/// Policy `i` for `assignee`: the first `matching` ones match the benchmark consignment
/// (Kenya as the country of entry, then KEMBA), the others name other countries and ports.
fn policy(i: usize, matching: usize, assignee: &str, target: &str) -> Value {
    let country = OTHER_COUNTRIES[i % OTHER_COUNTRIES.len()];
    let next = OTHER_COUNTRIES[(i + 7) % OTHER_COUNTRIES.len()];
    let (operand, operator, right) = match i {
        0 if matching > 0 => ("portOfEntryCountry", "eq", json!("KE")),
        1 if matching > 1 => ("portOfEntry", "eq", json!("KEMBA")),
        _ => match i % 4 {
            0 => ("portOfEntryCountry", "eq", json!(country)),
            1 => ("portOfExitCountry", "isAnyOf", json!([country, next])),
            2 => (
                "portOfEntry",
                "eq",
                json!(format!("{country}{}", letters(i))),
            ),
            _ => (
                "portOfExit",
                "isAnyOf",
                json!([
                    format!("{country}{}", letters(i)),
                    format!("{next}{}", letters(i + 1))
                ]),
            ),
        },
    };
    json!({
        "@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set",
        "permission": [{"action": "read", "assignee": assignee, "target": target,
                        "constraint": [{"leftOperand": operand, "operator": operator, "rightOperand": right}]}]
    })
}

/// Stores `n` policies through the API (the operator account's session) for 50 assignee organisations;
/// the seconds it took and the first assignee (the border agency of policy 0) as a client.
async fn load_policies(
    client: &Client,
    base: &str,
    operator: &str,
    n: usize,
    matching: usize,
) -> (f64, Client) {
    // Only the first `matching` policies may match a fill-up consignment (see OTHER_COUNTRIES).
    assert!(crate::client::PORTS
        .iter()
        .all(|port| !OTHER_COUNTRIES.contains(&&port[..2])));
    let t = Instant::now();
    let mut orgs = Vec::new();
    let mut agency = None;
    // New organisations on every run (a kept data dir already has a previous run's).
    let run = uuid::Uuid::new_v4().simple().to_string();
    for i in 0..50 {
        let created = create_account(
            &client.http,
            base,
            operator,
            &format!("agency{i}-{}@bench.example", &run[..8]),
        )
        .await;
        let org = created["organizationId"].as_str().unwrap().to_owned();
        agency.get_or_insert_with(|| Client {
            http: client.http.clone(),
            url: client.url.clone(),
            key: created["apiKey"].as_str().unwrap().to_owned(),
            token: created["token"].as_str().unwrap().to_owned(),
            org: org.clone(),
        });
        orgs.push(org);
    }
    // The node's own base URL (its ids), not the address it listens on.
    let target = format!(
        "{}/supply-chain/data-space/consignments",
        crate::node::BENCH_BASE_URL
    );
    let bodies: Vec<Value> = (0..n)
        .map(|i| policy(i, matching, &orgs[i % orgs.len()], &target))
        .collect();
    let url = format!("{base}/supply-chain/data-space/policies");
    let session = crate::node::operator_session(&client.http, base).await;
    let mut sent = futures_util::stream::iter(bodies.into_iter().map(|body| {
        client
            .http
            .post(&url)
            .header("x-api-key", operator)
            .bearer_auth(&session)
            .json(&body)
            .send()
    }))
    .buffer_unordered(8);
    while let Some(r) = sent.next().await {
        let r = r.unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
    }
    (t.elapsed().as_secs_f64(), agency.unwrap())
}

/// Stores `--policies` policies, then measures Creates: the unrouted run (a port no policy
/// names) and the routed one; then the list of the agency they were routed to.
pub async fn routed_creates(
    client: &Client,
    base: &str,
    operator: &str,
    args: &Args,
    table: &mut Table,
) -> Routed {
    let n = (args.sequential / 2).max(1);
    let (seconds, agency) =
        load_policies(client, base, operator, args.policies, args.matching).await;
    table.add(
        format!("storing {} policies through HTTP", args.policies),
        seconds,
        "s",
    );
    // Routed Creates (Santos → Mombasa: the matching policies grant and notify) and
    // Creates to a port no policy names (Hong Kong: the index is asked, nothing
    // matches), taken in turns so both see the same store: a Create's cost moves with
    // the store's size and its compactions.
    let t = Instant::now();
    let (mut matched, mut unmatched) = (Vec::new(), Vec::new());
    for i in 0..n {
        matched.push(client.create(3_000_000 + i).await);
        unmatched.push(client.create_to_port(3_500_000 + i, "HKHKG").await);
    }
    let wall = t.elapsed() / 2;
    let list = format!("{base}/supply-chain/data-space/consignments?limit=50");
    let mut lat = Vec::new();
    for _ in 0..args.reads {
        lat.push(crate::reads::timed_get(&agency, &list).await.0);
    }
    lat.sort();
    Routed {
        unrouted: run_of(&unmatched, wall),
        routed: run_of(&matched, wall),
        agency_list: (percentile(&lat, 0.5), percentile(&lat, 0.99)),
    }
}
