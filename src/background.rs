//! Work that yields the CPU to callers: a backup reading and hashing the whole store, webhook
//! deliveries (a hundred subscriptions make a hundred requests of one Create). It runs on
//! threads of its own at nice 10, so that on a busy machine the inbox and the reads come
//! first and the background work takes what they leave; it still progresses, at about a
//! tenth of a core's share against each busy caller thread.
//!
//! A thread's niceness cannot be lowered again without privileges, hence threads of their
//! own rather than the shared blocking pool's.

use std::future::Future;

/// The niceness of background threads.
const NICE: libc::c_int = 10;

/// Lowers the calling thread's CPU priority to [`NICE`] (threads it starts inherit it).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread, no memory passed.
    unsafe {
        // On Linux, PRIO_PROCESS with a thread id sets that thread's niceness only.
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, NICE);
    }
}

/// Runs `work` on a background thread and waits for it (blocking).
pub fn run<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        let thread = s.spawn(|| {
            lower_priority();
            work()
        });
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Runs `task` on a runtime of its own, one background thread (its blocking work on threads
/// it starts, background too); the handle ends with it.
pub fn spawn<F>(name: &str, task: F) -> std::io::Result<tokio::task::JoinHandle<()>>
where
    F: Future<Output = ()> + Send + 'static,
{
    let (done, ended) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            lower_priority();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime {
                Ok(rt) => rt.block_on(task),
                Err(e) => tracing::error!(error = %e, "a background runtime did not start"),
            }
            let _ = done.send(());
        })?;
    Ok(tokio::spawn(async move {
        let _ = ended.await;
    }))
}
