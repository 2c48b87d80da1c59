//! `dataspace-node load`: an organisation's history onboarded with the node stopped. Files of
//! activities (JSON lines, or directories of `.json` files, one activity each) go through the
//! inbox's checks and writes in file order, in batches of lines
//! ([`crate::intake::Intake::process_batch`]: a transaction per run of `Create`s, or of other
//! kinds, within a batch): the node ends exactly as if each activity had
//! been posted — records, summaries, events, documents, routing under the stored policies,
//! notifications, markers, list order, log entries.
//!
//! Every refused line is reported on stdout as one JSON line (`file`, `line`, `error`: what the
//! inbox would have answered); progress (count, rate, ETA) goes to stderr. A killed load leaves
//! whole activities only (whole transactions); loading the same files again answers the
//! applied lines as replays and applies the rest. At the end the store is sealed and the
//! models saved, so the node's next start does not rebuild them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::auth::Caller;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::intake::Loaded;
use crate::node::Node;

#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    #[command(flatten)]
    pub config: Config,
    /// The organisation (DID) whose activities these are; it must exist on this node.
    #[arg(long)]
    pub organization: String,
    /// The user (email) the activities are recorded as posted by; may be left out when the
    /// organisation has one user.
    #[arg(long)]
    pub user: Option<String>,
    /// Activities per transaction.
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// JSON-lines files, or directories of `.json` files (taken in name order).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// What a load did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub applied: u64,
    pub replayed: u64,
    pub refused: u64,
}

/// Runs the load; `Err` when it could not start or the node failed (what was committed stays).
pub async fn run(args: LoadArgs) -> Result<Tally> {
    let base_url = args
        .config
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", args.config.bind));
    let config = args.config.clone();
    // Opening RocksDB and the models: blocking.
    let node = tokio::task::spawn_blocking(move || Node::open(config, &base_url)).await??;
    let node = Arc::new(node);
    let caller = caller(&node, &args).await?;
    let files = inputs(&args.files)?;
    let total: u64 = files
        .iter()
        .map(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    let mut progress = Progress::new(total);
    let mut tally = Tally::default();
    let mut batch = Batch::default();
    for path in files {
        for line in Lines::open(&path, args.config.body_limit_bytes)? {
            let line = line?;
            progress.bytes += line.bytes;
            batch.push(path.clone(), line);
            if batch.len() >= args.batch.max(1) {
                apply(&node, &caller, &mut batch, &mut tally).await?;
                progress.show(&tally, false);
            }
        }
    }
    apply(&node, &caller, &mut batch, &mut tally).await?;
    progress.show(&tally, true);
    let closing = node.clone();
    tokio::task::spawn_blocking(move || closing.close()).await??;
    Ok(tally)
}

/// The organisation's user the activities are posted as.
async fn caller(node: &Arc<Node>, args: &LoadArgs) -> Result<Caller> {
    let (n, org, user) = (node.clone(), args.organization.clone(), args.user.clone());
    tokio::task::spawn_blocking(move || {
        if !n.accounts.organization_exists(&org)? {
            return Err(Error::bad_request(format!(
                "{org} is not an organisation of this node (check --organization and --base-url)"
            )));
        }
        let user = match user {
            Some(email) => n
                .accounts
                .user_by_email(&email.trim().to_lowercase())?
                .filter(|u| u.organization == org)
                .map(|u| u.identity)
                .ok_or_else(|| Error::bad_request(format!("{email} is not a user of {org}")))?,
            None => match n.accounts.users_of(&org)?.as_slice() {
                [one] => one.clone(),
                _ => {
                    return Err(Error::bad_request(format!(
                        "{org} has several users (or none): name one with --user"
                    )))
                }
            },
        };
        Ok(Caller::acting_for(user, org))
    })
    .await?
}

/// Commits the batch and reports its refused lines.
async fn apply(
    node: &Arc<Node>,
    caller: &Caller,
    batch: &mut Batch,
    tally: &mut Tally,
) -> Result<()> {
    if batch.len() == 0 {
        return Ok(());
    }
    let mut lines = std::mem::take(batch);
    let limit = node.config.body_limit_bytes;
    let mut out = std::io::stdout().lock();
    for (path, line) in lines.lines.iter().filter(|(_, l)| l.too_long) {
        tally.refused += 1;
        let report = json!({"file": path, "line": line.number, "error": Line::refusal(limit)});
        writeln!(out, "{report}")?;
    }
    drop(out);
    lines.lines.retain(|(_, l)| !l.too_long);
    if lines.lines.is_empty() {
        return Ok(());
    }
    // The bodies move to the blocking thread; the reports need only the line numbers.
    let bodies: Vec<Vec<u8>> = lines
        .lines
        .iter_mut()
        .map(|(_, l)| std::mem::take(&mut l.body))
        .collect();
    let (n, who) = (node.clone(), caller.clone());
    // Expansion, shapes and the transaction are CPU and disk work; a document's content is
    // taken on this blocking thread, which can wait for a fetch.
    let outcomes = tokio::task::spawn_blocking(move || {
        let outcomes = n.intake.process_batch(&who, &bodies)?;
        n.store.flush_if_due()?;
        Ok::<_, Error>(outcomes)
    })
    .await??;
    let mut out = std::io::stdout().lock();
    for ((path, line), outcome) in lines.lines.iter().zip(outcomes) {
        match outcome {
            Loaded::Applied(_) => tally.applied += 1,
            Loaded::Replayed(_) => tally.replayed += 1,
            Loaded::Refused(error) => {
                tally.refused += 1;
                let report = json!({"file": path, "line": line.number, "error": error});
                writeln!(out, "{report}")?;
            }
        }
    }
    Ok(())
}

#[derive(Default)]
struct Batch {
    lines: Vec<(PathBuf, Line)>,
}

impl Batch {
    fn push(&mut self, path: PathBuf, line: Line) {
        self.lines.push((path, line));
    }
    fn len(&self) -> usize {
        self.lines.len()
    }
}

/// The files named, directories replaced by their `.json` files in name order.
fn inputs(named: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in named {
        if path.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(path)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
                .collect();
            inner.sort();
            files.extend(inner);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(Error::bad_request(format!(
                "{} is neither a file nor a directory",
                path.display()
            )));
        }
    }
    Ok(files)
}

/// One activity: its line number (1 for a whole `.json` file) and bytes.
struct Line {
    number: u64,
    /// Empty when `too_long`.
    body: Vec<u8>,
    /// Bytes of the file it took, for the progress.
    bytes: u64,
    /// Longer than the inbox's body limit: refused without being read whole (a 400 MB line
    /// with no newline held 1.2 GB, twice, in a batch).
    too_long: bool,
}

impl Line {
    /// What the inbox answers a body over its limit.
    fn refusal(limit: usize) -> Value {
        let e = Error::PayloadTooLarge { limit };
        json!({"message": e.to_string(), "properties": {"limitBytes": limit}})
    }
}

/// The activities of one file: a `.json` file is one, anything else is JSON lines (blank
/// lines skipped; a last line without its newline is still a line, and refused if torn).
enum Lines {
    /// A whole file: its body, or `None` when it is over the limit (its size then).
    Whole(Option<Result<Vec<u8>, u64>>),
    Each(std::io::BufReader<std::fs::File>, u64, usize),
}

impl Lines {
    /// The activities of `path`, each at most `limit` bytes (the inbox's body limit).
    fn open(path: &Path, limit: usize) -> Result<Self> {
        if path.extension().is_some_and(|x| x == "json") {
            let size = path.metadata()?.len();
            // A file's final newline (or CRLF) is not part of its body; read at most the
            // limit and those two bytes.
            if size > limit as u64 + 2 {
                return Ok(Self::Whole(Some(Err(size))));
            }
            let mut body = std::fs::read(path)?;
            let ending = match body.as_slice() {
                [.., b'\r', b'\n'] => 2,
                [.., b'\n'] => 1,
                _ => 0,
            };
            if body.len() - ending > limit {
                return Ok(Self::Whole(Some(Err(size))));
            }
            body.truncate(body.len() - ending);
            return Ok(Self::Whole(Some(Ok(body))));
        }
        let file = std::fs::File::open(path)?;
        Ok(Self::Each(
            std::io::BufReader::with_capacity(1 << 20, file),
            0,
            limit,
        ))
    }
}

/// Reads one line (with its newline) into `body`, keeping at most `limit` bytes: the bytes
/// the line took and whether it was longer (`body` then empty, the rest skipped).
fn read_line(
    reader: &mut impl std::io::BufRead,
    body: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<(u64, bool)> {
    let (mut bytes, mut too_long) = (0u64, false);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (n, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        // The newline (or CRLF) ending a line is not part of its body.
        let ending = match (done, n >= 2 && buf[n - 2] == b'\r') {
            (true, true) => 2,
            (true, false) => 1,
            _ => 0,
        };
        let body_bytes = n - ending;
        if !too_long && body.len() + body_bytes > limit {
            too_long = true;
            *body = Vec::new();
        }
        if !too_long {
            body.extend_from_slice(&buf[..n]);
        }
        bytes += n as u64;
        reader.consume(n);
        if done {
            break;
        }
    }
    Ok((bytes, too_long))
}

impl Iterator for Lines {
    type Item = Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Whole(body) => body.take().map(|body| {
                Ok(match body {
                    Ok(body) => Line {
                        number: 1,
                        bytes: body.len() as u64,
                        body,
                        too_long: false,
                    },
                    Err(size) => Line {
                        number: 1,
                        bytes: size,
                        body: Vec::new(),
                        too_long: true,
                    },
                })
            }),
            Self::Each(reader, number, limit) => loop {
                let mut body = Vec::new();
                match read_line(reader, &mut body, *limit) {
                    Ok((0, _)) => return None,
                    Ok((bytes, too_long)) => {
                        *number += 1;
                        if !too_long && body.iter().all(u8::is_ascii_whitespace) {
                            continue;
                        }
                        return Some(Ok(Line {
                            number: *number,
                            body,
                            bytes,
                            too_long,
                        }));
                    }
                    Err(e) => return Some(Err(e.into())),
                }
            },
        }
    }
}

/// Count, rate and estimated time left, on stderr every few seconds.
struct Progress {
    started: Instant,
    shown: Instant,
    total: u64,
    bytes: u64,
}

impl Progress {
    fn new(total: u64) -> Self {
        let now = Instant::now();
        Self {
            started: now,
            shown: now,
            total,
            bytes: 0,
        }
    }

    fn show(&mut self, tally: &Tally, last: bool) {
        if !last && self.shown.elapsed() < Duration::from_secs(5) {
            return;
        }
        self.shown = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let done = tally.applied + tally.replayed + tally.refused;
        let rate = done as f64 / secs;
        let left = self.total.saturating_sub(self.bytes) as f64;
        let eta = left / (self.bytes as f64 / secs).max(1.0);
        eprintln!(
            "dataspace-node load: {done} activities ({} applied, {} replayed, {} refused), \
             {rate:.0}/s, {secs:.0} s{}",
            tally.applied,
            tally.replayed,
            tally.refused,
            if last {
                String::new()
            } else {
                format!(", about {eta:.0} s left")
            }
        );
    }
}
