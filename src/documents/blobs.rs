//! The content-addressed blob store: `<data-dir>/blobs/sha256/<2 hex>/<64 hex>`.
//!
//! A blob is written to `blobs/tmp/`, fsynced, renamed to its hash's name and the directory
//! fsynced — all before the RDF record that names it is committed. A crash can therefore leave
//! a blob no record names (harmless, content-addressed) or a temporary file (removed at the
//! next start), never a record without its blob. Blobs are never rewritten: the same bytes
//! land on the same name, and a name that exists already holds them.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The store's name inside `blobStorageId` (`blob:<store>:<hex sha256>`).
pub const STORE: &str = "local";

pub struct Blobs {
    root: PathBuf,
}

/// A stored blob: its SHA-256 and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub sha256: [u8; 32],
    pub size: u64,
}

impl Blob {
    pub fn hex(&self) -> String {
        hex::encode(self.sha256)
    }

    pub fn storage_id(&self) -> String {
        storage_id_of(&self.hex())
    }

    /// Subresource Integrity form.
    pub fn integrity(&self) -> String {
        use base64::Engine;
        format!(
            "sha256-{}",
            base64::engine::general_purpose::STANDARD.encode(self.sha256)
        )
    }
}

/// The `blobStorageId` of the blob named `hex` in this store.
pub fn storage_id_of(hex: &str) -> String {
    format!("blob:{STORE}:{hex}")
}

/// The 64-hex-digit name inside a `blobStorageId`, when it is one of this store's.
pub fn hex_of(storage_id: &str) -> Option<&str> {
    storage_id
        .strip_prefix("blob:")?
        .strip_prefix(STORE)?
        .strip_prefix(':')
        .filter(|h| is_hex(h))
}

pub fn is_hex(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Blobs {
    /// Opens (creating) the store and removes temporary files a crash left behind.
    pub fn open(root: &Path) -> io::Result<Self> {
        let tmp = root.join("tmp");
        fs::create_dir_all(&tmp)?;
        fs::create_dir_all(root.join("sha256"))?;
        for entry in fs::read_dir(&tmp)? {
            let _ = fs::remove_file(entry?.path());
        }
        Ok(Self {
            root: root.to_owned(),
        })
    }

    /// A writer for a new blob; nothing is visible until [`Writer::finish`].
    pub fn writer(&self) -> io::Result<Writer<'_>> {
        let path = self
            .root
            .join("tmp")
            .join(uuid::Uuid::new_v4().simple().to_string());
        Ok(Writer {
            blobs: self,
            file: Some(File::create(&path)?),
            path,
            hasher: Sha256::new(),
            size: 0,
        })
    }

    pub fn put(&self, bytes: &[u8]) -> io::Result<Blob> {
        let mut w = self.writer()?;
        w.write_all(bytes)?;
        w.finish()
    }

    /// The file of blob `hex` (64 lower-case hex digits), when the store has it.
    pub fn path(&self, hex: &str) -> Option<PathBuf> {
        if !is_hex(hex) {
            return None;
        }
        let path = self.final_path(hex);
        path.is_file().then_some(path)
    }

    fn final_path(&self, hex: &str) -> PathBuf {
        self.root.join("sha256").join(&hex[..2]).join(hex)
    }
}

pub struct Writer<'a> {
    blobs: &'a Blobs,
    file: Option<File>,
    path: PathBuf,
    hasher: Sha256,
    size: u64,
}

impl Write for Writer<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("finished"))?;
        let n = file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), File::flush)
    }
}

impl Writer<'_> {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Makes the blob durable under its hash's name.
    pub fn finish(mut self) -> io::Result<Blob> {
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("finished"))?;
        file.sync_all()?;
        drop(file);
        let blob = Blob {
            sha256: std::mem::take(&mut self.hasher).finalize().into(),
            size: self.size,
        };
        let target = self.blobs.final_path(&blob.hex());
        let dir = target.parent().expect("blob paths have a parent");
        // Bytes the store already holds (same name, same bytes) are renamed over the file as
        // new ones are, not skipped: the time a write takes, which the inbox's caller sees,
        // must not tell whether any organisation stored the same file before.
        fs::create_dir_all(dir)?;
        fs::rename(&self.path, &target)?;
        File::open(dir)?.sync_all()?;
        Ok(blob)
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        // An abandoned write (size cap, failed fetch) leaves nothing behind.
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_addressed_idempotent_and_abandoned_writes_vanish() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(dir.path()).unwrap();
        let a = blobs.put(b"hello").unwrap();
        assert_eq!(
            a.hex(),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(a.size, 5);
        assert_eq!(
            a.integrity(),
            "sha256-LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
        );
        assert_eq!(hex_of(&a.storage_id()), Some(a.hex().as_str()));
        assert_eq!(blobs.put(b"hello").unwrap(), a);
        assert_eq!(fs::read(blobs.path(&a.hex()).unwrap()).unwrap(), b"hello");

        let mut w = blobs.writer().unwrap();
        w.write_all(b"partial").unwrap();
        drop(w);
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        assert!(blobs.path("../../etc/passwd").is_none());
        assert!(blobs.path(&"0".repeat(64)).is_none());
    }

    #[test]
    fn a_crash_before_the_rename_leaves_nothing_visible() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(dir.path()).unwrap();
        // What a crash between write and rename leaves: a temporary file only.
        let mut w = blobs.writer().unwrap();
        w.write_all(b"half").unwrap();
        std::mem::forget(w);
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 1);
        let reopened = Blobs::open(dir.path()).unwrap();
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        let hex = hex::encode(Sha256::digest(b"half"));
        assert!(reopened.path(&hex).is_none());
    }
}
