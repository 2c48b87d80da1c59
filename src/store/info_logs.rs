//! RocksDB's own diagnostics in the store's directory: at every open it renames the last `LOG`
//! to `LOG.old.<microseconds>` and starts a new one, and it deletes old ones only past 1,000
//! (Oxigraph leaves RocksDB's default). Each opens with a ~120 KB dump of the options, so a node
//! restarted often (or read beside by the checks that open the store read-only) gathered
//! hundreds of them — 485 files, 62 MB on the benchmark's 1,106,000 store — that nothing reads.

use std::path::Path;

/// The rotated logs kept: enough to see the last few opens' warnings.
pub const KEPT: usize = 10;

/// Removes all but the `keep` newest rotated info logs. At open, with RocksDB's lock held;
/// a log that cannot be removed is left (it is only diagnostics) with a warning.
pub fn prune(store_dir: &Path, keep: usize) -> std::io::Result<usize> {
    let mut old: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(store_dir)?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name();
            let stamp = name.to_str()?.strip_prefix("LOG.old.")?.parse().ok()?;
            Some((stamp, entry.path()))
        })
        .collect();
    if old.len() <= keep {
        return Ok(0);
    }
    old.sort_unstable_by_key(|(stamp, _)| std::cmp::Reverse(*stamp));
    let mut removed = 0;
    for (_, path) in &old[keep..] {
        match std::fs::remove_file(path) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "old RocksDB log kept"),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_keeps_only_the_newest_rotated_logs() {
        let dir = tempfile::tempdir().unwrap();
        crate::store::Store::open(dir.path()).unwrap();
        // Older than any the open rotates (their stamps are microseconds since the epoch).
        for n in 1..=15 {
            std::fs::write(dir.path().join(format!("LOG.old.{n}")), "x").unwrap();
        }
        std::fs::write(dir.path().join("LOG.old.notanumber"), "x").unwrap();
        crate::store::Store::open(dir.path()).unwrap();
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with("LOG.old."))
            .collect();
        let stamps: Vec<u64> = left
            .iter()
            .filter_map(|name| name.strip_prefix("LOG.old.")?.parse().ok())
            .collect();
        let rotated = stamps.iter().filter(|&&s| s > 1_000_000).count();
        let mut fake: Vec<u64> = stamps.into_iter().filter(|&s| s <= 15).collect();
        fake.sort_unstable();
        // The second open rotated the first one's log: the newest ten stay, the fakes the
        // oldest of them, and a name that is not RocksDB's is not touched.
        assert!(rotated >= 1, "{left:?}");
        assert_eq!(left.len(), KEPT + 1, "{left:?}");
        let newest_fakes = (16 - (KEPT - rotated) as u64..=15).collect::<Vec<_>>();
        assert_eq!(fake, newest_fakes, "{left:?}");
        assert!(left.contains(&"LOG.old.notanumber".to_string()));
    }
}
