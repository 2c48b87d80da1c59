//! The `jti`s of node tokens this node has accepted, kept until they expire — on disk as well
//! as in memory, so that a token seen before a restart (a crash included) is still a replay
//! after it. One line per token, `<exp> <issuer> <jti>`, appended with one `write` (a killed
//! process loses nothing written; only a power loss may lose the last lines, and the token
//! lifetime bounds what that could let through). The file is rewritten with the live entries
//! at open and whenever expired lines outnumber them.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Lines kept before a rewrite is worth it.
const REWRITE_AFTER: usize = 10_000;

pub struct Seen {
    /// `<issuer> <jti>` → `exp`.
    live: HashMap<String, i64>,
    file: Option<(PathBuf, File)>,
    /// Lines in the file (live and expired).
    lines: usize,
    /// When expired entries were last dropped: once a second, not at every token (a busy
    /// connector's minute of tokens made each insert a scan of them all).
    purged: i64,
}

impl Seen {
    /// Kept in memory only (tokens issued by tests and tools that verify nothing).
    pub fn in_memory() -> Self {
        Self {
            live: HashMap::new(),
            file: None,
            lines: 0,
            purged: 0,
        }
    }

    /// The seen tokens of `path` still live at `now` (with `leeway`), the file rewritten
    /// with them alone.
    pub fn open(path: &Path, now: i64, leeway: i64) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e.into()),
        };
        let mut live = HashMap::new();
        for line in text.lines() {
            // A torn last line (a crash mid-write) has no valid expiry or no key: skipped.
            let Some((exp, key)) = line.split_once(' ') else {
                continue;
            };
            if let Ok(exp) = exp.parse::<i64>() {
                if exp.saturating_add(leeway) >= now && key.contains(' ') {
                    live.insert(key.to_owned(), exp);
                }
            }
        }
        let mut seen = Self {
            live,
            purged: now,
            file: None,
            lines: 0,
        };
        seen.rewrite(path)?;
        Ok(seen)
    }

    /// Records `key` (issuer and jti) valid until `exp`; false when it was seen already.
    pub fn insert(&mut self, key: String, exp: i64, now: i64, leeway: i64) -> Result<bool> {
        if now != self.purged {
            self.live.retain(|_, e| e.saturating_add(leeway) >= now);
            self.purged = now;
        }
        if self.live.contains_key(&key) {
            return Ok(false);
        }
        if let Some((path, file)) = &mut self.file {
            // Before the token is accepted: one that is not on disk must not have been used.
            file.write_all(format!("{exp} {key}\n").as_bytes())
                .map_err(Error::internal)?;
            self.lines += 1;
            if self.lines > REWRITE_AFTER && self.lines > 2 * self.live.len() {
                let path = path.clone();
                self.live.insert(key, exp);
                self.rewrite(&path)?;
                return Ok(true);
            }
        }
        self.live.insert(key, exp);
        Ok(true)
    }

    /// The file replaced (temp + rename) by the live entries, then opened for appending.
    fn rewrite(&mut self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("tmp");
        let mut text = String::new();
        for (key, exp) in &self.live {
            text.push_str(&format!("{exp} {key}\n"));
        }
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)?;
        let file = OpenOptions::new().append(true).open(path)?;
        self.lines = self.live.len();
        self.file = Some((path.to_owned(), file));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seen_token_stays_seen_across_an_open_until_it_expires() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seen-node-tokens");
        let mut seen = Seen::open(&path, 1000, 30).unwrap();
        assert!(seen.insert("did:web:b j1".into(), 1060, 1000, 30).unwrap());
        assert!(seen.insert("did:web:b j2".into(), 1010, 1000, 30).unwrap());
        assert!(!seen.insert("did:web:b j1".into(), 1060, 1001, 30).unwrap());
        drop(seen);
        // A torn line is ignored.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"99")
            .unwrap();
        let mut seen = Seen::open(&path, 1050, 30).unwrap();
        assert!(!seen.insert("did:web:b j1".into(), 1060, 1050, 30).unwrap());
        // j2 expired (1010 + 30 < 1050): dropped from the file at open.
        assert_eq!(seen.live.len(), 1);
        assert!(seen.insert("did:web:b j2".into(), 1100, 1050, 30).unwrap());
    }

    #[test]
    fn the_file_is_rewritten_when_expired_lines_outnumber_live_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seen");
        let mut seen = Seen::open(&path, 0, 0).unwrap();
        for i in 0..(REWRITE_AFTER as i64 + 5) {
            assert!(seen.insert(format!("i {i}"), i, i, 0).unwrap());
        }
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert!(lines < 10, "{lines} lines");
    }
}
