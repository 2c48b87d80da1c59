//! Benchmark: starts a real node as a child process (temporary data dir, port 0), drives it
//! through HTTP and prints one table — inbox, reads, SPARQL, routing, memory, start-up, disk,
//! webhooks, the Dataspace Protocol —
//! each figure next to a baseline measured in the same run (raw Oxigraph, raw SPARQL, an axum
//! hello-world endpoint), and writes the figures as JSON. `cargo bench --bench node --
//! --help`.

mod baselines;
mod bulk;
mod cli;
mod client;
mod console;
mod dsp;
mod flood;
mod intake;
mod lock;
mod node;
mod operations;
mod reads;
mod replica;
mod report;
mod routing;
mod sparql;
mod stats;
mod webhooks;
mod written;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use cli::Args;
use client::Client;
use node::{Loaded, OPERATOR_KEY, STATE_FILE};
use report::{Measured, Table};

/// Progress on stderr, after the seconds since the start.
/// A runtime of one worker thread for load made on behalf of other machines, its threads at
/// niceness `nice` (`--others-nice`).
pub fn others_runtime(nice: i32) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .on_thread_start(move || {
            if nice > 0 {
                // SAFETY: plain system calls on the calling thread, no memory passed.
                unsafe {
                    let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                    libc::setpriority(libc::PRIO_PROCESS, tid, nice);
                }
            }
        })
        .enable_all()
        .build()
        .unwrap()
}

pub fn progress(started: Instant, what: &str) {
    eprintln!("[{:>6.1} s] {what}", started.elapsed().as_secs_f64());
}

/// One run against the node child at `base`.
struct Bench<'a> {
    args: &'a Args,
    base: String,
    pid: u32,
    dir: &'a Path,
    kept: Option<&'a Loaded>,
    started: Instant,
}

pub const EMAIL: &str = "bench@forwarder.example";

impl Bench<'_> {
    /// The HTTP part: start-up, the floor, the load (or the kept store), memory, reads, SPARQL
    /// and routing.
    async fn measure(&self, hello: &str, table: &mut Table) -> Measured {
        let (args, base, pid) = (self.args, self.base.as_str(), self.pid);
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        node::wait_healthy(&http, base).await;
        table.add(
            "start-up to the first healthy answer",
            self.started.elapsed().as_secs_f64() * 1e3,
            "ms",
        );
        let floor = baselines::plain_gets(&http, hello, args.reads).await;
        let health = baselines::plain_gets(&http, &format!("{base}/health"), args.reads).await;
        table.compared("GET /health p50", health, "ms", "axum hello-world", floor);
        let client = Arc::new(self.client(http).await);
        let (inbox, written, consignments) = self.load(&client, table).await;
        if args.data_dir.is_some() {
            self.keep(&client, consignments, written);
        }
        let rss_loaded = node::rss_mb(pid, "VmRSS:");
        // At rest: within 30 s of the last write the node flushes what is left and hands the
        // allocator's free memory back (store::memory).
        if self.kept.is_none_or(|k| args.consignments > k.consignments) {
            tokio::time::sleep(Duration::from_secs(35)).await;
        }
        let rss_rest = node::rss_mb(pid, "VmRSS:");
        progress(self.started, "reads");
        let sparql_reads = self.sparql_reads();
        let sparql = match sparql_reads {
            0 => None,
            n => Some(sparql::sparql_endpoint(&client, base, n).await),
        };
        let reads = reads::reads(&client, base, args.reads).await;
        let mut routed = None;
        if args.policies > 0 {
            progress(
                self.started,
                &format!("{} policies, then routed Creates", args.policies),
            );
            routed = Some(routing::routed_creates(&client, base, OPERATOR_KEY, args, table).await);
        }
        Measured {
            org: client.org.clone(),
            key: client.key.clone(),
            written,
            inbox,
            sparql,
            reads,
            routed,
            rss: node::peak_rss_mb(pid),
            rss_loaded,
            rss_rest,
            rss_end: node::rss_mb(pid, "VmRSS:"),
            consignments,
        }
    }

    /// Requests of the SPARQL aggregate: `--sparql-reads` (0: not measured), or `--reads` up
    /// to 20.
    fn sparql_reads(&self) -> usize {
        let args = self.args;
        args.sparql_reads.unwrap_or(args.reads.clamp(1, 20))
    }

    /// The benchmark organisation's user: the kept one logged in, or a new account.
    async fn client(&self, http: reqwest::Client) -> Client {
        let base = &self.base;
        let (key, token, org) = match self.kept {
            Some(loaded) => (
                loaded.api_key.clone(),
                node::log_in(&http, base, loaded).await,
                loaded.organization.clone(),
            ),
            None => {
                let created = node::create_account(&http, base, OPERATOR_KEY, EMAIL).await;
                let text = |k: &str| created[k].as_str().unwrap().to_owned();
                (text("apiKey"), text("token"), text("organizationId"))
            }
        };
        Client {
            http,
            url: format!("{base}/supply-chain/data-space/inbox"),
            key,
            token,
            org,
        }
    }

    /// The inbox runs and fill-up on a fresh store, or the kept store grown to
    /// `--consignments`: the runs, the statements of one Create and the consignments stored.
    async fn load(
        &self,
        client: &Arc<Client>,
        table: &mut Table,
    ) -> (intake::InboxRuns, i64, usize) {
        let args = self.args;
        match self.kept {
            None => {
                let (inbox, written) = intake::fresh(client, args, table, self.started).await;
                let consignments = args.consignments.max(intake::loaded(args)) + 1;
                (inbox, written, consignments)
            }
            Some(k) => {
                let consignments = intake::grow(client, args, k.consignments, self.started).await;
                (Vec::new(), k.written, consignments)
            }
        }
    }

    /// Writes what the kept data dir now holds.
    fn keep(&self, client: &Client, consignments: usize, written: i64) {
        let state = Loaded {
            api_key: client.key.clone(),
            email: EMAIL.into(),
            organization: client.org.clone(),
            consignments,
            written,
        };
        std::fs::write(
            self.dir.join(STATE_FILE),
            serde_json::to_vec(&state).unwrap(),
        )
        .unwrap();
    }
}

/// `--replica virtuoso` on the stopped node's data dir.
async fn replica_phase(args: &Args, dir: &Path, m: &Measured, table: &mut Table, started: Instant) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let client = Client {
        http,
        url: String::new(),
        key: m.key.clone(),
        token: String::new(),
        org: m.org.clone(),
    };
    replica::measure(
        dir,
        client,
        args,
        m.sparql.map(|(p50, _)| p50),
        table,
        started,
    )
    .await;
}

fn main() {
    let args = Args::parse();
    if let Some(dir) = &args.serve_node {
        node::serve_node(dir);
        return;
    }
    let temporary = tempfile::tempdir().unwrap();
    let dir = match &args.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.clone()
        }
        None => temporary.path().to_owned(),
    };
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut table = Table::default();
    if args.dsp_only {
        let fresh = tempfile::tempdir().unwrap();
        client_rt.block_on(dsp::phase(&args, fresh.path(), &mut table, Instant::now()));
        report::write(&args, &table, 0);
        return;
    }
    if args.webhooks_only {
        client_rt.block_on(webhooks::phase(&args, &mut table, Instant::now()));
        report::write(&args, &table, 0);
        return;
    }
    if args.bulk {
        client_rt.block_on(bulk::grow(&args, &dir, &mut table, Instant::now()));
    }
    let kept: Option<Loaded> = std::fs::read(dir.join(STATE_FILE))
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("a readable bench-state.json"));
    let started = Instant::now();
    let (mut child, base, pid) = node::spawn(&dir);
    let (_hello_rt, hello) = baselines::hello_world();
    let bench = Bench {
        args: &args,
        base,
        pid,
        dir: &dir,
        kept: kept.as_ref(),
        started,
    };
    let measured = client_rt.block_on(bench.measure(&hello, &mut table));
    child.stop();
    let bytes = node::dir_bytes(&dir);
    progress(started, "baselines on the store");
    report::figures(&args, &dir, bench.sparql_reads(), &measured, &mut table);
    report::storage(&mut table, measured.consignments, bytes);
    if args.flood_clients > 0 {
        client_rt.block_on(flood::phase(&args, &dir, &mut table, started));
    }
    if args.operations_creates > 0 {
        client_rt.block_on(operations::phase(&args, &dir, &mut table, started));
    }
    if let Some(engine) = &args.replica {
        assert_eq!(engine, "virtuoso", "--replica takes `virtuoso`");
        client_rt.block_on(replica_phase(&args, &dir, &measured, &mut table, started));
    }
    if args.webhook_creates > 0 {
        client_rt.block_on(webhooks::phase(&args, &mut table, started));
    }
    if args.dsp_rounds > 0 {
        client_rt.block_on(dsp::phase(&args, &dir, &mut table, started));
    }
    if args.console_loads > 0 {
        client_rt.block_on(console::phase(&args, &dir, &mut table, started));
    }
    report::write(&args, &table, measured.consignments);
}
