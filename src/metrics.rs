//! What the node is doing, for Prometheus: `GET /metrics` renders these in the text format.
//! Label values are route templates, methods, statuses, activity types and outcomes — never an
//! organisation, a user or anything a caller sent.

use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

use crate::error::{Error, Result};

pub struct Metrics {
    /// `--metrics`: when off, nothing is counted.
    on: bool,
    registry: Registry,
    http_requests: IntCounterVec,
    http_seconds: HistogramVec,
    inbox: IntCounterVec,
    sparql: IntCounterVec,
    login_throttled: IntCounter,
    /// Set at each scrape from the node's state.
    pub gauges: Gauges,
}

/// Figures read from the node's state when scraped.
pub struct Gauges {
    pub replica_lag_seconds: prometheus::Gauge,
    pub replica_pending: IntGauge,
    pub outbox_waiting: IntGauge,
    pub outbox_failures: IntGauge,
    pub webhooks_waiting: IntGauge,
    pub webhooks_failures: IntGauge,
    pub store_bytes: IntGauge,
    pub store_commits: IntCounter,
    pub store_syncs: IntCounter,
    pub store_lock_seconds: prometheus::Counter,
}

impl Gauges {
    /// Brings the write path's counters up to the store's own (which count from its opening,
    /// as the registry does).
    pub fn write_path(&self, commits: u64, syncs: u64, lock_held_nanos: u64) {
        let to = |c: &IntCounter, v: u64| c.inc_by(v.saturating_sub(c.get()));
        to(&self.store_commits, commits);
        to(&self.store_syncs, syncs);
        let seconds = lock_held_nanos as f64 / 1e9;
        let behind = seconds - self.store_lock_seconds.get();
        if behind > 0.0 {
            self.store_lock_seconds.inc_by(behind);
        }
    }
}

/// `collector`, registered.
fn registered<C: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    collector: prometheus::Result<C>,
) -> Result<C> {
    let c = collector.map_err(Error::internal)?;
    registry
        .register(Box::new(c.clone()))
        .map_err(Error::internal)?;
    Ok(c)
}

fn int_counter(registry: &Registry, name: &str, help: &str) -> Result<IntCounter> {
    registered(registry, IntCounter::new(name, help))
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> Result<IntCounterVec> {
    registered(registry, IntCounterVec::new(Opts::new(name, help), labels))
}

fn gauge(registry: &Registry, name: &str, help: &str) -> Result<IntGauge> {
    registered(registry, IntGauge::new(name, help))
}

impl Metrics {
    pub fn new(on: bool) -> Result<Self> {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .map_err(Error::internal)?;
        let http_seconds = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "dataspace_http_request_duration_seconds",
                    "Time from a request's arrival to its answer's headers, by route template",
                ),
                &["method", "route"],
            ),
        )?;
        let lag = registered(
            &registry,
            prometheus::Gauge::new(
                "dataspace_replica_lag_seconds",
                "Since the oldest commit the SPARQL replica does not have (0: it has all)",
            ),
        )?;
        let gauges = Gauges {
            replica_lag_seconds: lag,
            replica_pending: gauge(
                &registry,
                "dataspace_replica_pending_entries",
                "Replication log entries the replica has not acknowledged",
            )?,
            outbox_waiting: gauge(
                &registry,
                "dataspace_outbox_waiting_notices",
                "Notices to partner nodes waiting for delivery",
            )?,
            outbox_failures: gauge(
                &registry,
                "dataspace_outbox_failed_attempts",
                "Delivery attempts of notices that failed since the start",
            )?,
            store_bytes: gauge(
                &registry,
                "dataspace_store_size_bytes",
                "Bytes the store's files take on disk",
            )?,
            store_commits: int_counter(
                &registry,
                "dataspace_store_commits_total",
                "Transactions committed to the store",
            )?,
            store_syncs: int_counter(
                &registry,
                "dataspace_store_syncs_total",
                "Syncs of the store's write-ahead log (one covers every commit made before it began)",
            )?,
            store_lock_seconds: registered(
                &registry,
                prometheus::Counter::new(
                    "dataspace_store_writer_lock_seconds_total",
                    "Time the store's writer lock was held for commits",
                ),
            )?,
            webhooks_waiting: gauge(
                &registry,
                "dataspace_webhook_waiting_deliveries",
                "Webhook deliveries waiting to be sent",
            )?,
            webhooks_failures: gauge(
                &registry,
                "dataspace_webhook_failed_attempts",
                "Webhook delivery attempts that failed since the start",
            )?,
        };
        let login = int_counter(
            &registry,
            "dataspace_login_throttled_total",
            "Login attempts answered 429 by the login throttle",
        )?;
        Ok(Self {
            http_requests: counter(&registry, "dataspace_http_requests_total", "Answered requests by route template and status", &["method", "route", "status"])?,
            inbox: counter(&registry, "dataspace_inbox_activities_total", "Activities the inbox took, by type and outcome (applied, replayed, failed)", &["type", "outcome"])?,
            sparql: counter(&registry, "dataspace_sparql_queries_total", "SPARQL queries by who answered (store, replica) and outcome (ok, timeout, limit, 429, error)", &["source", "outcome"])?,
            on,
            login_throttled: login,
            http_seconds,
            gauges,
            registry,
        })
    }

    /// One answered request: `route` is the matched route's template (`unmatched` for none).
    pub fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        if !self.on {
            return;
        }
        self.http_requests
            .with_label_values(&[method, route, &status.to_string()])
            .inc();
        self.http_seconds
            .with_label_values(&[method, route])
            .observe(took.as_secs_f64());
    }

    /// One activity through the inbox: `kind` its type (`Create`, `Update`, `Add`, else
    /// `other`), `outcome` applied, replayed or failed.
    pub fn activity(&self, kind: &str, outcome: &str) {
        if !self.on {
            return;
        }
        let kind = match kind {
            "Create" | "Update" | "Add" => kind,
            _ => "other",
        };
        self.inbox.with_label_values(&[kind, outcome]).inc();
    }

    pub fn sparql(&self, source: &str, outcome: &str) {
        if !self.on {
            return;
        }
        self.sparql.with_label_values(&[source, outcome]).inc();
    }

    pub fn login_throttled(&self) {
        if !self.on {
            return;
        }
        self.login_throttled.inc();
    }

    /// Whether anything is counted (`--metrics`).
    pub fn on(&self) -> bool {
        self.on
    }

    /// Everything, in the Prometheus text format.
    pub fn render(&self) -> Result<String> {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .map_err(Error::internal)?;
        String::from_utf8(out).map_err(Error::internal)
    }
}

/// Bytes the files under `dir` take (the store's, walked at each scrape: a few hundred files).
pub fn disk_usage(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_usage(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}
