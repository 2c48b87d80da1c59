//! Commits that survive a power loss once they are answered.
//!
//! RocksDB, as Oxigraph opens it, appends every commit to its write-ahead log before the
//! commit returns — so a killed process loses nothing — but does not sync the log a commit
//! goes to (only a log it closed, at the flush after a switch): what the operating system had
//! not written back when the power went was lost, commits the node had already acknowledged
//! among them. Oxigraph exposes neither RocksDB's `sync` write option nor
//! the log, so the node syncs the log file itself (`fdatasync` through a descriptor of its own,
//! which writes back the file's pages whoever wrote them) after every commit, before the
//! answer: 0.35–1.5 ms per Create's records on this project's test machine, +0.43 ms on a
//! Create's median (docs/PERFORMANCE.md, "Commits that survive a power loss").
//!
//! Which file: RocksDB names each log `<number>.log` in the store's directory and starts a new
//! one at every memtable switch — a flush, the node's or its own, or an ingest that overlaps
//! the memtables — created afresh or renamed from an old one it recycles. A watch on the
//! directory (inotify), set before the first look at it, reports each such file when it is
//! created or renamed, so before RocksDB writes to it. After a commit returns, the file its
//! write went to is therefore the one synced last time or one reported since: every file
//! reported since is synced too (a switch is rare; two within one commit rarer, and still
//! covered), and so is the directory when a new log appeared in it (its name is an entry of
//! the directory, which syncing the file does not write). A log RocksDB closed and dropped had
//! its memtables written to table files, which RocksDB syncs itself; so does the flush that
//! follows a switch for the log it closed.
//!
//! Should the watch lose reports (its queue overflowed) or inotify refuse one (its per-user
//! limits), the directory is listed at each sync instead — until a listing succeeds, or for
//! good without a watch; should the log or the listing not open (out of file descriptors),
//! the whole file system is synced (`syncfs`) until they do: slower, never less durable. Linux only (inotify): elsewhere the
//! store does not open it and commits are not synced.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The store's write-ahead log, synced after every commit.
pub struct Wal {
    dir: PathBuf,
    /// The directory itself, synced when a new log appears in it.
    dir_file: File,
    /// `None` when inotify refused a watch (its per-user limits): the directory is then
    /// listed at every sync instead.
    #[cfg(target_os = "linux")]
    watch: Option<watch::Watch>,
    state: Mutex<State>,
    /// Syncs made: of a log file, of the directory, of the whole file system (tests).
    #[cfg(test)]
    pub(crate) counts: [std::sync::atomic::AtomicU64; 3],
}

#[derive(Default)]
struct State {
    /// The newest log reported, opened.
    current: Option<(u64, File)>,
    /// The newest log reported, when opening it failed (out of descriptors): tried again at
    /// each sync, the whole file system synced meanwhile.
    unopened: Option<u64>,
    /// The watch lost reports (its queue overflowed, or a read failed midway): the directory
    /// is listed at each sync until a listing succeeds, the whole file system synced meanwhile.
    rescan: bool,
}

impl State {
    fn newest(&self) -> Option<u64> {
        self.unopened.or(self.current.as_ref().map(|(n, _)| *n))
    }
}

impl Wal {
    /// Watches `dir` (the store's directory, opened by RocksDB) and opens its newest log.
    pub fn open(dir: &Path) -> io::Result<Self> {
        let wal = Self {
            dir: dir.to_owned(),
            dir_file: File::open(dir)?,
            #[cfg(target_os = "linux")]
            watch: watch::Watch::new(dir)
                .inspect_err(|e| {
                    tracing::warn!(error = %e, "no inotify watch of the store's directory (raise fs.inotify.max_user_instances or max_user_watches): its write-ahead logs are looked for at every commit instead");
                })
                .ok(),
            state: Mutex::new(State::default()),
            #[cfg(test)]
            counts: Default::default(),
        };
        // After the watch: a log RocksDB starts meanwhile is both reported and possibly listed.
        // RocksDB's open starts a log of a number above every earlier one (it recycles none of
        // an earlier run's), so the newest is the one it writes.
        if let Some(n) = logs(dir)?.into_iter().max() {
            wal.take_on(&mut wal.lock(), n);
        }
        // RocksDB's open may have started the log, and a new data dir the directory itself,
        // under names not yet durable.
        wal.dir_file.sync_all()?;
        if let Some(parent) = dir.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(wal)
    }

    /// Syncs the log the last commit went to. Blocking; called by the committer, so before
    /// the commit is answered. An error leaves the commit's durability unknown: the caller
    /// must not go on as if it were durable (the store stops the process).
    pub fn sync(&self) -> io::Result<()> {
        let mut state = self.lock();
        let mut started = match self.reported() {
            Some(numbers) => numbers,
            None => {
                state.rescan = true;
                Vec::new()
            }
        };
        if state.rescan {
            match logs(&self.dir) {
                Ok(all) => {
                    started.extend(all);
                    started.sort_unstable();
                    started.dedup();
                    state.rescan = self.reported_always_listed();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not list the store's directory for its write-ahead log; syncing the file system instead");
                    return self.sync_everything();
                }
            }
        }
        let mut switched = false;
        for number in started {
            if state.newest().is_some_and(|n| number <= n) {
                continue;
            }
            // The log written until now may hold the end of this commit: synced before it
            // is let go.
            if let Some((_, file)) = &state.current {
                self.sync_file(file)?;
            } else if state.unopened.is_some() {
                self.sync_everything()?;
            }
            self.take_on(&mut state, number);
            switched = true;
        }
        if let Some(number) = state.unopened {
            self.take_on(&mut state, number);
        }
        if state.unopened.is_some() {
            return self.sync_everything();
        }
        if let Some((_, file)) = &state.current {
            self.sync_file(file)?;
        }
        if switched {
            // A new log's name — a new file, or an old log renamed — is an entry of the
            // directory, which syncing the file does not write: without this, after a power
            // loss the log could be back under its old name and taken for an obsolete one.
            self.count(1);
            self.dir_file.sync_all()?;
        }
        Ok(())
    }

    /// Makes log `number` the one synced: opened, or noted as unopened when opening it failed
    /// for want of a descriptor (any failure but its absence — a log RocksDB already dropped,
    /// whose contents are in synced table files).
    fn take_on(&self, state: &mut State, number: u64) {
        match File::open(log_path(&self.dir, number)) {
            Ok(file) => {
                state.current = Some((number, file));
                state.unopened = None;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                state.current = None;
                state.unopened = None;
            }
            Err(e) => {
                tracing::warn!(error = %e, log = number, "could not open the store's write-ahead log to sync it; syncing the file system instead");
                state.current = None;
                state.unopened = Some(number);
            }
        }
    }

    fn sync_file(&self, file: &File) -> io::Result<()> {
        self.count(0);
        file.sync_data()
    }

    /// Every file and directory of the store's file system (`syncfs`): the log, whichever it
    /// is, and its name among them. Costly, and only when the log could not be opened.
    fn sync_everything(&self) -> io::Result<()> {
        self.count(2);
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a plain system call on a descriptor this value owns.
            if unsafe { libc::syncfs(self.dir_file.as_raw_fd()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    #[cfg(test)]
    fn count(&self, which: usize) {
        self.counts[which].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    #[cfg(not(test))]
    fn count(&self, _: usize) {}

    /// The log synced last (tests).
    #[cfg(test)]
    pub fn current(&self) -> Option<PathBuf> {
        self.lock()
            .current
            .as_ref()
            .map(|(n, _)| log_path(&self.dir, *n))
    }

    /// Numbers of the logs the watch reported started since the last call, in order; `None`
    /// when it lost some (or there is no watch): the directory must be listed.
    #[cfg(target_os = "linux")]
    fn reported(&self) -> Option<Vec<u64>> {
        let names = match self.watch.as_ref()?.created() {
            Ok(Some(names)) => names,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the watch of the store's directory; listing it instead");
                return None;
            }
        };
        let mut numbers: Vec<u64> = names.iter().filter_map(|n| log_number(n)).collect();
        numbers.sort_unstable();
        Some(numbers)
    }

    #[cfg(not(target_os = "linux"))]
    fn reported(&self) -> Option<Vec<u64>> {
        Some(Vec::new())
    }

    /// Whether the directory is listed at every sync (no watch).
    fn reported_always_listed(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.watch.is_none();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// The number of a RocksDB write-ahead log's file name (`000123.log`); `None` for any other.
fn log_number(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The logs in `dir`.
fn logs(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if let Some(n) = entry?.file_name().to_str().and_then(log_number) {
            out.push(n);
        }
    }
    Ok(out)
}

#[cfg(target_os = "linux")]
mod watch {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::Path;

    /// An inotify watch of the files created in (or renamed into) one directory.
    pub struct Watch(OwnedFd);

    impl Watch {
        pub fn new(dir: &Path) -> io::Result<Self> {
            use std::os::unix::ffi::OsStrExt;
            // SAFETY: plain system calls; the descriptor is owned from here on.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let path = CString::new(dir.as_os_str().as_bytes())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let mask = libc::IN_CREATE | libc::IN_MOVED_TO;
            // SAFETY: `path` is a valid C string for the call's duration.
            if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), mask) } < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Self(fd))
        }

        /// The names reported since the last call, in order; `None` when the kernel's queue
        /// overflowed and some were lost.
        pub fn created(&self) -> io::Result<Option<Vec<String>>> {
            let mut names = Vec::new();
            let mut overflowed = false;
            // Aligned for `inotify_event`; room for many events of short names per read.
            let mut buf = [0u64; 512];
            loop {
                // SAFETY: reads at most the buffer's size into it.
                let n = unsafe {
                    libc::read(
                        self.0.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        std::mem::size_of_val(&buf),
                    )
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::WouldBlock {
                        break;
                    }
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(e);
                }
                let bytes = n as usize;
                // SAFETY: the kernel wrote `bytes` bytes of whole events into the buffer.
                let data = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), bytes) };
                overflowed |= parse(data, &mut names);
            }
            Ok((!overflowed).then_some(names))
        }
    }

    /// Appends the names of the events in `data`; returns whether one was an overflow.
    fn parse(data: &[u8], names: &mut Vec<String>) -> bool {
        let header = std::mem::size_of::<libc::inotify_event>();
        let mut overflowed = false;
        let mut at = 0;
        while at + header <= data.len() {
            // SAFETY: a whole header lies at `at`; read unaligned to make no assumption.
            let event: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(data[at..].as_ptr().cast()) };
            let len = event.len as usize;
            let name = &data[at + header..(at + header + len).min(data.len())];
            let name = name.split(|b| *b == 0).next().unwrap_or_default();
            if event.mask & libc::IN_Q_OVERFLOW != 0 {
                overflowed = true;
            } else if let Ok(name) = std::str::from_utf8(name) {
                names.push(name.to_owned());
            }
            at += header + len;
        }
        overflowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Committed, ReadModel, Store};
    use oxigraph::model::{GraphName, Literal, NamedNode, Quad};
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, OnceLock, Weak};

    fn unique_quad(i: usize) -> (Quad, String) {
        let text = format!("a literal no other commit writes, number {i:04}");
        let quad = Quad::new(
            NamedNode::new_unchecked("urn:test:s"),
            NamedNode::new_unchecked("urn:test:p"),
            Literal::new_simple_literal(&text),
            GraphName::DefaultGraph,
        );
        (quad, text)
    }

    fn holds(path: &Path, text: &str) -> bool {
        let bytes = std::fs::read(path).unwrap();
        bytes.windows(text.len()).any(|w| w == text.as_bytes())
    }

    fn count(wal: &Wal, which: usize) -> u64 {
        wal.counts[which].load(Ordering::Relaxed)
    }

    /// A read model that, as each commit's event reaches it, checks that the commit (the text
    /// its event names) is in the log synced, and that a log was synced for it.
    #[derive(Default)]
    struct AfterTheSync {
        store: OnceLock<Weak<Store>>,
        syncs_before: std::sync::atomic::AtomicU64,
        seen: Mutex<Vec<(String, bool, bool)>>,
    }

    impl ReadModel for AfterTheSync {
        fn apply(&self, event: &Committed) {
            let Committed::ConsignmentCreated { aig: text, .. } = event else {
                return;
            };
            let store = self.store.get().unwrap().upgrade().unwrap();
            let wal = store.wal.as_ref().unwrap();
            let in_synced = store.wal_in_use().is_some_and(|p| holds(&p, text));
            let synced = count(wal, 0) > self.syncs_before.load(Ordering::Relaxed);
            self.seen
                .lock()
                .unwrap()
                .push((text.clone(), in_synced, synced));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn each_commit_is_in_the_log_synced_before_the_models_see_it_across_switches() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let model = Arc::new(AfterTheSync::default());
        model.store.set(Arc::downgrade(&store)).unwrap();
        store.register(&model);
        let wal = store.wal.as_ref().unwrap();
        let mut logs = std::collections::BTreeSet::new();
        // Each flush switches the log; RocksDB starts the new one as an old one renamed once
        // it has some (from the first switch on).
        for i in 0..24 {
            let (quad, text) = unique_quad(i);
            model.syncs_before.store(count(wal, 0), Ordering::Relaxed);
            store
                .commit(|tx, events| {
                    tx.insert(&quad);
                    events.push(Committed::ConsignmentCreated {
                        publisher: "urn:test:org".into(),
                        created_ms: 0,
                        aig: text.clone(),
                    });
                    Ok(())
                })
                .unwrap();
            let synced = store.wal_in_use().expect("a log is synced");
            assert!(holds(&synced, &text), "commit {i} is not in {synced:?}");
            logs.insert(synced);
            if i % 2 == 1 {
                store.flush().unwrap();
            }
        }
        assert!(logs.len() > 10, "the log never switched: {logs:?}");
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.len(), 24);
        for (text, in_synced, synced) in seen.iter() {
            assert!(
                *in_synced && *synced,
                "{text}: in the log synced {in_synced}, a sync {synced}"
            );
        }
        // Every new log's name made durable too: one directory sync per switch.
        assert!(count(wal, 1) >= 11, "{} directory syncs", count(wal, 1));
        // The store's last commit, sealing it, is synced like any other.
        let before = count(wal, 0);
        store.seal().unwrap();
        assert!(count(wal, 0) > before);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_switch_between_a_commit_and_its_sync_syncs_the_log_it_left_too() {
        let dir = tempfile::tempdir().unwrap();
        let db = oxigraph::store::Store::open(dir.path()).unwrap();
        let wal = Wal::open(dir.path()).unwrap();
        let (quad, text) = unique_quad(1);
        db.insert(&quad).unwrap();
        let first = wal.current().unwrap();
        assert!(holds(&first, &text));
        // The node's flusher runs beside the writer: the log switches before the sync.
        db.flush().unwrap();
        let (files, dirs) = (count(&wal, 0), count(&wal, 1));
        wal.sync().unwrap();
        assert_ne!(wal.current().unwrap(), first, "the switch was not followed");
        assert_eq!(count(&wal, 0) - files, 2, "the log left and the new one");
        assert_eq!(count(&wal, 1) - dirs, 1, "the directory, for the new name");
        assert_eq!(count(&wal, 2), 0, "no file system sync");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn without_its_watch_the_logs_are_found_by_listing_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let db = oxigraph::store::Store::open(dir.path()).unwrap();
        let mut wal = Wal::open(dir.path()).unwrap();
        // As when inotify refused a watch, or (for one sync) its queue overflowed.
        wal.watch = None;
        for i in 0..6 {
            let (quad, text) = unique_quad(i);
            db.insert(&quad).unwrap();
            wal.sync().unwrap();
            let synced = wal.current().unwrap();
            assert!(holds(&synced, &text), "commit {i} is not in {synced:?}");
            db.flush().unwrap();
        }
        assert_eq!(count(&wal, 2), 0, "no file system sync");
    }

    #[test]
    fn names_of_logs_only() {
        assert_eq!(log_number("000123.log"), Some(123));
        assert_eq!(log_number("12.log"), Some(12));
        for other in [
            "LOG",
            "LOG.old.1795648157710278",
            "000123.sst",
            ".log",
            "a1.log",
        ] {
            assert_eq!(log_number(other), None, "{other}");
        }
    }
}
