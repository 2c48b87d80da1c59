//! The report: one table of figures, each next to its baseline, printed as Markdown and
//! written as JSON.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::baselines::raw_oxigraph;
use crate::cli::Args;
use crate::intake::InboxRuns;
use crate::reads::{raw_page_query, raw_view_queries, Reads};
use crate::sparql::raw_sparql;
use crate::stats::{percentile, Run};

/// One figure of the table, with the baseline it is compared with.
struct Figure {
    name: String,
    value: f64,
    unit: &'static str,
    baseline: Option<(String, f64)>,
}

/// The figures in the order they are printed.
#[derive(Default)]
pub struct Table(Vec<Figure>);

impl Table {
    pub fn add(&mut self, name: impl Into<String>, value: f64, unit: &'static str) {
        self.0.push(Figure {
            name: name.into(),
            value,
            unit,
            baseline: None,
        });
    }

    pub fn compared(
        &mut self,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
        baseline: impl Into<String>,
        base: f64,
    ) {
        self.0.push(Figure {
            name: name.into(),
            value,
            unit,
            baseline: Some((baseline.into(), base)),
        });
    }

    pub fn inbox(&mut self, name: &str, run: &Run, raw: Option<(&str, f64, f64)>) {
        match raw {
            Some((what, per_s, p50)) => {
                self.compared(format!("{name}: per s"), run.per_s, "/s", what, per_s);
                self.compared(format!("{name}: p50"), run.p50, "ms", what, p50);
            }
            None => {
                self.add(format!("{name}: per s"), run.per_s, "/s");
                self.add(format!("{name}: p50"), run.p50, "ms");
            }
        }
        self.add(format!("{name}: p99"), run.p99, "ms");
    }

    fn print(&self) {
        println!("| measurement | figure | baseline (same run) | ratio |");
        println!("|---|---|---|---|");
        for f in &self.0 {
            let (baseline, ratio) = match &f.baseline {
                Some((name, b)) => (
                    format!("{name}: {b:.3} {}", f.unit),
                    if *b > 0.0 {
                        format!("{:.2}", f.value / b)
                    } else {
                        String::new()
                    },
                ),
                None => (String::new(), String::new()),
            };
            println!(
                "| {} | {:.3} {} | {baseline} | {ratio} |",
                f.name, f.value, f.unit
            );
        }
    }

    fn json(&self, args: &Args) -> Value {
        json!({
            "date": chrono::Utc::now().to_rfc3339(),
            "args": {
                "sequential": args.sequential, "concurrent": args.concurrent,
                "clients": args.clients, "consignments": args.consignments,
                "reads": args.reads, "policies": args.policies, "flood_clients": args.flood_clients, "changes": args.changes, "updates": args.updates, "updated_every": args.updated_every,
                "documents": args.documents,
            },
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "figures": self.0.iter().map(|f| json!({
                "name": f.name, "value": f.value, "unit": f.unit,
                "baseline": f.baseline.as_ref().map(|(n, v)| json!({"name": n, "value": v})),
                "ratio": f.baseline.as_ref().filter(|(_, b)| *b > 0.0).map(|(_, b)| f.value / b),
            })).collect::<Vec<_>>(),
        })
    }
}

/// What the HTTP part of the run measured.
pub struct Measured {
    pub org: String,
    /// The benchmark organisation's API key (the replica phase logs in again).
    pub key: String,
    pub written: i64,
    pub inbox: InboxRuns,
    /// The aggregate through `/sparql`: p50 (ms) and rows; `None` with `--sparql-reads 0`.
    pub sparql: Option<(f64, usize)>,
    pub reads: Reads,
    pub routed: Option<crate::routing::Routed>,
    pub rss: f64,
    /// Resident memory once the load finished (before the reads), and at the end.
    pub rss_loaded: f64,
    pub rss_rest: f64,
    pub rss_end: f64,
    /// Consignments in the store.
    pub consignments: usize,
}

/// The baselines measured on the store after the node stopped.
struct Raw {
    /// The page's row queries (ms, p50).
    page: f64,
    /// Look-up by aig id plus the parts of a view (ms, p50).
    view: f64,
    /// The aggregate over the union default graph and with `GRAPH ?g` (ms, p50); empty when
    /// not measured.
    aggregate: Vec<f64>,
    /// Oxigraph inserts of the example's expansion padded to what one Create wrote: per s,
    /// p50 (ms).
    insert: (f64, f64),
    /// Oxigraph inserts of copies of the quads one Create wrote: how many, per s, p50 (ms).
    written: Option<(usize, f64, f64)>,
    /// The same, each followed by a sync of the log as the node's commits: p50 (ms).
    written_synced: Option<f64>,
}

fn raw_baselines(args: &Args, dir: &Path, sparql_reads: usize, m: &Measured) -> Raw {
    let n = args.reads.min(50);
    let page = raw_page_query(dir, &m.org, &m.reads.ids, n);
    let (lookup, parts) = raw_view_queries(dir, &m.org, &m.reads.ids[0], n);
    let aggregate = match sparql_reads {
        0 => Vec::new(),
        n => raw_sparql(dir, n),
    };
    let (padded, written, synced) = if m.inbox.is_empty() {
        (Vec::new(), None, None)
    } else {
        let template = crate::written::of_a_create(dir, &m.org);
        let n = template.len();
        let raw = |synced| crate::written::raw_insert(&template, args.sequential, synced);
        (
            raw_oxigraph(args.sequential, m.written.max(1) as usize),
            (n > 0).then(|| (n, raw(false))),
            (n > 0).then(|| raw(true)),
        )
    };
    Raw {
        page,
        view: lookup + parts,
        aggregate,
        insert: rate_and_p50(padded),
        written: written.map(|(n, lat)| {
            let (per_s, p50) = rate_and_p50(lat);
            (n, per_s, p50)
        }),
        written_synced: synced.map(|lat| rate_and_p50(lat).1),
    }
}

/// Inserts per second and the median insert (ms).
fn rate_and_p50(mut lat: Vec<Duration>) -> (f64, f64) {
    let total: Duration = lat.iter().sum();
    lat.sort();
    (
        lat.len() as f64 / total.as_secs_f64(),
        percentile(&lat, 0.5),
    )
}

/// Measures the baselines on the store and adds every figure of the run to the table.
pub fn figures(args: &Args, dir: &Path, sparql_reads: usize, m: &Measured, table: &mut Table) {
    let raw = raw_baselines(args, dir, sparql_reads, m);
    inbox_figures(args, m, &raw, table);
    read_figures(&m.reads, &raw, table);
    if let (Some((p50, rows)), [union, by_graph]) = (m.sparql, raw.aggregate.as_slice()) {
        table.compared(
            format!("SPARQL aggregate through /sparql ({rows} rows): p50"),
            p50,
            "ms",
            "raw SPARQL, union default graph",
            *union,
        );
        table.add("  raw SPARQL, the pattern in GRAPH ?g", *by_graph, "ms");
    }
    table.add("node peak RSS (VmHWM)", m.rss, "MB");
    table.add("node RSS right after the load (VmRSS)", m.rss_loaded, "MB");
    table.add("node RSS at rest, 35 s after the load", m.rss_rest, "MB");
    table.add("node RSS at the end (VmRSS)", m.rss_end, "MB");
}

fn inbox_figures(args: &Args, m: &Measured, raw: &Raw, table: &mut Table) {
    let padded = format!(
        "raw Oxigraph insert of the example's expansion padded to {} quads",
        m.written
    );
    let (name_of, (per_s, p50)) = match raw.written {
        Some((n, per_s, p50)) => (
            format!("raw Oxigraph insert of the {n} quads a Create wrote"),
            (per_s, p50),
        ),
        None => (padded.clone(), raw.insert),
    };
    for (name, run) in &m.inbox {
        let baseline = name
            .starts_with("Create")
            .then_some((name_of.as_str(), per_s, p50));
        table.inbox(name, run, baseline);
        if name == "Create, concurrency 1" {
            // Where a Create's time goes inside the node (the rest: HTTP, queueing, the
            // replay check and the answer).
            for (stage, mean) in ["parse", "expand", "shapes", "store"]
                .iter()
                .zip(run.stages)
            {
                table.add(format!("  of which {stage} (mean)"), mean, "ms");
            }
        }
        if let (true, Some((n, _, _)), Some(synced)) = (
            name == "Create, concurrency 1",
            raw.written,
            raw.written_synced,
        ) {
            // The node syncs its log after each commit (`--sync-commits`, the default); the
            // issue's floor does not: the same insert made as durable.
            table.compared(
                format!("{name}: p50 (floor with the log synced)"),
                run.p50,
                "ms",
                format!("raw Oxigraph insert of the {n} quads a Create wrote, log synced"),
                synced,
            );
        }
        if name == "Create, concurrency 1" && raw.written.is_some() {
            // The earlier floor, kept to compare with the runs recorded before.
            table.compared(
                format!("{name}: p50 (earlier floor)"),
                run.p50,
                "ms",
                padded.as_str(),
                raw.insert.1,
            );
        }
    }
    if let Some(routed) = &m.routed {
        table.compared(
            format!(
                "Create p50 with {} policies ({} matching)",
                args.policies, args.matching
            ),
            routed.routed.p50,
            "ms",
            "Create p50, same time, a port no policy names",
            routed.unrouted.p50,
        );
        table.add("  of which routing (mean)", routed.routed.route, "ms");
        let (p50, p99) = routed.agency_list;
        table.compared(
            "list page (limit 50) of the agency the Creates were routed to: p50",
            p50,
            "ms",
            "own list page, first: p50",
            m.reads.list_first,
        );
        table.add("list page of the agency: p99", p99, "ms");
    }
}

fn read_figures(reads: &Reads, raw: &Raw, table: &mut Table) {
    let page = "raw SPARQL of the page's row queries";
    table.compared(
        "list page (limit 50), first: p50",
        reads.list_first,
        "ms",
        page,
        raw.page,
    );
    if reads.list_deep > 0.0 {
        table.compared(
            "list page (limit 50), after 20 pages: p50",
            reads.list_deep,
            "ms",
            page,
            raw.page,
        );
    }
    table.compared(
        "list page (limit 50), each page read once: p50",
        reads.list_cold,
        "ms",
        page,
        raw.page,
    );
    let raw_view_name = "the same store reads, raw (id look-up + parts)";
    table.compared("view: p50", reads.view, "ms", raw_view_name, raw.view);
    table.compared(
        "view, each consignment read once: p50",
        reads.view_once,
        "ms",
        raw_view_name,
        raw.view,
    );
    table.compared("events: p50", reads.events, "ms", raw_view_name, raw.view);
    table.compared(
        "documents: p50",
        reads.documents,
        "ms",
        raw_view_name,
        raw.view,
    );
    table.compared(
        "history (5 revisions): p50",
        reads.history,
        "ms",
        "view: p50",
        reads.view,
    );
    table.compared(
        "view at an instant (?at=): p50",
        reads.view_at,
        "ms",
        "view: p50",
        reads.view,
    );
    for (name, p99) in &reads.p99 {
        table.add(format!("{name}: p99"), *p99, "ms");
    }
}

/// The data dir's size, in all and per 1,000 consignments.
pub fn storage(table: &mut Table, consignments: usize, bytes: u64) {
    table.add(
        "data dir per 1,000 consignments",
        bytes as f64 / 1e6 / (consignments as f64 / 1000.0),
        "MB",
    );
    table.add("data dir", bytes as f64 / 1e6, "MB");
}

/// Prints the table under a heading and writes the figures to `--json`.
pub fn write(args: &Args, table: &Table, total: usize) {
    println!(
        "dataspace-node benchmark: {total} consignments, {} cores, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        chrono::Utc::now().to_rfc3339()
    );
    println!();
    table.print();
    std::fs::write(
        &args.json,
        serde_json::to_string_pretty(&table.json(args)).unwrap(),
    )
    .unwrap();
    println!();
    println!("figures written to {}", args.json.display());
}
