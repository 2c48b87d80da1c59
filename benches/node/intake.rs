//! Intake writes: the inbox runs on a fresh store (Creates, Updates and event Adds, one at a
//! time and from concurrent clients), the fill-up to `--consignments`, and documents.

use std::sync::Arc;
use std::time::Instant;

use crate::cli::Args;
use crate::client::Client;
use crate::lock;
use crate::progress;
use crate::report::Table;
use crate::stats::{concurrently, sequentially, Run};

/// The named inbox runs of a fresh store, in table order.
pub type InboxRuns = Vec<(String, Run)>;

/// Consignments a fresh store holds after the inbox runs (the fill-up counts them).
pub fn loaded(args: &Args) -> usize {
    let per_client = args.concurrent / args.clients.max(1);
    200 + args.sequential + per_client * args.clients + args.clients.max(1)
}

/// Everything on a fresh store: warm-up, the inbox runs, the fill-up and the documents. The
/// runs, and the statements the node wrote for one Create.
pub async fn fresh(
    client: &Arc<Client>,
    args: &Args,
    table: &mut Table,
    started: Instant,
) -> (InboxRuns, i64) {
    for n in 0..200 {
        client.create(n).await;
    }
    progress(started, "inbox runs");
    let (mut inbox, written) = creates(client, args, table).await;
    inbox.extend(changes(client, args, table).await);
    progress(
        started,
        &format!("filling up to {} consignments", args.consignments),
    );
    fill_up(client, args).await;
    documents(client, args, table).await;
    (inbox, written)
}

/// Creates one at a time, then from the concurrent clients, with the write path's counters
/// around each.
async fn creates(client: &Arc<Client>, args: &Args, table: &mut Table) -> (InboxRuns, i64) {
    let c = args.clients;
    let per_client = args.concurrent / args.clients.max(1);
    let before = lock::counts(client).await;
    let (create_c1, written) =
        sequentially(args.sequential, |n| client.create(1_000_000 + n)).await;
    let between = lock::counts(client).await;
    let create_cn = concurrently(args.clients, per_client, |c, n| {
        let client = client.clone();
        async move { client.create(2_000_000 + c * per_client + n).await }
    })
    .await;
    let after = lock::counts(client).await;
    lock::report(table, "Create, concurrency 1", &before, &between);
    lock::report(table, &format!("Create, concurrency {c}"), &between, &after);
    let runs = vec![
        ("Create, concurrency 1".into(), create_c1),
        (format!("Create, concurrency {c}"), create_cn),
    ];
    (runs, written)
}

/// Updates and event Adds on consignments with known ids (one per client), one at a time
/// and from the concurrent clients; none with `--changes 0`.
async fn changes(client: &Arc<Client>, args: &Args, table: &mut Table) -> InboxRuns {
    let c = args.clients;
    let targets: Vec<(String, String)> = (0..args.clients.max(1))
        .map(|c| {
            (
                format!("urn:uuid:{}", uuid::Uuid::new_v4()),
                format!("BENCH-TARGET-{c}"),
            )
        })
        .collect();
    for (n, (g, i)) in targets.iter().enumerate() {
        client.change("Create", g, i, n).await;
    }
    if args.changes == 0 {
        return Vec::new();
    }
    let (update_c1, _) = sequentially(args.changes, |n| {
        let (g, i) = &targets[0];
        client.change("Update", g, i, n)
    })
    .await;
    let changes_per_client = args.changes / args.clients.max(1);
    let before = lock::counts(client).await;
    let update_cn = concurrently(args.clients, changes_per_client, |c, n| {
        let client = client.clone();
        let (g, i) = targets[c].clone();
        async move { client.change("Update", &g, &i, n).await }
    })
    .await;
    let after = lock::counts(client).await;
    lock::report(table, &format!("Update, concurrency {c}"), &before, &after);
    let (add_c1, _) = sequentially(args.changes, |n| client.add_event(&targets[0].0, n)).await;
    let before = lock::counts(client).await;
    let add_cn = concurrently(args.clients, changes_per_client, |c, n| {
        let client = client.clone();
        let g = targets[c].0.clone();
        async move { client.add_event(&g, n).await }
    })
    .await;
    let after = lock::counts(client).await;
    lock::report(
        table,
        &format!("Add event, concurrency {c}"),
        &before,
        &after,
    );
    vec![
        ("Update, concurrency 1".into(), update_c1),
        (format!("Update, concurrency {c}"), update_cn),
        ("Add event, concurrency 1".into(), add_c1),
        (format!("Add event, concurrency {c}"), add_cn),
    ]
}

/// Varied consignments from the concurrent clients up to `--consignments`, every tenth (`--updated-every`)
/// with `--updates` Updates.
async fn fill_up(client: &Arc<Client>, args: &Args) {
    let loaded = loaded(args);
    if args.consignments > loaded {
        let per = (args.consignments - loaded).div_ceil(args.clients.max(1));
        let (updates, every) = (args.updates, args.updated_every.max(1));
        concurrently(args.clients, per, |c, n| {
            let client = client.clone();
            let n = c * per + n;
            // Every `--updated-every`th consignment has a history: Updates after its Create.
            let updates = if n.is_multiple_of(every) { updates } else { 0 };
            async move { client.create_revised(n, updates).await }
        })
        .await;
    }
}

/// The newest consignment, the first row of the list, carries a document; with
/// `--documents`, that many more are added one at a time and measured.
async fn documents(client: &Arc<Client>, args: &Args, table: &mut Table) {
    let newest = format!("urn:uuid:{}", uuid::Uuid::new_v4());
    client.create_with_id(0, &newest).await;
    client.add_document(0, &newest, 2_000).await;
    if args.documents > 0 {
        let (run, _) = sequentially(args.documents, |n| {
            client.add_document(n + 1, &newest, args.document_bytes)
        })
        .await;
        table.inbox(
            &format!(
                "Add document ({} B data: URL), concurrency 1",
                args.document_bytes
            ),
            &run,
            None,
        );
    }
}

/// A kept store grows to `--consignments`: memory after a load on a large store without
/// loading it all again. How many consignments it then holds.
pub async fn grow(
    client: &Arc<Client>,
    args: &Args,
    consignments: usize,
    started: Instant,
) -> usize {
    if args.consignments <= consignments {
        return consignments;
    }
    progress(
        started,
        &format!(
            "adding {} consignments to the kept store",
            args.consignments - consignments
        ),
    );
    let per = (args.consignments - consignments).div_ceil(args.clients.max(1));
    let from = consignments;
    concurrently(args.clients, per, |c, n| {
        let client = client.clone();
        async move { client.create_varied(from + c * per + n).await }
    })
    .await;
    consignments + per * args.clients.max(1)
}
