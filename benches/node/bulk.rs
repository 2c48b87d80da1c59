//! `--bulk`: the consignments beyond what the data dir holds are loaded with the node's bulk
//! load (`dataspace-node load`, called here as a library on the stopped node's data dir)
//! instead of the inbox, and the load's rate is compared with the inbox's Create rate from 16
//! clients measured on the same node just before. The run then goes on as on a kept store:
//! start-up, memory, reads, SPARQL and routing measured on what was loaded.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use dataspace_node::load::LoadArgs;
use dataspace_node::Config;

use crate::cli::Args;
use crate::client::Client;
use crate::node::{self, Loaded, OPERATOR_KEY, STATE_FILE};
use crate::report::Table;
use crate::stats::concurrently;
use crate::{progress, EMAIL};

/// Lines per generated file (and per `load` call): files of ~100 MB. Each call opens the
/// store and waits at its close for RocksDB's running compactions (~15 s at 500,000
/// consignments), so fewer calls load faster; a call stopped mid-way loses nothing (its
/// applied lines are replays the next time).
const CHUNK: usize = 25_000;
/// Creates of the inbox rate measured before the load.
const INBOX_CREATES: usize = 2_000;

/// Grows the data dir to `--consignments` through the bulk load; writes its state file.
pub async fn grow(args: &Args, dir: &Path, table: &mut Table, started: Instant) {
    let kept: Option<Loaded> = std::fs::read(dir.join(STATE_FILE))
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("a readable bench-state.json"));
    if kept
        .as_ref()
        .is_some_and(|k| k.consignments >= args.consignments)
    {
        return;
    }
    let (mut child, base, _) = node::spawn(dir);
    let http = reqwest::Client::new();
    node::wait_healthy(&http, &base).await;
    let mut state = match kept {
        Some(k) => k,
        None => {
            let created = node::create_account(&http, &base, OPERATOR_KEY, EMAIL).await;
            let text = |k: &str| created[k].as_str().unwrap().to_owned();
            Loaded {
                api_key: text("apiKey"),
                email: EMAIL.into(),
                organization: text("organizationId"),
                consignments: 0,
                written: 0,
            }
        }
    };
    let token = node::log_in(&http, &base, &state).await;
    let client = Arc::new(Client {
        http,
        url: format!("{base}/supply-chain/data-space/inbox"),
        key: state.api_key.clone(),
        token,
        org: state.organization.clone(),
    });
    progress(
        started,
        "inbox Creates for the rate the bulk load is compared with",
    );
    let from = state.consignments;
    let per = INBOX_CREATES / args.clients.max(1);
    let inbox = concurrently(args.clients, per, |c, n| {
        let client = client.clone();
        async move { client.create_varied(from + c * per + n).await }
    })
    .await;
    state.consignments += per * args.clients.max(1);
    child.stop();

    let todo = args.consignments.saturating_sub(state.consignments);
    progress(started, &format!("bulk load of {todo} consignments"));
    let (mut loading, mut done) = (std::time::Duration::ZERO, 0);
    let file = dir.join("bench-bulk.jsonl");
    while done < todo {
        let n = CHUNK.min(todo - done);
        write_chunk(&client, &file, state.consignments + done, n);
        let t = Instant::now();
        let tally = dataspace_node::load::run(load_args(args, dir, &state, &file))
            .await
            .expect("the bulk load ran");
        let took = t.elapsed();
        loading += took;
        progress(
            started,
            &format!(
                "loaded {} → {} consignments: {:.1} /s (store opened and closed included)",
                state.consignments + done,
                state.consignments + done + n,
                n as f64 / took.as_secs_f64()
            ),
        );
        // Replays: lines a stopped run had applied before (`Client::varied` is the same
        // activity for the same number).
        let whole = (tally.applied + tally.replayed) as usize;
        assert_eq!(whole, n, "every generated line applied");
        done += n;
        // After every file, so that a run stopped mid-way goes on from there next time.
        let grown = Loaded {
            consignments: state.consignments + done,
            ..state.clone()
        };
        std::fs::write(dir.join(STATE_FILE), serde_json::to_vec(&grown).unwrap()).unwrap();
    }
    let _ = std::fs::remove_file(&file);
    state.consignments += done;
    if done > 0 {
        let rate = done as f64 / loading.as_secs_f64();
        table.compared(
            format!("bulk load ({done} Creates): per s"),
            rate,
            "/s",
            format!("inbox Create, {} clients", args.clients),
            inbox.per_s,
        );
    }
}

fn write_chunk(client: &Client, file: &Path, from: usize, n: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    for i in 0..n {
        writeln!(out, "{}", client.varied(from + i)).unwrap();
    }
    out.flush().unwrap();
}

/// The load of `file` on the stopped node's data dir, with the node's base URL (the
/// organisation's DID is made from it).
fn load_args(args: &Args, dir: &Path, state: &Loaded, file: &Path) -> LoadArgs {
    let mut config = Config::with_data_dir(dir);
    config.base_url = Some(node::BENCH_BASE_URL.into());
    LoadArgs {
        config,
        organization: state.organization.clone(),
        user: None,
        batch: args.bulk_batch,
        files: vec![file.to_owned()],
    }
}
