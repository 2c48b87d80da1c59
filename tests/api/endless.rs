//! Servers elsewhere that answer with an endless body — a partner node's DID document or
//! dataset, a document source: the node reads at most its cap of it and fails that exchange
//! cleanly. Before the caps applied while streaming, a partner's endless DID document grew the
//! node by 1.44 GB within the 2 s timeout.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dataspace_node::consignment::ConsignmentRef;
use dataspace_node::federation::did;
use dataspace_node::federation::notice::{self, Kind, Subject};
use dataspace_node::federation::token::Tokens;
use dataspace_node::store::graphs;
use ed25519_dalek::SigningKey;
use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::*;

const MIB: u64 = 1024 * 1024;
/// What loopback socket buffers and the client's read buffer may hold beyond a cap.
const IN_FLIGHT: u64 = 32 * MIB;
/// The node process may grow by less than this while it refuses an endless body.
const MAX_GROWTH_MB: u64 = 200;

type Documents = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A server on loopback: a path `documents` knows gets that JSON, any other an endless chunked
/// body of spaces (valid JSON white space, so only a cap stops a reader).
struct Endless {
    addr: SocketAddr,
    /// Body bytes of endless answers written so far.
    sent: Arc<AtomicU64>,
    /// Endless answers still being written.
    streaming: Arc<AtomicUsize>,
}

impl Endless {
    /// `documents` is made for the server's `host:port`, which the documents name.
    async fn start(documents: impl FnOnce(&str) -> Documents) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let documents = documents(&addr.to_string());
        let sent = Arc::new(AtomicU64::new(0));
        let streaming = Arc::new(AtomicUsize::new(0));
        let (s, n) = (sent.clone(), streaming.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (documents, s, n) = (documents.clone(), s.clone(), n.clone());
                tokio::spawn(answer(stream, documents, s, n));
            }
        });
        Self {
            addr,
            sent,
            streaming,
        }
    }

    fn host(&self) -> String {
        self.addr.to_string()
    }

    /// The body bytes sent, once every endless answer has ended (the reader hung up).
    async fn sent_when_done(&self) -> u64 {
        for _ in 0..200 {
            if self.streaming.load(Ordering::SeqCst) == 0 {
                return self.sent.load(Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the node still reads the endless body");
    }
}

async fn answer(
    mut stream: TcpStream,
    documents: Documents,
    sent: Arc<AtomicU64>,
    streaming: Arc<AtomicUsize>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
    if let Some(doc) = documents(&path) {
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{doc}",
            doc.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        return;
    }
    let start = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(start.as_bytes()).await.is_err() {
        return;
    }
    streaming.fetch_add(1, Ordering::SeqCst);
    const SIZE: usize = 64 * 1024;
    let mut chunk = format!("{SIZE:x}\r\n").into_bytes();
    chunk.extend(std::iter::repeat_n(b' ', SIZE));
    chunk.extend_from_slice(b"\r\n");
    while stream.write_all(&chunk).await.is_ok() {
        sent.fetch_add(SIZE as u64, Ordering::SeqCst);
    }
    streaming.fetch_sub(1, Ordering::SeqCst);
}

/// This test process's resident memory (the node runs in it), in MB.
fn rss_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kb / 1024
}

/// The peak resident memory while it runs, sampled: a buffer freed when the exchange fails
/// leaves no trace in a figure taken after it.
struct RssWatch {
    before: u64,
    stop: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<u64>,
}

impl RssWatch {
    fn start() -> Self {
        let before = rss_mb();
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        let sampler = std::thread::spawn(move || {
            let mut peak = before;
            while !done.load(Ordering::SeqCst) {
                peak = peak.max(rss_mb());
                std::thread::sleep(Duration::from_millis(5));
            }
            peak.max(rss_mb())
        });
        Self {
            before,
            stop,
            sampler,
        }
    }

    /// Asserts that the growth stayed bounded.
    fn assert_bounded(self, what: &str) {
        self.stop.store(true, Ordering::SeqCst);
        let peak = self.sampler.join().unwrap();
        eprintln!("{what}: RSS {} MB before, {peak} MB peak", self.before);
        assert!(
            peak.saturating_sub(self.before) < MAX_GROWTH_MB,
            "{what}: RSS grew from {} MB to {peak} MB",
            self.before
        );
    }
}

fn did_web(host: &str) -> String {
    format!("did:web:{}", host.replace(':', "%3A"))
}

/// A partner node at `host` whose DID documents (node and organisation `h1`) name the key
/// `key` and its federation endpoint.
fn partner_documents(host: &str, key: &SigningKey) -> Documents {
    let node = did_web(host);
    let endpoint = format!("http://{host}/federation");
    let verifying = key.verifying_key();
    Arc::new(move |path: &str| {
        let did = match path {
            "/.well-known/did.json" => node.clone(),
            "/org/h1/did.json" => format!("{node}:org:h1"),
            _ => return None,
        };
        Some(did::document(&did, &node, &verifying, &endpoint).to_string())
    })
}

#[tokio::test]
async fn a_partner_whose_did_document_never_ends_is_refused() {
    let partner = Endless::start(|_| Arc::new(|_: &str| None)).await;
    let host = partner.host();
    let node = TestNode::start_with(|c| c.federation_allow_http = vec![host.clone()]).await;
    let node_did = did_web(node.base.trim_start_matches("http://"));
    let token = Tokens::new(did_web(&host), &SigningKey::from_bytes(&[5; 32]))
        .unwrap()
        .issue(&format!("{}:org:h1", did_web(&host)), &node_did)
        .unwrap();
    let watch = RssWatch::start();
    let r = node
        .client
        .get(node.url("/federation/datasets"))
        .query(&[("id", "urn:dataspace-node:contribution:00:h1")])
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let sent = partner.sent_when_done().await;
    watch.assert_bounded("endless DID document");
    eprintln!(
        "endless DID document: {} KiB sent before the node hung up",
        sent / 1024
    );
    assert!(sent < 64 * 1024 + IN_FLIGHT, "{sent} bytes sent");
}

#[tokio::test]
async fn a_partner_whose_dataset_never_ends_is_left_out_with_a_warning() {
    let key = SigningKey::from_bytes(&[6; 32]);
    let partner = Endless::start(|host| partner_documents(host, &key)).await;
    let host = partner.host();
    let node = TestNode::start_with(|c| c.federation_allow_http = vec![host.clone()]).await;
    let agency = Session::new(&node, "officer@kra.example").await;
    let (partner_did, org) = (did_web(&host), format!("{}:org:h1", did_web(&host)));
    let aig = "0123456789abcdef0123456789abcdef";
    let dataset = graphs::contribution(aig, &org).into_string();
    let subject = Subject {
        dataset: &dataset,
        consignment: ConsignmentRef {
            aig_hex: aig.into(),
            global_id: "urn:uuid:0b0e7a52-4c4e-4f0e-9d55-7a1d8b1c2e3f".into(),
            identifier: "HOSTILE-1".into(),
            publisher: org.clone(),
        },
        created: "2026-11-22T10:00:00.000Z",
    };
    let now = "2026-11-22T10:00:01.000Z";
    let body = notice::build(Kind::Share, &org, agency.org(), &subject, None, now);
    let node_did = did_web(node.base.trim_start_matches("http://"));
    let token = Tokens::new(partner_did, &key)
        .unwrap()
        .issue(&org, &node_did)
        .unwrap();
    let r = node
        .client
        .post(node.url("/federation/inbox"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);

    let watch = RssWatch::start();
    let r = agency
        .get(&node, "/supply-chain/data-space/consignments?scope=shared")
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let list = json_body(r).await;
    assert_eq!(list["warnings"][0]["code"], "discoveryFailed", "{list:#}");
    assert_eq!(list["warnings"][0]["datasetId"], dataset.as_str());
    let sent = partner.sent_when_done().await;
    watch.assert_bounded("endless dataset");
    eprintln!(
        "endless dataset: {} KiB sent before the node hung up",
        sent / 1024
    );
    assert!(sent < 16 * MIB + IN_FLIGHT, "{sent} bytes sent");
}

#[tokio::test]
async fn a_document_source_whose_body_never_ends_fails_the_task() {
    let source = Endless::start(|_| Arc::new(|_: &str| None)).await;
    let host = source.host();
    let node = TestNode::start_with(|c| {
        c.fetch_allow = vec![host.clone()];
        c.document_max_bytes = MIB;
    })
    .await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let watch = RssWatch::start();
    let uri = format!("http://{host}/invoice.pdf");
    let entry = trader
        .publish(&node, &add_document(trader.org(), &uri, "ENDLESS"))
        .await;
    let error = task_error(&entry);
    assert_eq!(
        error["message"],
        "dataspaceDataPlaneService.documentUnavailable"
    );
    let cause = error["cause"]["message"].as_str().unwrap();
    assert!(cause.contains("larger than"), "{cause}");
    let sent = source.sent_when_done().await;
    watch.assert_bounded("endless document");
    eprintln!(
        "endless document: {} KiB sent before the node hung up",
        sent / 1024
    );
    assert!(sent < MIB + IN_FLIGHT, "{sent} bytes sent");
}
