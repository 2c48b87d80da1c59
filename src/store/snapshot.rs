//! The in-memory models saved at a clean shutdown, so the next start reads one file instead of
//! rebuilding them from every record, grant and notification in the store (a rebuild grows with
//! history: 6.3 s at 100,000 consignments).
//!
//! A snapshot is only used for the exact store state it was taken from. The proof is a token:
//! at shutdown [`super::Store::seal`] writes a fresh random token into the store as the last
//! commit (every later commit is refused), the store is flushed, then the models are written
//! to `<data-dir>/models.snapshot` with the same token (temporary file, fsync, rename, fsync of
//! the directory). [`super::Store::open`] reads the token and deletes it in its first write,
//! whoever opens the store to write: a node, `load`, `replica`. So a snapshot matches only a
//! store nothing has written to since the snapshot's shutdown (`export` and
//! [`super::Store::open_read_only`] write nothing and leave it). After a crash there is no token
//! (it was deleted at the start before); a file left from an earlier run, a copy restored from
//! elsewhere or a torn file (checked by its SHA-256) does not match; in each case the node
//! rebuilds the models from the store, and logs it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use sha2::{Digest, Sha256};

use super::graphs;
use crate::error::Result;

const MAGIC: &[u8] = b"dataspace-node models 2\n";
const FILE: &str = "models.snapshot";

/// Where the store keeps the token: `<urn:dataspace-node:models> dsn:snapshotToken "…"` in the
/// layout graph.
fn token_place() -> (NamedNode, NamedNode, NamedNode) {
    (
        NamedNode::new_unchecked("urn:dataspace-node:models"),
        crate::vocab::dsn("snapshotToken"),
        graphs::layout(),
    )
}

pub(super) fn token_quad(token: &str) -> Quad {
    let (subject, predicate, graph) = token_place();
    Quad::new(
        subject,
        predicate,
        Literal::new_simple_literal(token),
        GraphName::NamedNode(graph),
    )
}

/// Whether `quad` is a snapshot token (of any value).
pub(super) fn is_token(quad: &Quad) -> bool {
    let (subject, predicate, graph) = token_place();
    quad.predicate == predicate
        && matches!(&quad.subject, oxigraph::model::NamedOrBlankNode::NamedNode(s) if *s == subject)
        && matches!(&quad.graph_name, GraphName::NamedNode(g) if *g == graph)
}

/// Reads the token and deletes it: whatever this opener does next, a snapshot taken before can
/// only describe the state as it is now, so only this opener may use it.
pub(super) fn take_token(db: &oxigraph::store::Store) -> Result<Option<String>> {
    let (subject, predicate, graph) = token_place();
    let quads: Vec<Quad> = db
        .quads_for_pattern(
            Some(subject.as_ref().into()),
            Some(predicate.as_ref()),
            None,
            Some(graph.as_ref().into()),
        )
        .collect::<std::result::Result<_, _>>()?;
    if quads.is_empty() {
        return Ok(None);
    }
    let mut tx = db.start_transaction()?;
    for q in &quads {
        tx.remove(q);
    }
    tx.commit()?;
    Ok(match quads.as_slice() {
        [one] => match &one.object {
            Term::Literal(l) => Some(l.value().to_owned()),
            _ => None,
        },
        _ => None,
    })
}

/// Named sections of bytes, each encoded and decoded by the model it holds.
pub struct Snapshot {
    token: String,
    sections: HashMap<String, Vec<u8>>,
}

impl Snapshot {
    pub fn new(token: String) -> Self {
        Self {
            token,
            sections: HashMap::new(),
        }
    }

    pub fn put(&mut self, name: &str, bytes: Vec<u8>) {
        self.sections.insert(name.to_owned(), bytes);
    }

    pub fn section(&self, name: &str) -> Option<Decoder<'_>> {
        self.sections.get(name).map(|b| Decoder { bytes: b })
    }

    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(FILE)
    }

    /// Writes the snapshot so that a crash leaves either the whole file or none.
    pub fn save(&self, data_dir: &Path) -> std::io::Result<()> {
        let mut e = Encoder::default();
        e.bytes(MAGIC);
        e.str(&self.token);
        let mut names: Vec<&String> = self.sections.keys().collect();
        names.sort();
        e.u64(names.len() as u64);
        for name in names {
            e.str(name);
            let bytes = &self.sections[name];
            e.u64(bytes.len() as u64);
            e.bytes(bytes);
        }
        let digest = Sha256::digest(&e.0);
        e.bytes(&digest);
        let temp = data_dir.join(format!("{FILE}.tmp"));
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(&e.0)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, Self::path(data_dir))?;
        std::fs::File::open(data_dir)?.sync_all()
    }

    /// The snapshot in `data_dir` if it was taken from the store as `token` (the token the
    /// store held when it was opened) says; the file is removed either way: after this start
    /// it can never match again.
    pub fn take(data_dir: &Path, token: Option<&str>) -> Option<Self> {
        let path = Self::path(data_dir);
        let bytes = std::fs::read(&path).ok()?;
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::warn!(error = %e, "could not remove the models snapshot");
        }
        let parsed = Self::parse(&bytes);
        match (parsed, token) {
            (Some(s), Some(t)) if s.token == t => Some(s),
            (None, _) => {
                tracing::warn!("models snapshot unreadable; rebuilding from the store");
                None
            }
            _ => {
                tracing::info!("models snapshot is not of this store state; rebuilding");
                None
            }
        }
    }

    fn parse(bytes: &[u8]) -> Option<Self> {
        let (body, digest) = bytes.split_at(bytes.len().checked_sub(32)?);
        if Sha256::digest(body)[..] != *digest {
            return None;
        }
        let mut d = Decoder { bytes: body };
        if d.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let token = d.str()?.to_owned();
        let mut sections = HashMap::new();
        for _ in 0..d.u64()? {
            let name = d.str()?.to_owned();
            let len = usize::try_from(d.u64()?).ok()?;
            sections.insert(name, d.take(len)?.to_vec());
        }
        d.bytes.is_empty().then_some(Self { token, sections })
    }
}

/// Little-endian integers and length-prefixed strings.
#[derive(Default)]
pub struct Encoder(pub Vec<u8>);

impl Encoder {
    pub fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

pub struct Decoder<'a> {
    bytes: &'a [u8],
}

impl<'a> Decoder<'a> {
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u64()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    /// A count of items each at least `min` bytes long, refused when the rest cannot hold them
    /// (so a damaged count cannot make a reader reserve memory it has no data for).
    pub fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(min.max(1))? <= self.bytes.len()).then_some(n)
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_used_only_with_its_token_and_only_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Snapshot::new("t1".into());
        let mut e = Encoder::default();
        e.str("org");
        e.i64(-5);
        s.put("listing", e.0);
        s.save(dir.path()).unwrap();
        let taken = Snapshot::take(dir.path(), Some("t1")).unwrap();
        let mut d = taken.section("listing").unwrap();
        assert_eq!(
            (d.str(), d.i64(), d.is_empty()),
            (Some("org"), Some(-5), true)
        );
        assert!(
            Snapshot::take(dir.path(), Some("t1")).is_none(),
            "taken once"
        );
        s.save(dir.path()).unwrap();
        assert!(
            Snapshot::take(dir.path(), Some("t2")).is_none(),
            "other token"
        );
        s.save(dir.path()).unwrap();
        assert!(
            Snapshot::take(dir.path(), None).is_none(),
            "store without token"
        );
    }

    #[test]
    fn a_damaged_snapshot_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Snapshot::new("t".into());
        s.put("a", vec![1, 2, 3]);
        s.save(dir.path()).unwrap();
        let path = Snapshot::path(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let whole = bytes.clone();
        bytes[MAGIC.len() + 3] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            Snapshot::take(dir.path(), Some("t")).is_none(),
            "flipped bit"
        );
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert!(Snapshot::take(dir.path(), Some("t")).is_none(), "torn");
        std::fs::write(&path, &whole).unwrap();
        assert!(Snapshot::take(dir.path(), Some("t")).is_some());
    }

    #[test]
    fn counts_larger_than_the_data_are_refused() {
        let mut e = Encoder::default();
        e.u64(1 << 40);
        let mut d = Decoder { bytes: &e.0 };
        assert_eq!(d.count(8), None);
    }
}
