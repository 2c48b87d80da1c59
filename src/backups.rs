//! Online backups: a consistent copy of the data dir taken while the node serves. The store
//! is a RocksDB checkpoint (Oxigraph's `Store::backup`: its table files hard-linked or copied,
//! writes going on meanwhile), the blobs it names at that moment, the secrets, and
//! `manifest.json` — node version, data-dir format, quad count and content digest, the SHA-256
//! of every file —
//! written last, into `<backup-dir>/.<name>.partial`, renamed `<name>` once complete: a
//! directory without the dot is a whole backup. `restore` checks every hash before it
//! writes a new data dir a node starts on, and the restored store's quads against the count and
//! digest.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::store::Store;

use crate::store::format::FORMAT as DATA_DIR_FORMAT;
const MANIFEST: &str = "manifest.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub name: String,
    pub node_version: String,
    pub data_dir_format: u32,
    pub created: String,
    pub quads: u64,
    /// The store's content independent of its files' layout: the XOR of the SHA-256 of every
    /// quad's N-Quads line (`<s> <p> <o> <g> .`), in hex, over the quads `export` writes (the
    /// derived ones, which a node rebuilds, left out; `quads` counts the same). Quads are a
    /// set, so the XOR is order-free and an export of the same moment gives the same digest.
    pub digest: String,
    /// Path inside the backup → SHA-256 (hex).
    pub files: BTreeMap<String, String>,
    pub bytes: u64,
}

fn io(context: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::Unavailable(format!("{context}: {e}"))
}

/// Takes a backup of the node's data dir `data_dir` into `backup_dir`. Blocking.
pub fn take(store: &Store, data_dir: &Path, backup_dir: &Path) -> Result<Manifest> {
    let created = chrono::Utc::now();
    let name = format!("backup-{}", created.format("%Y%m%dT%H%M%S%.3fZ"));
    let done = backup_dir.join(&name);
    if done.exists() {
        return Err(Error::Conflict(format!(
            "{} exists already",
            done.display()
        )));
    }
    fs::create_dir_all(backup_dir).map_err(io(format!("--backup-dir {}", backup_dir.display())))?;
    let partial = backup_dir.join(format!(".{name}.partial"));
    let created_text = created.to_rfc3339();
    // Reading and hashing the whole store is background work: the writers beside it come first.
    let result = crate::background::run(|| fill(store, data_dir, &partial, &name, &created_text));
    match result {
        Ok(manifest) => {
            fs::rename(&partial, &done).map_err(io(done.display()))?;
            sync_dir(backup_dir);
            Ok(manifest)
        }
        Err(e) => {
            // Nothing half-written left as if complete: only the manifest makes a backup.
            let _ = fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}

fn fill(store: &Store, data_dir: &Path, to: &Path, name: &str, created: &str) -> Result<Manifest> {
    fs::create_dir(to).map_err(io(to.display()))?;
    store.db().backup(to.join("store"))?;
    // The blobs the checkpoint names (blobs are never rewritten: a later write adds others).
    let checkpoint = oxigraph::store::Store::open_read_only(to.join("store"))?;
    let (quads, digest) = content(&checkpoint)?;
    let predicate = crate::vocab::dsn("blobStorageId");
    for quad in checkpoint.quads_for_pattern(None, Some(predicate.as_ref()), None, None) {
        let quad = quad?;
        let oxigraph::model::Term::Literal(l) = &quad.object else {
            continue;
        };
        if let Some(hex) = crate::documents::blobs::hex_of(l.value()) {
            let rel = PathBuf::from("blobs/sha256").join(&hex[..2]).join(hex);
            copy(&data_dir.join(&rel), &to.join(&rel))?;
        }
    }
    drop(checkpoint);
    copy_tree(&data_dir.join("secrets"), &to.join("secrets"))?;
    let mut files = BTreeMap::new();
    let mut bytes = 0;
    for file in walk(to)? {
        let rel = file
            .strip_prefix(to)
            .unwrap_or(&file)
            .to_string_lossy()
            .into_owned();
        let (hash, size) = sha256(&file)?;
        files.insert(rel, hash);
        bytes += size;
    }
    let manifest = Manifest {
        name: name.to_owned(),
        node_version: env!("CARGO_PKG_VERSION").to_owned(),
        data_dir_format: DATA_DIR_FORMAT,
        created: created.to_owned(),
        quads,
        digest,
        files,
        bytes,
    };
    let text = serde_json::to_vec_pretty(&manifest).map_err(Error::internal)?;
    let path = to.join(MANIFEST);
    let mut file = fs::File::create(&path).map_err(io(path.display()))?;
    std::io::Write::write_all(&mut file, &text).map_err(io(path.display()))?;
    file.sync_all().map_err(io(path.display()))?;
    sync_dir(to);
    Ok(manifest)
}

/// The complete backups in `backup_dir`, newest first.
pub fn list(backup_dir: &Path) -> Result<Vec<Manifest>> {
    let Ok(entries) = fs::read_dir(backup_dir) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Manifest> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| fs::read(e.path().join(MANIFEST)).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    out.sort_by(|a, b| b.created.cmp(&a.created));
    Ok(out)
}

/// Removes all but the newest `keep` complete backups (and partial ones left by a crash).
pub fn prune(backup_dir: &Path, keep: usize) -> Result<usize> {
    let mut removed = 0;
    for old in list(backup_dir)?.iter().skip(keep.max(1)) {
        fs::remove_dir_all(backup_dir.join(&old.name)).map_err(io(&old.name))?;
        removed += 1;
    }
    Ok(removed)
}

/// Makes the new data dir `data_dir` from `backup`, every file's hash checked first.
pub fn restore(backup: &Path, data_dir: &Path) -> Result<String> {
    if fs::read_dir(data_dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::bad_request(format!(
            "{} is not empty: restore makes a new data dir",
            data_dir.display()
        )));
    }
    let path = backup.join(MANIFEST);
    let text = fs::read(&path).map_err(|e| {
        Error::bad_request(format!(
            "{} is not a complete backup ({e})",
            backup.display()
        ))
    })?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| Error::bad_request(format!("{}: {e}", path.display())))?;
    if manifest.data_dir_format > DATA_DIR_FORMAT {
        return Err(Error::bad_request(format!(
            "the backup's data dir format is {}, this node's {DATA_DIR_FORMAT}: restore it with a newer node",
            manifest.data_dir_format
        )));
    }
    for (rel, expected) in &manifest.files {
        let file = backup.join(rel);
        match sha256(&file) {
            Ok((hash, _)) if &hash == expected => {}
            Ok(_) => {
                return Err(Error::bad_request(format!(
                    "{} does not match the manifest's SHA-256: the backup is damaged",
                    file.display()
                )))
            }
            Err(_) => {
                return Err(Error::bad_request(format!(
                    "{} is missing from the backup",
                    file.display()
                )))
            }
        }
    }
    if let Err(e) = fill_restored(backup, data_dir, &manifest) {
        // Nothing half-restored left for a node to start on: the data dir was empty.
        if let Ok(entries) = fs::read_dir(data_dir) {
            for entry in entries.flatten() {
                let _ = fs::remove_dir_all(entry.path()).or_else(|_| fs::remove_file(entry.path()));
            }
        }
        return Err(e);
    }
    Ok(format!(
        "restored {} ({} quads, {} files) into {}; start the node there with the same --base-url",
        manifest.name,
        manifest.quads,
        manifest.files.len(),
        data_dir.display()
    ))
}

/// Copies the backup's files into `data_dir` and checks the store's quads against the manifest.
fn fill_restored(backup: &Path, data_dir: &Path, manifest: &Manifest) -> Result<()> {
    for rel in manifest.files.keys() {
        copy(&backup.join(rel), &data_dir.join(rel))?;
    }
    let restored = oxigraph::store::Store::open_read_only(data_dir.join("store"))?;
    let (quads, digest) = content(&restored)?;
    if (quads, digest.as_str()) != (manifest.quads, manifest.digest.as_str()) {
        Err(Error::bad_request(format!(
            "the restored store holds {quads} quads (digest {digest}), the manifest says {} \
             ({}): the backup is damaged",
            manifest.quads, manifest.digest
        )))
    } else {
        Ok(())
    }
}

/// The quad count and content digest of `db` (see [`Manifest::digest`]). Blocking.
pub fn content(db: &oxigraph::store::Store) -> Result<(u64, String)> {
    let mut count = 0u64;
    let mut xor = [0u8; 32];
    let mut line = String::new();
    // What writes in flight had written ahead of their transactions is not counted: a node
    // started on the restored store removes it first, as an export does.
    let noted = crate::store::bulk::Noted::read(db)?;
    for quad in db.iter() {
        let quad = quad?;
        if crate::store::backup::derived(&quad) || noted.covers(&quad) {
            continue;
        }
        line.clear();
        std::fmt::Write::write_fmt(&mut line, format_args!("{quad} .")).map_err(Error::internal)?;
        for (x, b) in xor.iter_mut().zip(Sha256::digest(line.as_bytes())) {
            *x ^= b;
        }
        count += 1;
    }
    Ok((count, hex::encode(xor)))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(io(parent.display()))?;
    }
    fs::copy(from, to).map_err(io(from.display()))?;
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for file in walk(from)? {
        let rel = file.strip_prefix(from).unwrap_or(&file);
        copy(&file, &to.join(rel))?;
    }
    Ok(())
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(out);
    };
    for entry in entries {
        let entry = entry.map_err(io(dir.display()))?;
        let path = entry.path();
        if entry.file_type().map_err(io(path.display()))?.is_dir() {
            out.extend(walk(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

fn sha256(file: &Path) -> std::io::Result<(String, u64)> {
    let mut f = fs::File::open(file)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), size))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::bulk::tests::quad;
    use oxigraph::model::NamedNode;

    /// A checkpoint taken while a Create's description was written ahead of its transaction
    /// holds it, noted: the manifest counts what a node started on it keeps, which is what
    /// the store held without it.
    #[test]
    fn content_leaves_out_what_was_written_ahead_of_a_transaction() {
        let whole = tempfile::tempdir().unwrap();
        let in_flight = tempfile::tempdir().unwrap();
        let committed = [quad("urn:dataspace-node:contribution:a", 1)];
        for dir in [&whole, &in_flight] {
            let store = Store::open(dir.path()).unwrap();
            store.rewrite(&[], &committed).unwrap();
            if dir.path() == in_flight.path() {
                let g = NamedNode::new_unchecked("urn:dataspace-node:contribution:b");
                store
                    .write_ahead(&g, (2..6).map(|n| quad(g.as_str(), n)).collect())
                    .unwrap();
            }
        }
        let read = |dir: &tempfile::TempDir| {
            content(&oxigraph::store::Store::open_read_only(dir.path()).unwrap()).unwrap()
        };
        let (count, digest) = read(&whole);
        assert_eq!(count, 1);
        assert_eq!(read(&in_flight), (count, digest));
    }
}
