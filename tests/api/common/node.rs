//! A node under test: a real server on port 0 over a temporary data directory.

use std::path::PathBuf;
use std::time::Duration;

use dataspace_node::Config;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;

pub const OPERATOR_KEY: &str = "test-operator-key-0123456789";

pub struct TestNode {
    pub base: String,
    pub client: Client,
    pub config: Config,
    dir: Option<TempDir>,
    shutdown: Option<oneshot::Sender<()>>,
    /// How the node's thread ended: the node runs on a runtime and thread of its own, so that
    /// a node dropped at the end of a test still stops gracefully (its store closed, its
    /// threads joined) before the test process exits — a store closed by a thread the exit
    /// outran aborts the process in RocksDB's teardown.
    finished: Option<std::sync::Mutex<std::sync::mpsc::Receiver<dataspace_node::Result<()>>>>,
}

impl TestNode {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Self {
        Self::start_in(tempfile::tempdir().expect("temp dir"), adjust).await
    }

    /// A node on a data directory that already holds data (a restored backup).
    pub async fn start_in(dir: TempDir, adjust: impl FnOnce(&mut Config)) -> Self {
        // `TEST_LOG=debug` shows the in-process nodes' logs (an internal error's cause).
        if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("TEST_LOG") {
            let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
        }
        let mut config = Config::with_data_dir(dir.path());
        config.api_key = Some(OPERATOR_KEY.into());
        adjust(&mut config);
        Self::launch(config, dir).await
    }

    /// A node serving on a listener the test bound already: partner nodes must know its
    /// address (and so its did:web) before it starts.
    pub async fn start_on(
        listener: tokio::net::TcpListener,
        adjust: impl FnOnce(&mut Config),
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config::with_data_dir(dir.path());
        config.api_key = Some(OPERATOR_KEY.into());
        adjust(&mut config);
        Self::launch_on(config, dir, listener).await
    }

    /// A client of a node running elsewhere (a child process) at `base`.
    pub fn external(base: String, config: Config) -> Self {
        Self {
            base,
            client: client(),
            config,
            dir: None,
            shutdown: None,
            finished: None,
        }
    }

    /// Graceful stop; [`TestNode::start_again`] brings the node back on the same data
    /// directory and port (so with the same did:web).
    pub async fn halt(mut self) -> (Config, String, TempDir) {
        let addr = self.base.trim_start_matches("http://").to_owned();
        let dir = self.stop_inner().await;
        (self.config.clone(), addr, dir)
    }

    pub async fn start_again((config, addr, dir): (Config, String, TempDir)) -> Self {
        let listener = rebind(&addr).await;
        Self::launch_on(config, dir, listener).await
    }

    async fn launch(config: Config, dir: TempDir) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::launch_on(config, dir, listener).await
    }

    async fn launch_on(config: Config, dir: TempDir, listener: tokio::net::TcpListener) -> Self {
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let (done, finished) = std::sync::mpsc::channel();
        let listener = listener.into_std().expect("listener");
        let serving = config.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the node's runtime");
            let result = runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                dataspace_node::run(listener, serving, async {
                    let _ = rx.await;
                })
                .await
            });
            drop(runtime);
            let _ = done.send(result);
        });
        let node = Self {
            base,
            client: client(),
            config,
            dir: Some(dir),
            shutdown: Some(tx),
            finished: Some(std::sync::Mutex::new(finished)),
        };
        for _ in 0..200 {
            if let Ok(r) = node.client.get(node.url("/health")).send().await {
                if r.status() == StatusCode::OK {
                    return node;
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("node did not become healthy");
    }

    pub fn data_dir(&self) -> PathBuf {
        self.config.data_dir.clone()
    }

    /// Graceful stop; the data directory stays until the returned guard is dropped.
    pub async fn stop(mut self) -> TempDir {
        self.stop_inner().await
    }

    /// Graceful stop, then a new server on the same data directory and port: the base URL,
    /// and with it the node's and its organisations' did:web, stay the same.
    pub async fn restart(self) -> Self {
        Self::start_again(self.halt().await).await
    }

    async fn stop_inner(&mut self) -> TempDir {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(finished) = self.finished.take() {
            let finished = finished.into_inner().expect("the node's end");
            tokio::task::spawn_blocking(move || finished.recv())
                .await
                .expect("waiting for the node")
                .expect("server thread")
                .expect("server stopped cleanly");
        }
        self.dir.take().expect("data dir")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn post_json(&self, path: &str, key: Option<&str>, body: &Value) -> Response {
        let mut req = self.client.post(self.url(path)).json(body);
        if let Some(k) = key {
            req = req.header("x-api-key", k);
        }
        req.send().await.unwrap()
    }
}

impl Drop for TestNode {
    /// Stops the node and waits for it (bounded: a client request of the test's own runtime,
    /// which this wait blocks, could hold the graceful shutdown up).
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(Ok(finished)) = self.finished.take().map(std::sync::Mutex::into_inner) {
            let _ = finished.recv_timeout(Duration::from_secs(60));
        }
    }
}

/// Binds `addr` again after a server on it stopped.
async fn rebind(addr: &str) -> tokio::net::TcpListener {
    for _ in 0..100 {
        if let Ok(l) = tokio::net::TcpListener::bind(addr).await {
            return l;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("could not bind {addr} again");
}

/// The HTTP client tests talk to a node with. Its timeout only ends a test whose node stopped
/// answering: far beyond every limit a test sets on the node (the longest, the read timeout's
/// default, is 30 s), so that a machine loaded by another test suite does not fail a test.
fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap()
}
