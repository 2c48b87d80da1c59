//! Fuzzing of the node's untrusted inputs, with proptest (cargo-fuzz needs a nightly toolchain).
//!
//! - The inbox: `Intake::process`, the whole inbox path without HTTP — bytes → JSON → request
//!   checks → JSON-LD expansion → shapes → ports → the store transaction (a real node on a
//!   temporary directory, with a routing policy in place) — then the reads of what it applied.
//!   Inputs: arbitrary bytes, byte-mutated examples, arbitrary JSON (alone and as the object of
//!   a well-formed activity) and structured mutations of `tests/fixtures/examples/*.json`.
//! - List cursors: arbitrary strings, and cursors the node handed out with bits flipped,
//!   truncated, extended or replayed for another organisation, list or scope.
//!
//! Properties: nothing panics; client input gets `Ok` or a client error (400/401/403/404/409/
//! 413), never `Error::Internal`; no input makes the node open a connection (contexts are
//! never fetched); a tampered cursor never decodes to another position than the one encoded.
//!
//! Every file in `tests/fuzz-corpus/` goes through the same properties first: the examples and
//! the inputs that once found a fault. `PROPTEST_CASES` sets the cases per property (256 by
//! default); failures persist in `tests/fuzz-corpus/proptest-regressions/`. `FUZZ_LOG_DIR`
//! keeps the applied inputs of a run in order and `FUZZ_INBOX_DIR` replays a folder of inputs
//! (for failures that depend on what was applied before).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dataspace_node::accounts::{KeyHolder, NewAccount};
use dataspace_node::auth::Caller;
use dataspace_node::consignment::cursor::{Cursors, Position};
use dataspace_node::consignment::Scope;
use dataspace_node::intake::activity;
use dataspace_node::node::Node;
use dataspace_node::views::linked::Linked;
use dataspace_node::views::Description;
use dataspace_node::{Config, Error};
use oxigraph::io::RdfFormat;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{FileFailurePersistence, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};
use tempfile::TempDir;

/// The organisation of the examples' actor, the caller of every inbox case.
const ORG: &str = "did:web:forwarder.example.com";
const OPERATOR_KEY: &str = "fuzz-operator-key-0123456789";
const AS_CONTEXT: &str = "https://www.w3.org/ns/activitystreams";
const UNECE_CONTEXT: &str = "https://vocabulary.uncefact.org/unece-context-D23B.jsonld";
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz-corpus");
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/examples");

type TestResult = Result<(), TestCaseError>;

// ---------------------------------------------------------------------------------------------
// The node under test
// ---------------------------------------------------------------------------------------------

/// A node on a temporary directory, with a second organisation (a border agency) that an
/// operator policy shares every consignment entering Kenya with, and the example consignment
/// in place so that the `Add` examples reach the store.
struct Harness {
    node: Arc<Node>,
    rt: tokio::runtime::Runtime,
    agency: String,
    /// A port that nothing may connect to: every URL the inputs name points here.
    trap: TcpListener,
    trap_url: String,
    /// How the cases ended (request error by field, failed task, applied), printed at the end.
    outcomes: Mutex<BTreeMap<String, usize>>,
    name: &'static str,
    logged: std::sync::atomic::AtomicUsize,
    _dir: TempDir,
}

fn caller(org: &str) -> Caller {
    Caller::acting_for(format!("{org}:user:fuzz"), org.to_owned())
}

fn is_client_error(e: &Error) -> bool {
    matches!(
        e,
        Error::BadRequest { .. }
            | Error::Unauthorized(_)
            | Error::Forbidden(_)
            | Error::NotFound(_)
            | Error::Conflict(_)
            | Error::PayloadTooLarge { .. }
    )
}

fn status(e: &Error) -> &'static str {
    match e {
        Error::BadRequest { .. } => "400",
        Error::Unauthorized(_) => "401",
        Error::Forbidden(_) => "403",
        Error::NotFound(_) => "404",
        Error::Conflict(_) => "409",
        Error::PayloadTooLarge { .. } => "413",
        _ => "other",
    }
}

/// `Ok(Some)` for a value, `Ok(None)` for a client error, a failure for anything else.
fn client_error<T>(
    what: &str,
    input: &str,
    result: Result<T, Error>,
) -> Result<Option<T>, TestCaseError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_client_error(&e) => Ok(None),
        Err(e) => Err(TestCaseError::fail(format!(
            "{what}: {e:?} for a client input: {input}"
        ))),
    }
}

impl Harness {
    /// `name`: the test's, for the folder of its logged inputs.
    fn new(name: &'static str) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::with_data_dir(dir.path());
        config.api_key = Some(OPERATOR_KEY.into());
        let node = {
            let _entered = rt.enter();
            Arc::new(Node::open(config, "http://127.0.0.1:9").unwrap())
        };
        let trap = TcpListener::bind("127.0.0.1:0").unwrap();
        trap.set_nonblocking(true).unwrap();
        let trap_url = format!("http://{}/context.jsonld", trap.local_addr().unwrap());
        let agency = node
            .accounts
            .create(
                &KeyHolder::Operator,
                OPERATOR_KEY,
                NewAccount {
                    email: "officer@kra.example".into(),
                    password_hash: "unused".into(),
                    profile_name: None,
                    organization: None,
                },
            )
            .unwrap()
            .organization;
        node.sharing
            .create_policy(
                &json!({
                    "@context": "http://www.w3.org/ns/odrl.jsonld",
                    "@type": "Set",
                    "permission": [{
                        "action": "read", "assignee": agency, "target": node.sharing.target(),
                        "constraint": [{"leftOperand": "portOfEntryCountry", "operator": "eq",
                                        "rightOperand": "KE"}]
                    }]
                }),
                dataspace_node::accounts::audit::Audited {
                    log: &node.accounts.audit,
                    actor: &dataspace_node::accounts::audit::Actor {
                        user: "fuzz".into(),
                        organization: "fuzz".into(),
                    },
                },
            )
            .unwrap();
        let h = Self {
            node,
            rt,
            agency,
            trap,
            trap_url,
            outcomes: Mutex::default(),
            name,
            logged: Default::default(),
            _dir: dir,
        };
        for name in ["create-consignment", "no-movements"] {
            let body = std::fs::read(format!("{EXAMPLES}/{name}.json")).unwrap();
            h.inbox(&body).unwrap();
        }
        h
    }

    /// One inbox body through the whole intake, as the handler runs it; then, when it was
    /// applied, the reads of the consignment it touched.
    fn inbox(&self, body: &[u8]) -> TestResult {
        self.inbox_outcome(ORG, body).map(|_| ())
    }

    /// [`Harness::inbox`], answering how the case ended.
    fn inbox_outcome(&self, org: &str, body: &[u8]) -> Result<String, TestCaseError> {
        let logged = self.log(org, body);
        let poster = caller(org);
        let node = self.node.clone();
        let owned = body.to_vec();
        let joined = self.rt.block_on(async move {
            tokio::task::spawn_blocking(move || node.intake.process(&poster, &owned)).await
        });
        let shown = || String::from_utf8_lossy(&body[..body.len().min(2000)]).into_owned();
        let result = match joined {
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "intake panicked: {e}: {}",
                    shown()
                )))
            }
            Ok(result) => result,
        };
        let label = match &result {
            Err(e) if activity::parse(body, org).is_err() => {
                format!("{} (request checks)", status(e))
            }
            Err(e) => format!("{} (expansion)", status(e)),
            Ok(o) => match &o.entry.tasks[0].error {
                Some(e) => format!("failed task ({})", e.cause["name"].as_str().unwrap_or("")),
                None if o.created => "applied".to_owned(),
                None => "replayed".to_owned(),
            },
        };
        self.count(label.clone());
        if let Some(file) = logged.filter(|_| label != "applied") {
            let _ = std::fs::remove_file(file);
        }
        let outcome = client_error("intake", &shown(), result)?;
        self.no_connection()?;
        let Some(outcome) = outcome else {
            return Ok(label);
        };
        if !outcome.created || outcome.entry.failed() {
            // Failed, or a replay answered with the entry of an earlier post (what it applied
            // may have changed since).
            return Ok(label);
        }
        // Applied: whatever was stored must read back (the view, linked data, the lists).
        let document: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let key = match document["type"].as_str() {
            Some("Add") => &document["target"]["globalId"],
            _ => &document["object"]["globalId"],
        };
        let key = match key {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("@value")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            _ => String::new(),
        };
        self.read_back(&key, org, &shown())?;
        Ok(label)
    }

    /// With `FUZZ_LOG_DIR` set, keeps every applied input there, numbered in order, so that
    /// a failure that depends on what was applied before can be replayed (`FUZZ_INBOX_DIR`).
    fn log(&self, org: &str, body: &[u8]) -> Option<PathBuf> {
        let dir = Path::new(&std::env::var("FUZZ_LOG_DIR").ok()?).join(self.name);
        let n = self
            .logged
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let by = if org == ORG { "" } else { "-agency" };
        let file = dir.join(format!("{n:07}{by}.json"));
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::write(
            &file,
            replace(body, self.agency.as_bytes(), AGENCY.as_bytes()),
        )
        .ok()?;
        Some(file)
    }

    fn count(&self, outcome: String) {
        *self.outcomes.lock().unwrap().entry(outcome).or_default() += 1;
    }

    /// Prints how the cases ended (`cargo test --test fuzz -- --nocapture`).
    fn report(&self) {
        let outcomes = self.outcomes.lock().unwrap();
        let total: usize = outcomes.values().sum();
        let mut lines: Vec<(&String, &usize)> = outcomes.iter().collect();
        lines.sort_by(|a, b| b.1.cmp(a.1));
        let shown: Vec<String> = lines.iter().map(|(k, v)| format!("{v} {k}")).collect();
        eprintln!("{}: {total} inbox cases: {}", self.name, shown.join(", "));
    }

    fn read_back(&self, key: &str, poster: &str, input: &str) -> TestResult {
        let poster = poster.to_owned();
        let node = self.node.clone();
        let key = key.to_owned();
        let agency = self.agency.clone();
        let joined = self.rt.block_on(async move {
            tokio::task::spawn_blocking(move || -> Result<(), (String, Error)> {
                let tag = |what: &'static str| move |e: Error| (what.to_owned(), e);
                for (org, scope) in [(ORG, Scope::All), (agency.as_str(), Scope::All)] {
                    let who = caller(org);
                    let read = node.views.read(&who, scope, &key, Description::Read);
                    // The publisher reads what it just applied.
                    let read = if org == poster {
                        read.map(Some)
                    } else {
                        ok_or_client(read)
                    };
                    if let Some(read) = read.map_err(tag("read"))? {
                        node.views.render_view(&read, org);
                        node.views.render_events(&read);
                    }
                    for format in [Linked::JsonLd, Linked::Rdf(RdfFormat::Turtle)] {
                        ok_or_client(node.views.linked(&who, scope, &key, format, None))
                            .map_err(tag("linked"))?;
                    }
                    let plan = node.views.list(&who, scope, 5, None).map_err(tag("list"))?;
                    node.views.finish_list(plan);
                    node.views
                        .all_documents(&who, scope, 5, None, None)
                        .map_err(tag("documents"))?;
                }
                node.sharing
                    .notification_page(&caller(&agency), 5, None)
                    .map_err(tag("notifications"))?;
                Ok(())
            })
            .await
        });
        match joined {
            Err(e) => Err(TestCaseError::fail(format!(
                "a read panicked: {e}: {input}"
            ))),
            Ok(Err((what, e))) => Err(TestCaseError::fail(format!(
                "{what} of an applied activity failed: {e:?}: {input}"
            ))),
            Ok(Ok(())) => Ok(()),
        }
    }

    fn no_connection(&self) -> TestResult {
        match self.trap.accept() {
            Ok((_, from)) => Err(TestCaseError::fail(format!(
                "the node connected to {} (from {from})",
                self.trap_url
            ))),
            Err(_) => Ok(()),
        }
    }

    /// A cursor string (from a query string: anything) through every list that takes one.
    fn cursor_in_lists(&self, cursor: &str) -> TestResult {
        let node = self.node.clone();
        let c = cursor.to_owned();
        let agency = self.agency.clone();
        let joined = self.rt.block_on(async move {
            tokio::task::spawn_blocking(move || {
                let mut results = Vec::new();
                for org in [ORG, agency.as_str()] {
                    let who = caller(org);
                    for scope in [Scope::Own, Scope::Shared, Scope::All] {
                        results.push(node.views.list(&who, scope, 2, Some(&c)).map(|_| ()));
                        results.push(
                            node.views
                                .all_documents(&who, scope, 2, Some(&c), None)
                                .map(|_| ()),
                        );
                    }
                    results.push(node.sharing.policies(&who, 2, Some(&c)).map(|_| ()));
                    results.push(
                        node.sharing
                            .notification_page(&who, 2, Some(&c))
                            .map(|_| ()),
                    );
                }
                results
            })
            .await
        });
        let results =
            joined.map_err(|e| TestCaseError::fail(format!("a list panicked: {e}: {cursor:?}")))?;
        for r in results {
            client_error("list", &format!("{cursor:?}"), r)?;
        }
        Ok(())
    }

    /// A cursor the node itself hands out for the caller's own consignments.
    fn node_cursor(&self) -> String {
        let node = self.node.clone();
        self.rt
            .block_on(async move {
                tokio::task::spawn_blocking(move || {
                    let plan = node.views.list(&caller(ORG), Scope::Own, 1, None).unwrap();
                    node.views.finish_list(plan).cursor
                })
                .await
            })
            .unwrap()
            .expect("two consignments, one per page")
    }
}

/// Stands for the agency's DID (made anew by each node) in logged and corpus inputs.
const AGENCY: &str = "did:web:agency.invalid";

fn replace(body: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(i) = rest.windows(from.len()).position(|w| w == from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// `Ok(Some)`, `Ok(None)` for a client error, `Err` for anything else.
fn ok_or_client<T>(r: Result<T, Error>) -> Result<Option<T>, Error> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_client_error(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Runs `test` on `cases()` values of `strategy`; failures persist in the corpus folder.
fn run<S: Strategy>(regressions: &'static str, strategy: S, test: impl Fn(S::Value) -> TestResult) {
    let mut config = ProptestConfig::with_cases(cases());
    config.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(regressions)));
    // Shrinking re-runs the whole intake per step; keep it bounded.
    config.max_shrink_iters = 512;
    config.max_shrink_time = 120_000;
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

macro_rules! regressions {
    ($name:literal) => {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fuzz-corpus/proptest-regressions/",
            $name,
            ".txt"
        )
    };
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

fn examples() -> Vec<Value> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(EXAMPLES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

/// The terms of the shipped contexts (D23B and AS2), as keys and `unece:` compact IRIs.
fn terms() -> Vec<String> {
    let mut out = Vec::new();
    for text in [
        include_str!("../contexts/unece-context-D23B.jsonld"),
        include_str!("../contexts/activitystreams.jsonld"),
    ] {
        let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
        out.extend(v["@context"].as_object().unwrap().keys().cloned());
    }
    out.sort();
    out
}

const KEYWORDS: &[&str] = &[
    "@base",
    "@container",
    "@context",
    "@direction",
    "@graph",
    "@id",
    "@import",
    "@included",
    "@index",
    "@json",
    "@language",
    "@list",
    "@nest",
    "@none",
    "@prefix",
    "@propagate",
    "@protected",
    "@reverse",
    "@set",
    "@type",
    "@value",
    "@version",
    "@vocab",
    "@unknown",
    "@",
    "",
    "id",
    "type",
    "_:b0",
    "unece:identifier",
    "unece:nope",
    "https://vocabulary.uncefact.org/globalId",
    "https://w3id.org/dataspace-node/ns#contributor",
    "urn:dataspace-node:consignment:x",
    "http://a b",
    "relative",
    "as:object",
    "xsd:string",
];

const ODD_STRINGS: &[&str] = &[
    "",
    " ",
    "\u{0}",
    "\u{feff}",
    "\u{202e}gnp.exe",
    "e\u{301}",
    "🚢📦",
    "\\",
    "\"",
    "_:",
    "_:b0",
    "_:b1",
    "_: x",
    "_:b0 x",
    ":",
    "unece:",
    "unece:CountryId#KE",
    "unece:DocumentCodeList#380",
    "unece:TransportModeCodeList#1",
    "unece:UnitMeasureCode#XCN",
    "https://vocabulary.uncefact.org/",
    "https://w3id.org/dataspace-node/ns#Consignment",
    "urn:dataspace-node:consignment:00000000000000000000000000000000",
    "http://a b",
    "http://[::1",
    "http://example.org/\u{0}",
    "file:///etc/passwd",
    "relative/path",
    "//host/x",
    "@id",
    "@type",
    "@context",
    "@none",
    "@json",
    "en",
    "en-GB",
    "not a language",
    "x-toolongsubtag-toolongsubtag",
    "2026-12-01T08:00:00Z",
    "2026-12-01T08:00:00.123456789+14:00",
    "2026-02-30T08:00:00Z",
    "2026-12-01",
    "not-a-date",
    "-999999-01-01T00:00:00Z",
    "999999999-12-31T23:59:59Z",
    "2026-12-01T24:00:00Z",
    "true",
    "1",
    "KEMBA",
    "kemba",
    "KEMB",
    "KÉMBA",
    "ÉÉMBA",
    "XXMBA",
    "TZDAR",
    "BRSSZ",
    "https://ref.gs1.org/voc/LocationID_Type-UN_LOCODE",
    "https://ref.gs1.org/voc/OrganizationID_Type-DID",
    ORG,
    "did:web:other.example",
    "urn:uuid:7d1f8f3e-5b3c-4c1e-9a51-2f6a1f0b9c11",
    "FWD-2026-000417",
    "data:application/pdf;base64,JVBERi0xLjQK",
    "data:,",
    "data:text/plain,hello",
    "data:;base64,!!!!",
    "data:application/pdf;base64,",
    "data:application/x-msdownload;base64,TVqQAAMAAAAEAAAA",
    "aig:00000000000000000000000000000000",
    "Consignment",
    "SupplyChainEvent",
    "Document",
    "TradeParty",
    "Create",
];

fn odd_string(terms: Arc<Vec<String>>, trap: String) -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select(ODD_STRINGS).prop_map(str::to_owned),
        2 => any::<String>(),
        1 => "\\PC{0,40}",
        1 => (0usize..100_000).prop_map(|n| "x".repeat(n)),
        1 => (any::<char>(), 1usize..3_000).prop_map(|(c, n)| c.to_string().repeat(n)),
        1 => Just(trap),
        2 => prop::sample::select((*terms).clone()).prop_map(|t| format!("unece:{t}")),
        2 => data_url(),
    ]
    .boxed()
}

/// `data:` URLs (a document's `uRIId`), well-formed or not.
fn data_url() -> BoxedStrategy<String> {
    use base64::Engine;
    let media = prop::sample::select(vec![
        "",
        "application/pdf",
        "APPLICATION/PDF",
        "text/plain;charset=utf-8",
        "image/png",
        "application/x-msdownload",
        "x",
        "a/b/c",
        ";",
        " ",
        "é/ü",
    ]);
    let body = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256)
            .prop_map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
        "[A-Za-z0-9+/=% ]{0,64}",
        any::<String>(),
    ];
    (media, any::<bool>(), body)
        .prop_map(|(m, b64, body)| format!("data:{m}{},{body}", if b64 { ";base64" } else { "" }))
        .boxed()
}

fn key(terms: Arc<Vec<String>>) -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select((*terms).clone()),
        3 => prop::sample::select(KEYWORDS).prop_map(str::to_owned),
        1 => any::<String>(),
        1 => prop::sample::select((*terms).clone()).prop_map(|t| format!("unece:{t}")),
    ]
    .boxed()
}

fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        prop::sample::select(vec![
            json!(0),
            json!(-0.0),
            json!(0.5),
            json!(1e21),
            json!(1e300),
            json!(-1e308),
            json!(5e-324),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(2.0),
        ]),
    ]
    .boxed()
}

fn leaf(terms: Arc<Vec<String>>, trap: String) -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => number(),
        5 => odd_string(terms, trap).prop_map(Value::String),
    ]
    .boxed()
}

/// Arbitrary JSON, keys mostly from the contexts and JSON-LD's keywords.
fn json_value(terms: Arc<Vec<String>>, trap: String) -> BoxedStrategy<Value> {
    let keys = key(terms.clone());
    leaf(terms, trap)
        .prop_recursive(5, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

/// `@context` values: the supported ones, aliases, unknown and odd ones.
fn context(trap: String) -> BoxedStrategy<Value> {
    prop::sample::select(vec![
        json!(AS_CONTEXT),
        json!(UNECE_CONTEXT),
        json!([AS_CONTEXT, UNECE_CONTEXT]),
        json!([UNECE_CONTEXT, AS_CONTEXT]),
        json!("https://vocabulary.uncefact.org/"),
        json!("https://www.w3.org/ns/activitystreams.jsonld"),
        json!(trap),
        json!([AS_CONTEXT, trap]),
        json!("https://evil.example/context.jsonld"),
        json!({"@vocab": "https://evil.example/"}),
        json!({"Consignment": "https://w3id.org/dataspace-node/ns#Consignment"}),
        json!([AS_CONTEXT, {"@base": "https://evil.example/"}]),
        json!(null),
        json!([]),
        json!([null]),
        json!(""),
        json!(7),
        json!([[AS_CONTEXT]]),
        json!(vec![UNECE_CONTEXT; 7]),
        json!(vec![AS_CONTEXT; 3]),
    ])
    .boxed()
}

#[derive(Debug, Clone)]
enum Op {
    Remove,
    Replace(Value),
    Insert(String, Value),
    Text(String),
    /// `[v]`, `{"@list": v}`, `{"@set": v}`, `{"@value": v}`, `{"@graph": v}`, ...
    Wrap(&'static str),
    Repeat(usize),
    /// `depth` levels of `{key: ...}` (or of arrays when `key` is empty) around the value.
    Nest(usize, String),
    LongArray(Value, usize),
    Context(Value),
    /// A JSON-LD keyword added to an object with a value of its own.
    Keyword(&'static str, Value),
}

#[derive(Debug, Clone)]
struct Mutation {
    at: Index,
    op: Op,
}

const WRAPPERS: &[&str] = &[
    "[]",
    "@list",
    "@set",
    "@value",
    "@graph",
    "@included",
    "@reverse",
    "@json",
    "@index",
    "@nest",
    "@id",
    "@type",
];

fn mutation(terms: Arc<Vec<String>>, trap: String) -> BoxedStrategy<Mutation> {
    let value = json_value(terms.clone(), trap.clone());
    let op = prop_oneof![
        3 => Just(Op::Remove),
        3 => value.clone().prop_map(Op::Replace),
        3 => (key(terms.clone()), value.clone()).prop_map(|(k, v)| Op::Insert(k, v)),
        4 => odd_string(terms.clone(), trap.clone()).prop_map(Op::Text),
        2 => prop::sample::select(WRAPPERS).prop_map(Op::Wrap),
        1 => (2usize..40).prop_map(Op::Repeat),
        1 => (
            prop_oneof![100usize..135, 1usize..20],
            prop::sample::select(vec![
                "", "includedConsignment", "consignorParty", "@list", "object", "unece:x"
            ])
        )
            .prop_map(|(d, k)| Op::Nest(d, k.to_owned())),
        1 => (leaf(terms.clone(), trap.clone()), 500usize..20_000)
            .prop_map(|(v, n)| Op::LongArray(v, n)),
        2 => context(trap.clone()).prop_map(Op::Context),
        2 => (prop::sample::select(KEYWORDS), value).prop_map(|(k, v)| Op::Keyword(k, v)),
    ];
    (any::<Index>(), op)
        .prop_map(|(at, op)| Mutation { at, op })
        .boxed()
}

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    At(usize),
}

/// Every node of the document (the first few elements of a long array stand for the rest),
/// and whether it is an object.
fn paths(v: &Value, here: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, bool)>) {
    out.push((here.clone(), v.is_object()));
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                here.push(Seg::Key(k.clone()));
                paths(child, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate().take(8) {
                here.push(Seg::At(i));
                paths(child, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn at<'v>(v: &'v mut Value, path: &[Seg]) -> &'v mut Value {
    path.iter().fold(v, |v, seg| match seg {
        Seg::Key(k) => &mut v[k.as_str()],
        Seg::At(i) => &mut v[*i],
    })
}

fn nest(mut v: Value, depth: usize, key: &str) -> Value {
    for _ in 0..depth {
        v = if key.is_empty() {
            json!([v])
        } else {
            json!({ key: v })
        };
    }
    v
}

/// Applies the mutations one after the other (each at a node of the document as it is then);
/// a mutation that would make the body larger than 4 MB is skipped.
fn mutate(mut doc: Value, mutations: &[Mutation]) -> Value {
    for m in mutations {
        let mut all = Vec::new();
        paths(&doc, &mut Vec::new(), &mut all);
        let objects: Vec<&Vec<Seg>> = all.iter().filter(|p| p.1).map(|p| &p.0).collect();
        let path = m.at.get(&all).0.clone();
        let object = (!objects.is_empty()).then(|| m.at.get(&objects).to_vec());
        let before = doc.clone();
        let insert = |doc: &mut Value, key: &str, value: &Value| {
            if let Some(target) = &object {
                if let Value::Object(map) = at(doc, target) {
                    map.insert(key.to_owned(), value.clone());
                }
            }
        };
        match &m.op {
            Op::Remove => {
                if let Some((last, parent)) = path.split_last() {
                    match (at(&mut doc, parent), last) {
                        (Value::Object(map), Seg::Key(k)) => {
                            map.remove(k);
                        }
                        (Value::Array(items), Seg::At(i)) => {
                            items.remove(*i);
                        }
                        _ => {}
                    }
                }
            }
            Op::Replace(v) => *at(&mut doc, &path) = v.clone(),
            Op::Text(s) => *at(&mut doc, &path) = Value::String(s.clone()),
            Op::Insert(k, v) => insert(&mut doc, k, v),
            Op::Keyword(k, v) => insert(&mut doc, k, v),
            Op::Context(c) => insert(&mut doc, "@context", c),
            Op::Wrap(w) => {
                let slot = at(&mut doc, &path);
                let v = slot.take();
                *slot = match *w {
                    "[]" => json!([v]),
                    "@id" => json!({"@id": "_:b0", "name": v}),
                    "@type" => json!({ "@type": v }),
                    k => json!({ k: v }),
                };
            }
            Op::Repeat(n) => {
                let slot = at(&mut doc, &path);
                *slot = Value::Array(vec![slot.clone(); *n]);
            }
            Op::Nest(depth, key) => {
                let slot = at(&mut doc, &path);
                *slot = nest(slot.take(), *depth, key);
            }
            Op::LongArray(v, n) => *at(&mut doc, &path) = Value::Array(vec![v.clone(); *n]),
        }
        if doc.to_string().len() > 4 << 20 {
            doc = before;
        }
    }
    doc
}

/// Byte-level edits of an example's text.
#[derive(Debug, Clone)]
enum ByteEdit {
    Flip(Index, u8),
    Delete(Index),
    Insert(Index, u8),
    Truncate(Index),
}

fn byte_edit() -> BoxedStrategy<ByteEdit> {
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        any::<Index>().prop_map(ByteEdit::Delete),
        (
            any::<Index>(),
            prop::sample::select(b"{}[]\":,\\0123456789eE.-+ntfu\x00\xff\xc3".to_vec())
        )
            .prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        any::<Index>().prop_map(ByteEdit::Truncate),
    ]
    .boxed()
}

fn edit_bytes(mut bytes: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for e in edits {
        if bytes.is_empty() {
            break;
        }
        match e {
            ByteEdit::Flip(i, b) => {
                let i = i.index(bytes.len());
                bytes[i] ^= b | 1;
            }
            ByteEdit::Delete(i) => {
                bytes.remove(i.index(bytes.len()));
            }
            ByteEdit::Insert(i, b) => bytes.insert(i.index(bytes.len()), *b),
            ByteEdit::Truncate(i) => bytes.truncate(i.index(bytes.len())),
        }
    }
    bytes
}

// ---------------------------------------------------------------------------------------------
// The inbox
// ---------------------------------------------------------------------------------------------

fn corpus_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(CORPUS).join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn corpus_inbox_inputs() {
    let h = Harness::new("corpus_inbox_inputs");
    let mut files = corpus_files("inbox");
    assert!(files.len() >= 6, "the examples are in the corpus");
    // More inputs to replay (e.g. from a longer pass), from a folder outside the corpus.
    if let Ok(dir) = std::env::var("FUZZ_INBOX_DIR") {
        files = corpus_files(&dir);
    }
    for file in files {
        let body = std::fs::read(&file).unwrap();
        let by_agency = body.windows(AGENCY.len()).any(|w| w == AGENCY.as_bytes());
        let body = replace(&body, AGENCY.as_bytes(), h.agency.as_bytes());
        let poster = if by_agency { h.agency.as_str() } else { ORG };
        let t = std::time::Instant::now();
        let outcome = match h.inbox_outcome(poster, &body) {
            Ok(outcome) => outcome,
            Err(e) => panic!("{}: {e}", file.display()),
        };
        eprintln!("{}: {outcome}, {:?}", file.display(), t.elapsed());
        // `reject-*` inputs once got through checks they must fail.
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(
            !(name.starts_with("reject-") && outcome == "applied"),
            "{name} was applied"
        );
    }
    h.report();
}

#[test]
fn inbox_arbitrary_bytes() {
    let h = Harness::new("inbox_arbitrary_bytes");
    let texts: Vec<Vec<u8>> = examples()
        .iter()
        .map(|e| e.to_string().into_bytes())
        .collect();
    let strategy = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        (
            prop::sample::select(texts),
            prop::collection::vec(byte_edit(), 1..6)
        )
            .prop_map(|(text, edits)| edit_bytes(text, &edits)),
    ];
    run(regressions!("inbox_arbitrary_bytes"), strategy, |body| {
        h.inbox(&body)
    });
    h.report();
}

#[test]
fn inbox_arbitrary_json() {
    let h = Harness::new("inbox_arbitrary_json");
    let terms = Arc::new(terms());
    let value = json_value(terms.clone(), h.trap_url.clone());
    let actor = json!({
        "@context": UNECE_CONTEXT, "type": "TradeParty",
        "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": ORG}
    });
    let object = prop::collection::vec((key(terms.clone()), value.clone()), 0..10);
    let activity = (
        prop::sample::select(vec!["Create", "Update", "Add"]),
        prop::sample::select(vec!["Consignment", "SupplyChainEvent", "Document", "Thing"]),
        object.clone(),
        prop::option::of(object),
        prop::collection::vec((key(terms), value.clone()), 0..3),
    )
        .prop_map(move |(kind, ty, object, target, extra)| {
            let mut object: Map<String, Value> = object.into_iter().collect();
            object.insert("@context".into(), json!(UNECE_CONTEXT));
            object.entry("type").or_insert(json!(ty));
            let mut doc = json!({
                "@context": AS_CONTEXT, "type": kind, "actor": actor, "object": object,
            });
            if let Some(t) = target {
                let mut t: Map<String, Value> = t.into_iter().collect();
                t.insert("@context".into(), json!(UNECE_CONTEXT));
                doc["target"] = Value::Object(t);
            }
            for (k, v) in extra {
                if !matches!(k.as_str(), "@context" | "type" | "actor" | "object") {
                    doc[k.as_str()] = v;
                }
            }
            doc
        });
    let strategy = prop_oneof![1 => value, 4 => activity];
    run(regressions!("inbox_arbitrary_json"), strategy, |doc| {
        h.inbox(doc.to_string().as_bytes())
    });
    h.report();
}

#[test]
fn inbox_mutated_examples() {
    let h = Harness::new("inbox_mutated_examples");
    let terms = Arc::new(terms());
    let agency = h.agency.clone();
    let strategy = (
        prop::sample::select(examples()),
        prop::option::weighted(0.75, any::<u32>()),
        prop::option::weighted(0.25, Just(agency)),
        prop::collection::vec(mutation(terms, h.trap_url.clone()), 1..4),
    )
        .prop_map(|(mut example, fresh, agency, mutations)| {
            // Mostly new ids for a Create, so that it is applied rather than a conflict.
            if let (Some(n), Some("Create")) = (fresh, example["type"].as_str()) {
                example["object"]["globalId"] = json!(format!("urn:uuid:fuzz-{n}"));
                example["object"]["identifier"] = json!(format!("FUZZ-{n}"));
            }
            // Some events and documents come from the agency the consignment is shared with.
            let poster = match agency {
                Some(agency) if example["type"] == "Add" => {
                    example["actor"]["registeredId"]["@value"] = json!(agency);
                    agency
                }
                _ => ORG.to_owned(),
            };
            (poster, mutate(example, &mutations))
        });
    run(
        regressions!("inbox_mutated_examples"),
        strategy,
        |(poster, doc)| {
            h.inbox_outcome(&poster, doc.to_string().as_bytes())
                .map(|_| ())
        },
    );
    h.report();
}

// ---------------------------------------------------------------------------------------------
// Cursors
// ---------------------------------------------------------------------------------------------

const LISTS: &[&str] = &["consignments", "documents", "policies", "notifications"];
const SCOPES: &[&str] = &["own", "shared", "all", "operator", "assignee", ""];

fn position() -> BoxedStrategy<Position> {
    let text = prop_oneof![
        3 => "[a-z0-9:.-]{0,24}",
        1 => any::<String>(),
        1 => Just("2026-11-21T10:00:00.000Z".to_owned()),
    ];
    (
        prop::sample::select(LISTS),
        prop_oneof![
            Just(ORG.to_owned()),
            "did:web:[a-z.]{1,12}(:org:[0-9a-f]{4})?"
        ],
        prop::sample::select(SCOPES),
        text.clone(),
        text,
    )
        .prop_map(|(list, org, scope, at, id)| Position {
            list: list.into(),
            org,
            scope: scope.into(),
            at,
            id,
        })
        .boxed()
}

/// Edits of a cursor's text.
#[derive(Debug, Clone)]
enum Tamper {
    /// One bit of one character flipped (kept ASCII).
    Flip(Index, u8),
    Truncate(Index),
    Extend(String),
    Insert(Index, char),
    Delete(Index),
    /// The payload of one cursor with the tag of another.
    Splice(Position),
    /// Both halves swapped.
    Swap,
    /// Padding and other base64 alphabets.
    Pad,
    Standard,
}

fn tamper() -> BoxedStrategy<Tamper> {
    prop_oneof![
        4 => (any::<Index>(), 0u8..7).prop_map(|(i, b)| Tamper::Flip(i, b)),
        1 => any::<Index>().prop_map(Tamper::Truncate),
        1 => prop_oneof!["[A-Za-z0-9_.=-]{1,8}", any::<String>()].prop_map(Tamper::Extend),
        1 => (any::<Index>(), any::<char>()).prop_map(|(i, c)| Tamper::Insert(i, c)),
        1 => any::<Index>().prop_map(Tamper::Delete),
        1 => position().prop_map(Tamper::Splice),
        1 => Just(Tamper::Swap),
        1 => Just(Tamper::Pad),
        1 => Just(Tamper::Standard),
    ]
    .boxed()
}

fn apply_tamper(cursors: &Cursors, cursor: &str, t: &Tamper) -> String {
    let mut chars: Vec<char> = cursor.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    match t {
        Tamper::Flip(i, bit) => {
            let i = i.index(chars.len());
            let flipped = (chars[i] as u8) ^ (1 << bit);
            chars[i] = flipped as char;
        }
        Tamper::Truncate(i) => chars.truncate(i.index(chars.len())),
        Tamper::Extend(s) => chars.extend(s.chars()),
        Tamper::Insert(i, c) => chars.insert(i.index(chars.len() + 1), *c),
        Tamper::Delete(i) => {
            chars.remove(i.index(chars.len()));
        }
        Tamper::Splice(other) => {
            let theirs = cursors.encode(other);
            let (payload, _) = cursor.split_once('.').unwrap_or((cursor, ""));
            let (_, tag) = theirs.split_once('.').unwrap_or_default();
            return format!("{payload}.{tag}");
        }
        Tamper::Swap => {
            let (a, b) = cursor.split_once('.').unwrap_or((cursor, ""));
            return format!("{b}.{a}");
        }
        Tamper::Pad => {
            let (a, b) = cursor.split_once('.').unwrap_or((cursor, ""));
            return format!("{a}==.{b}=");
        }
        Tamper::Standard => return cursor.replace('-', "+").replace('_', "/"),
    }
    chars.into_iter().collect()
}

#[test]
fn corpus_cursors() {
    let h = Harness::new("corpus_cursors");
    let cursors = Cursors::new(b"fuzz-corpus-key");
    let files = corpus_files("cursor");
    assert!(!files.is_empty());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let cursor = text.trim_end_matches('\n');
        let name = file.file_name().unwrap().to_string_lossy();
        // `valid-*` cursors were encoded with the corpus key for consignments/ORG/all.
        let decoded = cursors.decode(cursor, "consignments", ORG, "all");
        if name.starts_with("valid-") {
            assert!(decoded.is_ok(), "{name}: {decoded:?}");
        } else {
            assert!(
                matches!(decoded, Err(Error::BadRequest { .. })),
                "{name}: {decoded:?}"
            );
        }
        if let Err(e) = h.cursor_in_lists(cursor) {
            panic!("{name}: {e}");
        }
    }
}

#[test]
fn cursor_arbitrary_strings() {
    let h = Harness::new("cursor_arbitrary_strings");
    let node_cursor = h.node_cursor();
    let strategy = prop_oneof![
        2 => any::<String>(),
        2 => "[A-Za-z0-9_-]{0,80}\\.[A-Za-z0-9_-]{0,30}",
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| {
            use base64::Engine;
            let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            format!("{}.{}", e.encode(&b), e.encode(&b[..b.len().min(16)]))
        }),
    ];
    run(regressions!("cursor_arbitrary_strings"), strategy, |s| {
        prop_assume!(s != node_cursor);
        let cursors = Cursors::new(b"some key");
        for list in LISTS {
            for scope in SCOPES {
                let r = cursors.decode(&s, list, ORG, scope);
                prop_assert!(matches!(r, Err(Error::BadRequest { .. })), "{s:?}: {r:?}");
            }
        }
        h.cursor_in_lists(&s)
    });
}

#[test]
fn cursor_tampering() {
    let h = Harness::new("cursor_tampering");
    let node_cursor = h.node_cursor();
    let strategy = (
        position(),
        prop::collection::vec(tamper(), 1..4),
        any::<bool>(),
    );
    run(
        regressions!("cursor_tampering"),
        strategy,
        |(position, tampers, of_node)| {
            let cursors = Cursors::new(b"fuzz key");
            let (p, l, o, s) = (
                &position,
                position.list.as_str(),
                position.org.as_str(),
                position.scope.as_str(),
            );
            let cursor = cursors.encode(p);
            // Round trip, and nothing for another list, organisation, scope or key.
            let decoded = cursors.decode(&cursor, l, o, s).ok();
            prop_assert_eq!(decoded.as_ref(), Some(p));
            let (other_org, other_list, other_scope) =
                (format!("{o}x"), format!("{l}:x"), format!("{s}x"));
            let foreign = [
                cursors.decode(&cursor, l, &other_org, s),
                cursors.decode(&cursor, &other_list, o, s),
                cursors.decode(&cursor, l, o, &other_scope),
                Cursors::new(b"fuzz kez").decode(&cursor, l, o, s),
            ];
            for r in foreign {
                prop_assert!(matches!(r, Err(Error::BadRequest { .. })), "{:?}", r);
            }
            let mut tampered = cursor.clone();
            for t in &tampers {
                tampered = apply_tamper(&cursors, &tampered, t);
                if !tampered.contains('.') {
                    break;
                }
            }
            match cursors.decode(&tampered, l, o, s) {
                Ok(decoded) => prop_assert_eq!(&decoded, p, "{} → {}", cursor, tampered),
                Err(e) => prop_assert!(matches!(e, Error::BadRequest { .. }), "{e:?}"),
            }
            if of_node {
                // The node's own cursor, tampered the same way, through its lists.
                let mut tampered = node_cursor.clone();
                for t in &tampers {
                    tampered = apply_tamper(&cursors, &tampered, t);
                    if !tampered.contains('.') {
                        break;
                    }
                }
                h.cursor_in_lists(&tampered)?;
            }
            Ok(())
        },
    );
}
