//! The store's write path as `/metrics` counts it around a run: how long the writer lock was
//! held per commit, and how many syncs of the write-ahead log the commits shared.

use std::time::Instant;

use crate::client::Client;
use crate::node::OPERATOR_KEY;
use crate::report::Table;

/// The write path's counters at one instant.
pub struct Counts {
    commits: f64,
    syncs: f64,
    lock_seconds: f64,
    at: Instant,
}

/// Reads the counters from the node's `/metrics`.
pub async fn counts(client: &Client) -> Counts {
    let base = client
        .url
        .trim_end_matches("/supply-chain/data-space/inbox")
        .to_owned();
    let text = client
        .http
        .get(format!("{base}/metrics"))
        .bearer_auth(OPERATOR_KEY)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .expect("/metrics (the benchmark's node counts)")
        .text()
        .await
        .unwrap();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} in /metrics"))
    };
    Counts {
        commits: value("dataspace_store_commits_total "),
        syncs: value("dataspace_store_syncs_total "),
        lock_seconds: value("dataspace_store_writer_lock_seconds_total "),
        at: Instant::now(),
    }
}

/// Adds the lock's hold per commit, the syncs per second and the commits per sync between
/// `before` and `after` to the table, under `run`'s name.
pub fn report(table: &mut Table, run: &str, before: &Counts, after: &Counts) {
    let commits = (after.commits - before.commits).max(1.0);
    let syncs = (after.syncs - before.syncs).max(1.0);
    let seconds = after.at.duration_since(before.at).as_secs_f64();
    let held = (after.lock_seconds - before.lock_seconds) * 1000.0 / commits;
    table.add(format!("{run}: writer lock held per commit"), held, "ms");
    table.add(format!("{run}: syncs"), syncs / seconds, "per s");
    table.add(format!("{run}: commits per sync"), commits / syncs, "");
}
