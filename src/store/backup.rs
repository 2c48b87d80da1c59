//! `dataspace-node export` and `import`: the whole store as N-Quads or TriG, and back.
//!
//! The RDF is all of the node's state except two directories next to the store: `blobs/`
//! (document bytes, named by their SHA-256 in the RDF) and `secrets/` (operator key, session,
//! cursor and link keys, the credential key, the Ed25519 attestation key). A full backup is an
//! export plus a copy of those two; a restore is an import into a new data dir plus the copy.
//!
//! - Both commands open the store read-write, which takes RocksDB's lock: a node running on
//!   the data dir (or another export or import) makes them fail with [`BackupError::InUse`]
//!   and nothing is read or written. Oxigraph's read-only open is documented as undefined
//!   behaviour while another process writes, so it is not offered.
//! - Export streams one snapshot of the store to the writer, quad by quad; to a file it writes
//!   a temporary file next to it and renames it when complete, so a failed export never
//!   leaves a file that looks like a whole one.
//! - Import refuses a store that holds any quad, parses while it loads with Oxigraph's bulk
//!   loader in its atomic mode (the sorted files it builds are ingested in one step at the
//!   end, when the whole input has parsed), so a malformed file — or a crash — leaves the
//!   store as empty as it was; a store directory the import created is removed again on
//!   failure.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use oxigraph::io::{RdfFormat, RdfParseError, RdfParser, RdfSerializer};
use oxigraph::store::{LoaderError, StorageError, Store};

/// The two dataset formats a backup can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// N-Quads (`.nq`): one quad per line; the default.
    #[value(name = "nquads")]
    NQuads,
    /// TriG (`.trig`): the quads grouped by graph, with the node's prefixes.
    #[value(name = "trig")]
    TriG,
}

impl Format {
    /// The format a file name's extension says (`.nq`, `.nquads`, `.trig`), if any.
    pub fn from_path(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "nq" | "nquads" => Some(Self::NQuads),
            "trig" => Some(Self::TriG),
            _ => None,
        }
    }

    fn rdf(self) -> RdfFormat {
        match self {
            Self::NQuads => RdfFormat::NQuads,
            Self::TriG => RdfFormat::TriG,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::NQuads => "N-Quads",
            Self::TriG => "TriG",
        }
    }
}

/// Why an export or import did not happen. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{} holds no store (no {}): nothing to do", .0.display(), .0.join("store").display())]
    NoStore(PathBuf),
    #[error(
        "the store {} is in use, most likely by a running node: stop the node on this data dir \
         first (export, import and compact need the store to themselves)",
        .0.display()
    )]
    InUse(PathBuf),
    #[error(
        "the store {} is not empty: import only loads into a new data dir (or one whose store \
         is empty); nothing was changed",
        .0.display()
    )]
    NotEmpty(PathBuf),
    #[error("cannot tell the format of {} from its name: pass --format nquads or --format trig", .0.display())]
    UnknownFormat(PathBuf),
    #[error("{input}, line {line}, column {column}: {message}; nothing was imported")]
    Syntax {
        input: String,
        line: u64,
        column: u64,
        message: String,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("store: {0}")]
    Store(#[from] StorageError),
    #[error("{0}; nothing was imported")]
    BaseUrl(String),
}

type Result<T> = std::result::Result<T, BackupError>;

fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> BackupError {
    let context = context.into();
    move |source| BackupError::Io { context, source }
}

/// The store directory of a data dir.
pub fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join("store")
}

/// The directories of a data dir that a full backup copies next to the export, as present.
pub fn companions(data_dir: &Path) -> Vec<PathBuf> {
    ["blobs", "secrets"]
        .into_iter()
        .map(|d| data_dir.join(d))
        .filter(|p| p.is_dir())
        .collect()
}

/// RocksDB writes `CURRENT` when it creates a database.
fn store_exists(path: &Path) -> bool {
    path.join("CURRENT").is_file()
}

/// Opens the store read-write, which fails while another process (a node) has it open.
fn open_alone(path: &Path) -> Result<Store> {
    Store::open(path).map_err(|e| {
        // RocksDB's lock failure: "While lock file: …/LOCK: Resource temporarily unavailable"
        // (another process) or "lock hold by current process … /LOCK: …" (this one).
        if e.to_string().contains("LOCK") {
            BackupError::InUse(path.to_owned())
        } else {
            BackupError::Store(e)
        }
    })
}

/// `dataspace-node compact`: a full compaction of the store (the node stopped). Deleted and
/// overwritten keys take disk until RocksDB's compactions reach the last level, which on a
/// store that has stopped growing may be never; this returns that space. Returns the line to
/// report.
pub fn compact_command(data_dir: &Path) -> Result<String> {
    let path = store_path(data_dir);
    if !store_exists(&path) {
        return Err(BackupError::NoStore(data_dir.to_owned()));
    }
    let before = dir_size(&path);
    // Oxigraph's store itself, not the node's (whose opening takes the models snapshot's
    // token): a compaction changes no data, so the snapshot the node saved stays valid and
    // its next start does not rebuild the models.
    let store = open_alone(&path)?;
    store.optimize()?;
    store.flush()?;
    drop(store);
    let after = dir_size(&path);
    Ok(format!(
        "compacted {}: {:.1} MB before, {:.1} MB after",
        path.display(),
        before as f64 / 1e6,
        after as f64 / 1e6
    ))
}

/// The bytes of the files directly in `dir` (a RocksDB directory has no subdirectories).
fn dir_size(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    pub quads: u64,
}

/// Whether a quad is derived data the node writes again at its first start, and so is
/// neither exported nor imported: the readable-graph markers (`sharing::readable`), and the
/// models snapshot's token. An edited or merged dump brings its grants, never markers that
/// no longer match them, nor a token that would make the node take a snapshot of the
/// unedited state (left in the data dir) for the state imported.
pub fn derived(quad: &oxigraph::model::Quad) -> bool {
    super::snapshot::is_token(quad)
        || matches!(&quad.graph_name, oxigraph::model::GraphName::NamedNode(g)
        if g.as_str().starts_with(super::graphs::readable_root().as_str())
            || *g == super::bulk::notes_graph())
}

/// Writes every quad of the data dir's store to `out` in `format`, from one snapshot, but
/// the derived ones.
pub fn export(data_dir: &Path, format: Format, out: impl Write) -> Result<Exported> {
    let path = store_path(data_dir);
    if !store_exists(&path) {
        return Err(BackupError::NoStore(data_dir.to_owned()));
    }
    let store = open_alone(&path)?;
    // What a killed `load` left half-written goes first, as the node's own open would remove
    // it: an export holds whole activities only (and its notes, imported, would empty
    // graphs of the restored store).
    super::bulk::clean_up(&store).map_err(|e| BackupError::Io {
        context: "removing what an interrupted load left".into(),
        source: io::Error::other(e.to_string()),
    })?;
    let mut serializer = RdfSerializer::from_format(format.rdf());
    if format == Format::TriG {
        for (prefix, iri) in PREFIXES {
            serializer = serializer
                .with_prefix(*prefix, *iri)
                .map_err(|e| io_error("prefix")(io::Error::other(e)))?;
        }
    }
    let mut writer = serializer.for_writer(BufWriter::new(out));
    let mut quads = 0;
    // `iter` reads one RocksDB snapshot; the lock keeps every writer out meanwhile anyway.
    for quad in store.iter() {
        let quad = quad?;
        if derived(&quad) {
            continue;
        }
        writer
            .serialize_quad(&quad)
            .map_err(io_error("writing the export"))?;
        quads += 1;
    }
    writer
        .finish()
        .and_then(|mut w| w.flush())
        .map_err(io_error("writing the export"))?;
    Ok(Exported { quads })
}

/// [`export`] to a file: written next to it under a temporary name, synced, then renamed.
pub fn export_to_file(data_dir: &Path, format: Format, file: &Path) -> Result<Exported> {
    let name = file
        .file_name()
        .ok_or_else(|| io_error(file.display().to_string())(io::Error::other("not a file name")))?;
    let partial = file.with_file_name(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        // It holds password and key hashes: readable by the node's user alone, as the secrets.
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let out = options
            .open(&partial)
            .map_err(io_error(partial.display().to_string()))?;
        let exported = export(data_dir, format, &out)?;
        out.sync_all()
            .map_err(io_error(partial.display().to_string()))?;
        fs::rename(&partial, file).map_err(io_error(file.display().to_string()))?;
        Ok(exported)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&partial);
    }
    result
}

/// `dataspace-node export`: to `output` (format from its extension unless given) or stdout.
/// Returns the line to report, which names the directories a full backup copies as well.
pub fn export_command(
    data_dir: &Path,
    format: Option<Format>,
    output: Option<&Path>,
) -> Result<String> {
    let format = format
        .or_else(|| output.and_then(Format::from_path))
        .unwrap_or(Format::NQuads);
    let exported = match output {
        Some(file) => export_to_file(data_dir, format, file)?,
        None => export(data_dir, format, io::stdout().lock())?,
    };
    let mut done = format!(
        "exported {} quads from {} as {}",
        exported.quads,
        store_path(data_dir).display(),
        format.name()
    );
    let companions: Vec<String> = companions(data_dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if !companions.is_empty() {
        done.push_str(&format!(
            "; a full backup also copies {} (README: Backup and restore)",
            companions.join(" and ")
        ));
    }
    Ok(done)
}

/// `dataspace-node import`: from `input` (format from its extension unless given) or stdin
/// (N-Quads unless given). Returns the line to report.
pub fn import_command(
    data_dir: &Path,
    format: Option<Format>,
    input: Option<&Path>,
    base_url: Option<(&str, bool)>,
) -> Result<String> {
    let base_url = match base_url {
        Some((url, change)) => Some((
            crate::identity::NodeIdentity::new(url)
                .map_err(|e| BackupError::BaseUrl(e.to_string()))?
                .base_url()
                .to_owned(),
            change,
        )),
        None => None,
    };
    let base_url = base_url.as_ref().map(|(u, c)| (u.as_str(), *c));
    let imported = match input {
        Some(file) => {
            let format = format
                .or_else(|| Format::from_path(file))
                .ok_or_else(|| BackupError::UnknownFormat(file.to_owned()))?;
            let name = file.display().to_string();
            let reader = File::open(file).map_err(io_error(format!("opening {name}")))?;
            import_checked(
                data_dir,
                format,
                io::BufReader::new(reader),
                &name,
                base_url,
            )?
        }
        None => import_checked(
            data_dir,
            format.unwrap_or(Format::NQuads),
            io::stdin().lock(),
            "standard input",
            base_url,
        )?,
    };
    Ok(format!(
        "imported {} quads into {}; copy blobs/ and secrets/ of the backup into {} before \
         starting the node there, with the same --base-url",
        imported.quads,
        store_path(data_dir).display(),
        data_dir.display()
    ))
}

/// Prefixes of a TriG export: the node's namespace and the vocabularies it stores.
const PREFIXES: &[(&str, &str)] = &[
    ("dsn", crate::vocab::DSN),
    ("unece", crate::vocab::UNECE),
    ("as", "https://www.w3.org/ns/activitystreams#"),
    ("odrl", crate::vocab::ODRL),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("xsd", crate::vocab::XSD),
];

/// What an import loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub quads: u64,
}

/// Loads `input` (named `input_name` in messages) into the data dir's store, which must be
/// empty or absent. On any failure the store is left as it was (absent stays absent).
pub fn import(
    data_dir: &Path,
    format: Format,
    input: impl Read,
    input_name: &str,
) -> Result<Imported> {
    import_checked(data_dir, format, input, input_name, None)
}

/// [`import`], the base URL the export records checked against `base_url` (recorded when it
/// records none; another refused unless the flag says the change is meant), as a start of
/// the node would.
pub fn import_checked(
    data_dir: &Path,
    format: Format,
    input: impl Read,
    input_name: &str,
    base_url: Option<(&str, bool)>,
) -> Result<Imported> {
    let path = store_path(data_dir);
    let created_dir = !data_dir.exists();
    let created_store = !path.exists();
    let result = load(&path, format, input, input_name, base_url);
    if result.is_err() {
        // Leave nothing the import created: a restored data dir is only ever a complete one.
        if created_dir {
            let _ = fs::remove_dir_all(data_dir);
        } else if created_store {
            let _ = fs::remove_dir_all(&path);
        }
    }
    result
}

fn load(
    path: &Path,
    format: Format,
    input: impl Read,
    input_name: &str,
    base_url: Option<(&str, bool)>,
) -> Result<Imported> {
    fs::create_dir_all(path).map_err(io_error(path.display().to_string()))?;
    let store = open_alone(path)?;
    if !store.is_empty()? {
        return Err(BackupError::NotEmpty(path.to_owned()));
    }
    let mut quads = 0u64;
    let parsed = RdfParser::from_format(format.rdf())
        .rename_blank_nodes()
        .for_reader(input)
        .filter(|q| !q.as_ref().is_ok_and(derived))
        .inspect(|q| {
            if q.is_ok() {
                quads += 1;
            }
        });
    let mut loader = store.bulk_loader();
    loader
        .load_ok_quads::<RdfParseError, LoaderError>(parsed)
        .map_err(|e| loader_error(e, input_name))?;
    // Atomic mode: nothing is in the store before this.
    loader.commit()?;
    if let Some((url, change)) = base_url {
        super::base_url::check_in(&store, url, change)
            .map_err(|e| BackupError::BaseUrl(e.to_string()))?;
    }
    store.flush()?;
    Ok(Imported { quads })
}

fn loader_error(e: LoaderError, input_name: &str) -> BackupError {
    match e {
        LoaderError::Parsing(RdfParseError::Syntax(e)) => {
            let (line, column) = e
                .location()
                .map_or((0, 0), |l| (l.start.line + 1, l.start.column + 1));
            BackupError::Syntax {
                input: input_name.to_owned(),
                line,
                column,
                message: e.to_string(),
            }
        }
        LoaderError::Parsing(RdfParseError::Io(e)) => io_error(format!("reading {input_name}"))(e),
        LoaderError::Storage(e) => BackupError::Store(e),
        other => BackupError::Io {
            context: format!("loading {input_name}"),
            source: io::Error::other(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::{BlankNode, GraphName, Literal, NamedNode, Quad};

    fn sample(store: &Store) {
        let g = GraphName::NamedNode(NamedNode::new_unchecked("urn:dataspace-node:g"));
        let s = NamedNode::new_unchecked("urn:dataspace-node:s");
        let b = BlankNode::default();
        for q in [
            Quad::new(
                s.clone(),
                crate::vocab::dsn("p"),
                Literal::new_language_tagged_literal_unchecked("é \"x\"\n", "fr"),
                g.clone(),
            ),
            Quad::new(s, crate::vocab::dsn("q"), b.clone(), g.clone()),
            Quad::new(b, crate::vocab::dsn("r"), Literal::from(7), g),
        ] {
            store.insert(&q).unwrap();
        }
    }

    fn dataset(store: &Store) -> oxigraph::model::Dataset {
        let mut d: oxigraph::model::Dataset = store.iter().map(|q| q.unwrap()).collect();
        d.canonicalize(oxigraph::model::dataset::CanonicalizationAlgorithm::Unstable);
        d
    }

    #[test]
    fn both_formats_round_trip_and_a_busy_store_is_refused() {
        let from = tempfile::tempdir().unwrap();
        let original = Store::open(store_path(from.path())).unwrap();
        sample(&original);
        // The node has the store open: export refuses.
        let mut sink = Vec::new();
        assert!(matches!(
            export(from.path(), Format::NQuads, &mut sink),
            Err(BackupError::InUse(_))
        ));
        let expected = dataset(&original);
        drop(original);
        for format in [Format::NQuads, Format::TriG] {
            let mut out = Vec::new();
            assert_eq!(export(from.path(), format, &mut out).unwrap().quads, 3);
            let to = tempfile::tempdir().unwrap();
            let dir = to.path().join("new");
            let n = import(&dir, format, out.as_slice(), "test").unwrap();
            assert_eq!(n.quads, 3);
            assert_eq!(dataset(&Store::open(store_path(&dir)).unwrap()), expected);
            // A second import into the now filled store is refused.
            assert!(matches!(
                import(&dir, format, out.as_slice(), "test"),
                Err(BackupError::NotEmpty(_))
            ));
        }
    }

    /// What a killed `load` left (a graph its transaction never recorded, with the note that
    /// says so) is not exported; a note in an import is not loaded (the restored node would
    /// empty the graph it names).
    #[test]
    fn an_interrupted_loads_leftovers_are_neither_exported_nor_imported() {
        let from = tempfile::tempdir().unwrap();
        let original = Store::open(store_path(from.path())).unwrap();
        sample(&original);
        let lost = NamedNode::new_unchecked("urn:dataspace-node:contribution:lost");
        let half = Quad::new(
            lost.clone(),
            crate::vocab::dsn("p"),
            Literal::from(1),
            GraphName::NamedNode(lost.clone()),
        );
        original.insert(&half).unwrap();
        original.insert(&super::super::bulk::note(&lost)).unwrap();
        drop(original);
        let mut out = Vec::new();
        assert_eq!(
            export(from.path(), Format::NQuads, &mut out).unwrap().quads,
            3
        );
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("contribution:lost"), "{text}");

        let kept = NamedNode::new_unchecked("urn:dataspace-node:g");
        let crafted = format!("{text}{} .\n", super::super::bulk::note(&kept));
        let to = tempfile::tempdir().unwrap();
        let dir = to.path().join("new");
        assert_eq!(
            import(&dir, Format::NQuads, crafted.as_bytes(), "x.nq")
                .unwrap()
                .quads,
            3
        );
        let restored = Store::open(store_path(&dir)).unwrap();
        assert_eq!(restored.len().unwrap(), 3);
    }

    #[test]
    fn a_malformed_input_leaves_nothing() {
        let to = tempfile::tempdir().unwrap();
        let dir = to.path().join("new");
        let text = "<urn:a> <urn:b> <urn:c> <urn:g> .\n<urn:a> <urn:b> \"open <urn:g> .\n";
        match import(&dir, Format::NQuads, text.as_bytes(), "x.nq") {
            Err(BackupError::Syntax { line, .. }) => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
        assert!(!dir.exists());
        // An existing empty data dir keeps no store either.
        match import(to.path(), Format::NQuads, text.as_bytes(), "x.nq") {
            Err(e) => assert!(e.to_string().contains("line 2"), "{e}"),
            Ok(n) => panic!("{n:?}"),
        }
        assert!(to.path().exists() && !store_path(to.path()).exists());
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(Format::from_path(Path::new("a/b.nq")), Some(Format::NQuads));
        assert_eq!(Format::from_path(Path::new("b.TriG")), Some(Format::TriG));
        assert_eq!(Format::from_path(Path::new("b.ttl")), None);
        assert_eq!(Format::from_path(Path::new("b")), None);
    }
}
