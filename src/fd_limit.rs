//! The process's file descriptors, shared by client connections, RocksDB and the blob store.
//!
//! `--max-connections` defaults to 10,000, ten times the soft limit (1,024) many systems start
//! a process with. Past the limit `accept` fails (the accept loop waits and retries) but so
//! does whatever else opens a file at that moment — RocksDB a table file or its log, a blob
//! being written — so connections must not take what those need. At start-up the node raises
//! its soft limit as far as it needs (never past the hard limit, never lower than it was) and
//! allows only as many connections as fit beside [`reserved`].

/// Descriptors besides RocksDB's table files: its write-ahead log, MANIFEST, info log and
/// compaction outputs; the node's own on the log (its watch, directory and current log, for
/// the syncs after each commit: `store::wal`); blobs being written or streamed to a client (a download holds one
/// beside its connection); outgoing document fetches and partner connections; the listener,
/// epoll and standard streams.
const OTHER_FILES: u64 = 256;

/// Descriptors kept from client connections: RocksDB's open table files
/// (`--store-open-files`) and [`OTHER_FILES`].
pub fn reserved(store_open_files: u32) -> u64 {
    u64::from(store_open_files) + OTHER_FILES
}

/// The soft limit to ask for and the connections it allows, from the current soft and hard
/// limits, the connections asked for and the descriptors reserved. At least one connection,
/// so that a node with a tiny limit still answers (with a warning in the log).
pub fn plan(soft: u64, hard: u64, requested: u64, reserved: u64) -> (u64, u64) {
    let wanted = requested.saturating_add(reserved).min(hard);
    let soft = soft.max(wanted);
    let connections = requested.min(soft.saturating_sub(reserved)).max(1);
    (soft, connections)
}

/// Raises the soft `RLIMIT_NOFILE` as [`plan`] says and returns the connections to allow
/// instead of `requested`; logs the figures.
pub fn raise_and_budget(requested: usize, store_open_files: u32) -> usize {
    let requested = requested as u64;
    let reserved = reserved(store_open_files);
    let Some((soft, hard)) = limits() else {
        tracing::warn!("could not read the file descriptor limit; connections not capped");
        return requested as usize;
    };
    let (wanted, _) = plan(soft, hard, requested, reserved);
    let now = if wanted > soft && set_soft(wanted, hard).is_err() {
        tracing::warn!(
            soft,
            wanted,
            hard,
            "could not raise the file descriptor limit"
        );
        soft
    } else {
        wanted
    };
    // With the limit as it now is: the hard limit no longer matters.
    let (_, connections) = plan(now, now, requested, reserved);
    tracing::info!(
        soft_before = soft,
        soft = now,
        hard,
        reserved,
        requested,
        max_connections = connections,
        "file descriptors"
    );
    if connections < requested {
        tracing::warn!(
            requested,
            max_connections = connections,
            "fewer connections than --max-connections: the file descriptor limit is too low \
             (raise the hard limit, e.g. LimitNOFILE= or ulimit -Hn)"
        );
    }
    usize::try_from(connections).unwrap_or(usize::MAX)
}

#[cfg(unix)]
// rlim_t is u64 on Linux and macOS, but not on every unix (i64 on FreeBSD).
#[allow(clippy::useless_conversion)]
fn limits() -> Option<(u64, u64)> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return None;
    }
    Some((l.rlim_cur.try_into().ok()?, l.rlim_max.try_into().ok()?))
}

#[cfg(unix)]
fn set_soft(soft: u64, hard: u64) -> std::io::Result<()> {
    let convert = |v: u64| libc::rlim_t::try_from(v).map_err(std::io::Error::other);
    let l = libc::rlimit {
        rlim_cur: convert(soft)?,
        rlim_max: convert(hard)?,
    };
    // SAFETY: setrlimit reads the struct it is given; a refusal leaves the limits as they were.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(unix))]
fn limits() -> Option<(u64, u64)> {
    None
}

#[cfg(not(unix))]
fn set_soft(_: u64, _: u64) -> std::io::Result<()> {
    Err(std::io::Error::other("no RLIMIT_NOFILE here"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_as_far_as_needed_and_no_further() {
        // 1,024 soft, 524,288 hard (systemd): raised to fit every connection asked for.
        assert_eq!(plan(1024, 524_288, 10_000, 768), (10_768, 10_000));
        // Already higher than needed: kept, never lowered.
        assert_eq!(plan(1_048_576, 1_048_576, 10_000, 768), (1_048_576, 10_000));
        // An unlimited hard limit.
        assert_eq!(plan(256, u64::MAX, 100, 768), (868, 100));
    }

    #[test]
    fn connections_get_what_the_hard_limit_leaves_beside_the_reserve() {
        // Soft and hard 1,024: the reserve comes first.
        assert_eq!(plan(1024, 1024, 10_000, 768), (1024, 256));
        // Soft 1,024, hard 4,096: raised to the hard limit, which still caps connections.
        assert_eq!(plan(1024, 4096, 10_000, 768), (4096, 3328));
        // A limit below the reserve still allows one connection.
        assert_eq!(plan(512, 512, 10_000, 768), (512, 1));
        // Fewer connections asked for than fit: as asked.
        assert_eq!(plan(1024, 1024, 20, 768), (1024, 20));
        // Nothing overflows.
        assert_eq!(plan(0, u64::MAX, u64::MAX, 768), (u64::MAX, u64::MAX - 768));
    }
}
