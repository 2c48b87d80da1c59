//! The node binary as an operating system process: its own memory, CPU time and signals.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{TestNode, OPERATOR_KEY};

/// The node binary serving on a loopback port of its own choosing.
pub struct NodeProcess {
    child: Child,
    pub node: TestNode,
    _dir: Option<tempfile::TempDir>,
}

impl NodeProcess {
    /// The node on a data dir of its own.
    pub fn spawn(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Self::spawn_in(dir.path(), args);
        p._dir = Some(dir);
        p
    }

    /// The node on `dir` (kept when the process ends, for the next one), on a port of its
    /// own choosing.
    pub fn spawn_in(dir: &Path, args: &[&str]) -> Self {
        let mut all = vec!["--bind", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Self::spawn_on(dir, &all)
    }

    /// The node on `dir` with `args` naming its `--bind` address (a restart on the same
    /// address keeps its did:web, and its organisations').
    pub fn spawn_on(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dataspace-node"))
            .arg("serve")
            .args(["--api-key", OPERATOR_KEY])
            .arg("--data-dir")
            .arg(dir)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the node binary");
        // The node logs `listening addr=…` once it serves; the rest of its log is drained so
        // it never blocks on a full pipe.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("the node exited before listening")
                .unwrap();
            if let Some((_, rest)) = line.split_once("listening addr=") {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        let config = dataspace_node::Config::with_data_dir(dir);
        Self {
            child,
            node: TestNode::external(format!("http://{addr}"), config),
            _dir: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time (user + system) the process has used.
    pub fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        // After the command name: state is field 3, utime 14 and stime 15 (proc(5)).
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        Duration::from_millis(ticks * 1000 / hz)
    }

    /// The process's peak resident memory.
    pub fn peak_rss_mb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        kb / 1024
    }

    /// Waits until the process uses less than a tenth of a core over a 500 ms window; returns
    /// how long that took, or `None` when it is still busy after `limit`.
    pub async fn idle_within(&self, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < limit {
            let before = self.cpu();
            tokio::time::sleep(Duration::from_millis(500)).await;
            if self.cpu() - before < Duration::from_millis(50) {
                return Some(started.elapsed());
            }
        }
        None
    }

    pub fn terminate(&self) {
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(self.pid() as i32, libc::SIGTERM) };
    }

    /// Waits for the process to exit; `None` when it still runs after `limit`.
    pub async fn exited_within(&mut self, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.child.try_wait().unwrap().is_some() {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

impl NodeProcess {
    /// Stops the process at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
