use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use dataspace_node::store::backup::{self, Format};
use dataspace_node::Config;
use tracing_subscriber::EnvFilter;

/// `--version`: the release and the data-dir format it writes (`store::format`).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), ", data-dir format 1");

#[derive(Parser)]
#[command(
    name = "dataspace-node",
    version = VERSION,
    about = "A node of a supply-chain dataspace"
)]
struct Cli {
    /// Log lines as text (the default) or as one JSON object per line for a log collector;
    /// a request's lines carry its `x-request-id` in the `request` span's `id`.
    #[arg(
        long,
        global = true,
        env = "DATASPACE_NODE_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Logs to stderr in `format`, at `RUST_LOG`'s levels (info by default).
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the node: HTTP API on --bind, embedded store in --data-dir.
    Serve(Box<Config>),
    /// Write the whole store as N-Quads or TriG (a backup, or data for another SPARQL store).
    /// The node must be stopped. A full backup also copies <data-dir>/blobs and
    /// <data-dir>/secrets.
    Export(ExportArgs),
    /// Load an export into a data dir whose store is empty or absent. The node must be
    /// stopped. Copy blobs/ and secrets/ of the backup into the data dir before starting it.
    Import(ImportArgs),
    /// Onboard an organisation's history: files of activities (JSON lines, or directories of
    /// .json files) checked and applied as if each had been posted to the inbox, in order. The
    /// node must be stopped. Refused lines are printed as JSON lines; progress on stderr.
    Load(Box<dataspace_node::load::LoadArgs>),
    /// The SPARQL replica (`--replica-query-url`): fill it from the store, or compare the two.
    /// The node must be stopped.
    Replica(ReplicaArgs),
    /// Make a new data dir from an online backup (`POST /operations/backups`), every file's
    /// SHA-256 checked against its manifest first.
    Restore(RestoreArgs),
    /// Compact the whole store, returning the disk that deleted and rewritten data still takes.
    /// The node must be stopped.
    Compact(CompactArgs),
}

#[derive(Args)]
struct RestoreArgs {
    /// The backup's directory (`<backup-dir>/backup-…`).
    backup: PathBuf,
    /// The new data dir (absent or empty).
    #[arg(long, env = "DATASPACE_NODE_DATA_DIR")]
    data_dir: PathBuf,
}

#[derive(Args)]
struct CompactArgs {
    /// Directory holding the store to compact.
    #[arg(long, env = "DATASPACE_NODE_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
}

#[derive(Args)]
struct ReplicaArgs {
    #[command(subcommand)]
    action: ReplicaAction,
}

#[derive(Subcommand)]
enum ReplicaAction {
    /// Replace everything the replica holds of the node with the store's graphs.
    Sync(ReplicaTarget),
    /// Compare each replicated graph (triple count, hash of a canonical form) with the store;
    /// print the differences; exit 1 when there are any (2 when it could not compare).
    Verify(ReplicaTarget),
}

#[derive(Args)]
struct ReplicaTarget {
    /// Directory holding the store.
    #[arg(long, env = "DATASPACE_NODE_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    #[command(flatten)]
    replica: dataspace_node::config::ReplicaConfig,
}

#[derive(Args)]
struct ExportArgs {
    /// Directory holding the store to export.
    #[arg(long, env = "DATASPACE_NODE_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Output format; by default the --output file's extension (.nq, .trig), else N-Quads.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// File to write (replaced only once the export is complete); standard output when absent.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct ImportArgs {
    /// Directory whose store receives the quads (created when missing).
    #[arg(long, env = "DATASPACE_NODE_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Input format; by default the --input file's extension (.nq, .trig); N-Quads for
    /// standard input.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// File to read; standard input when absent.
    #[arg(long, short)]
    input: Option<PathBuf>,
    /// The base URL the node will serve this data dir under: refused when the export records
    /// another, unless --change-base-url.
    #[arg(long, env = "DATASPACE_NODE_BASE_URL")]
    base_url: Option<String>,
    /// Accept a base URL other than the one the export records (the DIDs change with it).
    #[arg(long, env = "DATASPACE_NODE_CHANGE_BASE_URL")]
    change_base_url: bool,
}

fn main() -> std::process::ExitCode {
    // Before the runtime starts its threads (each would get an allocator arena of its own).
    dataspace_node::store::memory::tune_allocator();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime");
    let code = runtime.block_on(cli());
    // Dropping a runtime waits for every blocking task; one still computing (a query the
    // guard has not reached yet) must not keep a stopped node alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

async fn cli() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Serve(config) => serve(*config).await,
        Command::Export(a) => {
            return report(backup::export_command(
                &a.data_dir,
                a.format,
                a.output.as_deref(),
            ))
        }
        Command::Replica(a) => return replica(a).await,
        Command::Restore(a) => {
            let restored = tokio::task::spawn_blocking(move || {
                dataspace_node::backups::restore(&a.backup, &a.data_dir)
            })
            .await;
            return match restored {
                Ok(result) => report(result),
                Err(e) => report(Err::<String, _>(e)),
            };
        }
        Command::Compact(a) => {
            // Minutes of disk work at a million consignments: off the async threads.
            let compacted =
                tokio::task::spawn_blocking(move || backup::compact_command(&a.data_dir)).await;
            return match compacted {
                Ok(result) => report(result),
                Err(e) => report(Err::<String, _>(e)),
            };
        }
        Command::Load(a) => return load(*a).await,
        Command::Import(a) => {
            return report(backup::import_command(
                &a.data_dir,
                a.format,
                a.input.as_deref(),
                a.base_url.as_deref().map(|u| (u, a.change_base_url)),
            ))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "the node stopped with an error");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> dataspace_node::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.bind).await?;
    dataspace_node::run(listener, config, shutdown_signal()).await
}

/// The outcome of `export`, `import` or `replica sync`, on stderr (stdout may be the export
/// itself).
fn report(result: Result<String, impl std::fmt::Display>) -> std::process::ExitCode {
    match result {
        Ok(done) => {
            eprintln!("dataspace-node: {done}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dataspace-node: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn replica(a: ReplicaArgs) -> std::process::ExitCode {
    use dataspace_node::replica::command;
    match a.action {
        ReplicaAction::Sync(t) => report(
            command::sync(t.data_dir, t.replica)
                .await
                .map_err(|e| e.to_string()),
        ),
        ReplicaAction::Verify(t) => match command::verify(t.data_dir, t.replica).await {
            Ok((differences, unshipped)) => {
                for d in &differences {
                    println!("{d}");
                }
                if unshipped > 0 {
                    eprintln!("dataspace-node: {unshipped} logged changes are not shipped yet");
                }
                if differences.is_empty() {
                    eprintln!("dataspace-node: the replica holds what the store holds");
                    std::process::ExitCode::SUCCESS
                } else {
                    eprintln!("dataspace-node: {} graphs differ", differences.len());
                    std::process::ExitCode::FAILURE
                }
            }
            Err(e) => {
                eprintln!("dataspace-node: error: {e}");
                std::process::ExitCode::from(2)
            }
        },
    }
}

/// Exit 0 when every line was applied (now or before), 1 when any was refused, 2 when the
/// load could not run.
async fn load(args: dataspace_node::load::LoadArgs) -> std::process::ExitCode {
    match dataspace_node::load::run(args).await {
        Ok(t) => {
            eprintln!(
                "dataspace-node: loaded: {} applied, {} applied before, {} refused",
                t.applied, t.replayed, t.refused
            );
            if t.refused == 0 {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("dataspace-node: error: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_names_the_data_dir_format_the_node_writes() {
        let format = dataspace_node::store::format::FORMAT;
        assert!(super::VERSION.ends_with(&format!("data-dir format {format}")));
    }
}
