//! A real Virtuoso 7 (`virtuoso-t`, Debian's `virtuoso-opensource-7-bin`) as a child process:
//! a temporary database, its own `virtuoso.ini`, free loopback ports; stopped and removed
//! when dropped. The node writes to it through `/sparql-auth` with Digest authentication as
//! `dba`, as an operator would configure it.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dataspace_node::Config;
use serde_json::Value;

pub struct Virtuoso {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub http_port: u16,
    isql_port: u16,
    client: reqwest::Client,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn ini(dir: &Path, isql: u16, http: u16) -> String {
    let d = dir.display();
    format!(
        "[Database]\nDatabaseFile = {d}/virtuoso.db\nErrorLogFile = {d}/virtuoso.log\n\
         LockFile = {d}/virtuoso.lck\nTransactionFile = {d}/virtuoso.trx\n\
         xa_persistent_file = {d}/virtuoso.pxa\nTempStorage = TempDatabase\n\
         [TempDatabase]\nDatabaseFile = {d}/virtuoso-temp.db\nTransactionFile = {d}/virtuoso-temp.trx\n\
         [Parameters]\nServerPort = 127.0.0.1:{isql}\nDisableUnixSocket = 1\nDirsAllowed = ., {d}\n\
         NumberOfBuffers = 10000\nMaxDirtyBuffers = 6000\nMaxQueryMem = 256M\nThreadsPerQuery = 2\n\
         AsyncQueueMaxThreads = 2\nMaxClientConnections = 20\n\
         [HTTPServer]\nServerPort = 127.0.0.1:{http}\nServerThreads = 8\nMaxClientConnections = 8\n\
         [SPARQL]\nResultSetMaxRows = 1000000\nMaxQueryExecutionTime = 5\n"
    )
}

impl Virtuoso {
    /// A new, empty Virtuoso, ready for queries. Fails the test when `virtuoso-t` is not
    /// installed (`.ci/setup.sh` installs it).
    pub async fn start() -> Self {
        let mut v = Self {
            child: None,
            dir: tempfile::tempdir().unwrap(),
            http_port: 0,
            isql_port: 0,
            client: reqwest::Client::new(),
        };
        for _ in 0..5 {
            v.http_port = free_port();
            v.isql_port = free_port();
            if v.launch().await {
                return v;
            }
        }
        panic!("virtuoso-t did not start; see {}", v.dir.path().display());
    }

    /// Starts the server on this instance's ports and waits until it answers; `false` when it
    /// exited first (a port taken meanwhile).
    async fn launch(&mut self) -> bool {
        let dir = self.dir.path();
        std::fs::write(
            dir.join("virtuoso.ini"),
            ini(dir, self.isql_port, self.http_port),
        )
        .unwrap();
        let child = Command::new("virtuoso-t")
            .args(["+foreground", "+configfile"])
            .arg(dir.join("virtuoso.ini"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "virtuoso-t is not installed: run .ci/setup.sh (Debian virtuoso-opensource-7-bin)",
            );
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(90) {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return false;
            }
            let ask = self
                .client
                .get(self.sparql_url())
                .query(&[("query", "ASK {}")])
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if ask.is_ok_and(|r| r.status().is_success()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("virtuoso-t did not answer within 90 s");
    }

    pub fn sparql_url(&self) -> String {
        format!("http://127.0.0.1:{}/sparql", self.http_port)
    }

    /// Points `config` at this replica: queries on `/sparql`, updates on `/sparql-auth` with
    /// Digest as `dba`.
    pub fn configure(&self, config: &mut Config) {
        config.replica.replica_query_url = Some(self.sparql_url());
        config.replica.replica_update_url =
            Some(format!("http://127.0.0.1:{}/sparql-auth", self.http_port));
        config.replica.replica_user = Some("dba".into());
        config.replica.replica_password = Some("dba".into());
    }

    /// The same as command-line arguments of `dataspace-node`, the password in a file (as the
    /// README recommends: a command line is visible to every user of the machine).
    pub fn args(&self) -> Vec<String> {
        let password = self.dir.path().join("replica-password");
        // With a final newline, as an editor or `echo` writes it.
        std::fs::write(&password, "dba\n").unwrap();
        vec![
            "--replica-query-url".into(),
            self.sparql_url(),
            "--replica-update-url".into(),
            format!("http://127.0.0.1:{}/sparql-auth", self.http_port),
            "--replica-user".into(),
            "dba".into(),
            "--replica-password-file".into(),
            password.to_str().unwrap().into(),
        ]
    }

    /// A query on the replica's own endpoint, its JSON results.
    pub async fn select(&self, query: &str) -> Value {
        let r = self
            .client
            .post(self.sparql_url())
            .header("accept", "application/sparql-results+json")
            .form(&[("query", query)])
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "replica query failed: {}",
            r.text().await.unwrap()
        );
        r.json().await.unwrap()
    }

    /// Runs one SPARQL Update as `dba` through the SQL port (`isql-vt`): a change behind the
    /// node's back.
    pub fn update(&self, op: &str) {
        let out = Command::new("isql-vt")
            .arg(format!("127.0.0.1:{}", self.isql_port))
            .args(["dba", "dba"])
            .arg(format!("EXEC=SPARQL {op};"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && !text.contains("Error"),
            "{op}: {text}"
        );
    }

    /// Stops the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped server again on its database and ports.
    pub async fn restart(&mut self) {
        for _ in 0..20 {
            if self.launch().await {
                return;
            }
            // The old socket may linger a moment.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("virtuoso-t did not start again");
    }
}

impl Drop for Virtuoso {
    fn drop(&mut self) {
        self.kill();
    }
}
