//! A node of a supply-chain dataspace.
//!
//! Traders publish consignments as Activity Streams 2.0 activities whose objects are
//! UN/CEFACT D23B JSON-LD; the node stores them as RDF in an embedded Oxigraph store and serves
//! them back under per-organisation access rules.
//!
//! # Layout (in data-flow order)
//! - [`config`]: the `serve` options, each with an environment fallback.
//! - [`http`]: routes, extractors, error mapping; handlers only translate HTTP to the domain.
//! - [`auth`]: API keys, login (argon2id, throttling) and sessions (HS256 JWT) → [`auth::Caller`].
//! - [`jsonld`]: the shipped contexts compiled once; expansion (intake) and compaction (reads).
//! - [`intake`]: inbox activities → JSON-LD expansion → shapes → ports → store transaction.
//! - [`documents`]: a document's bytes (`data:` or allow-listed fetch) → blob store →
//!   attestation; signed download links.
//! - [`accounts`]: organisations, users, named API keys, session standing and the audit log.
//! - [`sharing`]: ODRL policies → routing by ports → grants (circles) → notifications.
//! - [`views`]: scoped reads — SPARQL from `queries/*.rq` → summaries, merged views, events,
//!   documents.
//! - [`capped`]: response bodies from other hosts (partners, document sources), capped while
//!   they stream.
//! - [`federation`]: partner organisations on other nodes — did:web identity, node tokens,
//!   notices (outbox) and datasets pulled at read time.
//! - [`webhooks`]: organisations' subscriptions to changes, delivered as signed HTTP requests.
//! - [`dsp`]: the Dataspace Protocol 2025-1 provider: connectors' catalog of what is shared
//!   with their participant DID (DCP self-issued ID tokens).
//! - [`sparql`]: analysts' queries, rewritten to read only the caller's graphs.
//! - [`replica`]: an external SPARQL engine mirroring the contribution graphs (replication
//!   log, shipping, sync and verify) that answers analysts when close enough behind.
//! - [`store`]: the Oxigraph store, its named graphs and the SPARQL of `queries/*.rq`; export
//!   and import of the whole store (`store::backup`).
//! - [`vocab`]: the node's namespace and its published vocabulary (`vocab/`, `GET /ns`).
//! - [`node`]: the shared state wiring these together; [`run`] serves it.
//! - [`load`]: `dataspace-node load`, an organisation's history onboarded in batches.
//! - [`background`]: threads at a lower CPU priority for a backup's hashing and webhook deliveries.
//! - [`fd_limit`]: the file descriptor limit raised at start-up, connections capped within it.
//! - [`fair`]: the blocking work shared out fairly between organisations; inbox work in flight
//!   capped per organisation.

pub mod accounts;
pub mod auth;
pub mod background;
pub mod backups;
pub mod capped;
pub mod config;
pub mod consignment;
pub mod documents;
pub mod dsp;
pub mod error;
pub mod fair;
pub mod fd_limit;
pub mod federation;
pub mod http;
pub mod identity;
pub mod intake;
pub mod jsonld;
pub mod load;
pub mod metrics;
pub mod node;
pub mod rdf;
pub mod replica;
pub mod secrets;
pub mod sharing;
pub mod sparql;
pub mod store;
pub mod views;
pub mod vocab;
pub mod webhooks;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

pub use config::Config;
pub use error::{Error, Result};
use node::Node;

/// Serves the node on `listener` until `shutdown` completes, then lets in-flight requests
/// finish and flushes the store. Tests pass a listener bound to port 0.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let addr = listener.local_addr()?;
    // Before the store opens: RocksDB's files and the connections share the limit.
    let max_connections =
        fd_limit::raise_and_budget(config.max_connections, config.store_open_files);
    let base_url = config
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    // Opening RocksDB and hashing the timing-dummy password block: keep them off the executor.
    let node = tokio::task::spawn_blocking(move || Node::open(config, &base_url)).await??;
    let node = Arc::new(node);
    tracing::info!(%addr, "listening");
    scheduled_backups(&node);
    let tasks = Background::start(&node)?;
    let closing = node.clone();
    let shutdown = async move {
        shutdown.await;
        closing.closing.send_replace(true);
        // Graceful shutdown waits for in-flight requests and blocking tasks: a query must not
        // hold it up until its time limit.
        closing.sparql.cancel_all();
    };
    let limits = http::serve::Limits {
        max_connections,
        read_timeout: std::time::Duration::from_secs(node.config.read_timeout_secs),
    };
    http::serve::serve(listener, http::router(node.clone()), limits, shutdown).await;
    tasks.ended().await;
    let closing = node.clone();
    // Sealing, flushing and writing the models snapshot is disk work.
    tokio::task::spawn_blocking(move || closing.close()).await??;
    tracing::info!("stopped; store flushed, models saved");
    Ok(())
}

/// The node's own tasks beside the requests: each ends on the closing signal.
struct Background {
    outbox: tokio::task::JoinHandle<()>,
    hooks: tokio::task::JoinHandle<()>,
    negotiating: tokio::task::JoinHandle<()>,
    flusher: tokio::task::JoinHandle<()>,
    replicating: Option<tokio::task::JoinHandle<()>>,
}

impl Background {
    fn start(node: &Arc<Node>) -> Result<Self> {
        let reads = Arc::downgrade(node);
        node.webhooks.read_full_with(Box::new(move |full| {
            let node: Arc<Node> = reads.upgrade()?;
            full_object(&node, full)
        }));
        let hooks = {
            let (webhooks, closing) = (node.webhooks.clone(), node.closing.subscribe());
            // Deliveries yield the CPU to callers: a hundred subscriptions make a hundred
            // requests of each change.
            background::spawn("webhooks", async move {
                if let Err(e) = webhooks.deliver(closing).await {
                    tracing::error!(error = %e, "webhook delivery stopped");
                }
            })?
        };
        let negotiating = {
            let (dsp, closing) = (node.dsp.clone(), node.closing.subscribe());
            tokio::spawn(async move {
                if let Err(e) = dsp.deliver(closing).await {
                    tracing::error!(error = %e, "DSP message delivery stopped");
                }
            })
        };
        let replicating = node.replica.clone().map(|replica| {
            let closing = node.closing.subscribe();
            tokio::spawn(replica.run(closing))
        });
        Ok(Self {
            outbox: tokio::spawn(deliver_outbox(node.clone())),
            hooks,
            negotiating,
            flusher: tokio::spawn(flush_periodically(node.clone(), node.closing.subscribe())),
            replicating,
        })
    }

    /// Waits for every task to end. What the delivery tasks had not sent stays in the store,
    /// as do the replica log's unshipped entries, for the next start.
    async fn ended(self) {
        let _ = self.outbox.await;
        let _ = self.hooks.await;
        let _ = self.negotiating.await;
        let _ = self.flusher.await;
        if let Some(task) = self.replicating {
            let _ = task.await;
        }
    }
}

/// Sends the federation outbox's notices until the node closes.
async fn deliver_outbox(node: Arc<Node>) {
    let n = node.clone();
    let result = node
        .federation
        .outbox
        .deliver(
            n.store.clone(),
            |notice| {
                let n = n.clone();
                async move { n.federation.send(notice).await }
            },
            n.closing.subscribe(),
        )
        .await;
    if let Err(e) = result {
        tracing::error!(error = %e, "outbox delivery stopped");
    }
}

/// Every 2 s until the node closes: the store's memtables flushed when due, and the API keys'
/// last uses stored.
async fn flush_periodically(node: Arc<Node>, mut closed: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = closed.changed() => return,
        }
        let (store, accounts) = (node.store.clone(), node.accounts.clone());
        // A flush writes the memtables out as files: disk work, off the async threads. The
        // keys' last uses (to the minute) are stored here too, never by a request.
        let work = move || {
            if let Err(e) = accounts.save_last_used() {
                tracing::error!(error = %e, "storing the API keys' last use failed");
            }
            store.flush_if_due()
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(Err(e)) => tracing::error!(error = %e, "store flush failed"),
            Err(e) => tracing::error!(error = %e, "store flush task failed"),
            Ok(Ok(_)) => {}
        }
    }
}

/// `--backup-every`: a backup each period, the oldest beyond `--backup-keep` removed after it;
/// a failure is logged and the next period tries again. Ends with the node.
fn scheduled_backups(node: &Arc<Node>) {
    let (Some(every), Some(dir)) = (node.config.backup_every, node.config.backup_dir.clone())
    else {
        return;
    };
    let node = node.clone();
    let mut closing = node.closing.subscribe();
    tokio::spawn(async move {
        let period = std::time::Duration::from_secs(every);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = closing.changed() => return,
            }
            let (worker, dir) = (node.clone(), dir.clone());
            let keep = node.config.backup_keep as usize;
            let done = tokio::task::spawn_blocking(move || {
                let manifest = worker.backup()?;
                backups::prune(&dir, keep).map(|removed| (manifest, removed))
            })
            .await;
            match done {
                Ok(Ok((m, removed))) => {
                    tracing::info!(backup = m.name, removed, "scheduled backup taken")
                }
                Ok(Err(e)) => tracing::error!(error = %e, "scheduled backup failed"),
                Err(e) => tracing::error!(error = %e, "scheduled backup failed"),
            }
        }
    });
}

/// The object a `full` webhook delivery carries: as the subscriber's REST read shows it at the
/// revision — the view for a consignment's creation, update or share, the event or the
/// DocumentAttachment for an Add. `None` when the subscriber cannot read it (any more).
fn full_object(node: &Node, full: &webhooks::FullRef) -> Option<serde_json::Value> {
    let caller = auth::Caller::acting_for(String::new(), full.organization.clone());
    let at = chrono::DateTime::parse_from_rfc3339(&full.at).ok()?;
    let read = node
        .views
        .read_at(&caller, consignment::Scope::All, &full.aig_id, at)
        .ok()?;
    // The node's ids of parts are the last segment of their IRIs, or the IRI itself.
    let names = |v: &serde_json::Value| {
        v.get("id")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|id| full.object_id == id || full.object_id.ends_with(&format!(":{id}")))
    };
    match full.kind.as_str() {
        "consignment.event_added" => node.views.render_events(&read).into_iter().find(names),
        "consignment.document_added" => node
            .views
            .render_documents(&read, &full.organization, documents::LinkUse::List)
            .into_iter()
            .find(names),
        _ => Some(node.views.render_view(&read, &full.organization)),
    }
}
