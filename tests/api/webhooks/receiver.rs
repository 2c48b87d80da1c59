//! A webhook receiver on loopback: records every request and answers with the statuses it is
//! told to, then 200.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub fn id(&self) -> String {
        self.headers["webhook-id"].to_str().unwrap().to_owned()
    }

    /// Whether `secret` verifies the request, by the Standard Webhooks library (not the node's
    /// code).
    pub fn signed_by(&self, secret: &str) -> bool {
        standardwebhooks::Webhook::new(secret)
            .unwrap()
            .verify(&self.body, &self.headers)
            .is_ok()
    }
}

struct Recorded {
    got: Vec<Received>,
    answers: VecDeque<u16>,
    /// While true, requests are recorded but not answered.
    held: Arc<AtomicBool>,
}

pub struct Receiver {
    pub addr: std::net::SocketAddr,
    state: Arc<Mutex<Recorded>>,
    pub server: JoinHandle<()>,
}

async fn record(
    State(state): State<Arc<Mutex<Recorded>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let (status, held) = {
        let mut s = state.lock().unwrap();
        s.got.push(Received { headers, body });
        (s.answers.pop_front().unwrap_or(200), s.held.clone())
    };
    while held.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    StatusCode::from_u16(status).unwrap()
}

impl Receiver {
    pub async fn start() -> Self {
        Self::start_at("127.0.0.1:0").await
    }

    /// A receiver on `addr` (the address of one that was stopped: "back up").
    pub async fn start_at(addr: &str) -> Self {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(Recorded {
            got: Vec::new(),
            answers: VecDeque::new(),
            held: Arc::default(),
        }));
        let app = Router::new()
            .route("/hook", post(record))
            .with_state(state.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            state,
            server,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// The next answers, in order (200 once they are used up).
    pub fn answer(&self, statuses: &[u16]) {
        self.state.lock().unwrap().answers.extend(statuses);
    }

    /// Requests are recorded but not answered until [`Receiver::release`]: a receiver that
    /// hangs.
    pub fn hold(&self) {
        self.state
            .lock()
            .unwrap()
            .held
            .store(true, Ordering::SeqCst);
    }

    pub fn release(&self) {
        self.state
            .lock()
            .unwrap()
            .held
            .store(false, Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().got.clone()
    }

    /// The requests received once there are at least `n` (a generous deadline: a loaded
    /// machine is slow, never wrong).
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..1200 {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("expected {n} requests, got {:?}", self.received().len());
    }

    pub fn stop(self) {
        self.server.abort();
    }
}
