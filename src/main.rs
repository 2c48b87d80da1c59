use clap::{Parser, Subcommand};
use dataspace_node::Config;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "dataspace-node",
    version,
    about = "A node of a supply-chain dataspace"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the node: HTTP API on --bind, embedded store in --data-dir.
    Serve(Config),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(config) => serve(config).await,
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
