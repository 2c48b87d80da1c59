//! The threads a query is parsed and evaluated on: each with [`STACK`] bytes of stack (see
//! [`super::depth`]), kept for the next query once one is done.
//!
//! Not tokio's blocking pool: its threads have the runtime's stack size, which neither the
//! node nor its tests choose per task. Not a new thread per query either, which maps and
//! unmaps 256 MB and starts an empty allocator heap every time — though the benchmark's
//! analysts' aggregate did not tell the three apart on this machine (`/sparql` p50: a thread
//! per query 9.7–10.8 ms in three runs, these threads 9.0–10.2 ms in four, the blocking pool
//! 9.2–9.5 ms in two, alternating). The number of threads follows the queries admitted at
//! once (each holds its permit while it runs); a thread idle for [`IDLE`] ends, giving back
//! the stack a deep query touched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Duration;

use super::depth::STACK;
use crate::error::{Error, Result};

/// How long a thread waits for its next query before it ends.
const IDLE: Duration = Duration::from_secs(30);

/// A query's work; it calls its argument (the thread offering itself for the next one)
/// before it hands its answer over, so that the caller's next query finds the thread free.
type Job = Box<dyn FnOnce(&dyn Fn()) + Send>;

/// The threads waiting for a query: each by its number and the sender of its queue.
static IDLE_THREADS: Mutex<Vec<(u64, Sender<Job>)>> = Mutex::new(Vec::new());
static NUMBERS: AtomicU64 = AtomicU64::new(0);

/// Runs `f` (a query's parse, rewrite, evaluation, serialisation) on one of the threads.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut job: Job = Box::new(move |done: &dyn Fn()| {
        let answer = f();
        done();
        let _ = tx.send(answer);
    });
    loop {
        let idle = IDLE_THREADS.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some((_, thread)) = idle else {
            spawn(job)?;
            break;
        };
        // A thread that ended after taking itself off the list refuses the job: the next.
        match thread.send(job) {
            Ok(()) => break,
            Err(refused) => job = refused.0,
        }
    }
    rx.await.map_err(Error::internal)
}

fn spawn(first: Job) -> Result<()> {
    let (tx, rx) = channel::<Job>();
    let number = NUMBERS.fetch_add(1, Ordering::Relaxed);
    std::thread::Builder::new()
        .name("sparql".into())
        .stack_size(STACK)
        .spawn(move || {
            let offer = || {
                IDLE_THREADS
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((number, tx.clone()));
            };
            first(&offer);
            loop {
                match rx.recv_timeout(IDLE) {
                    Ok(job) => job(&offer),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                        // Off the list. A job sent after a caller took this thread off it
                        // is in the queue: run it; one sent later fails to send, and its
                        // caller takes another thread.
                        IDLE_THREADS
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .retain(|(n, _)| *n != number);
                        match rx.try_recv() {
                            Ok(job) => job(&offer),
                            Err(_) => return,
                        }
                    }
                }
            }
        })
        .map_err(Error::internal)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_thread_is_kept_for_the_next_query_and_more_are_made_for_queries_at_once() {
        let first = run(|| std::thread::current().id()).await.unwrap();
        let second = run(|| std::thread::current().id()).await.unwrap();
        assert_eq!(first, second);
        // Two at once, each waiting for the other to start: two threads.
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (a, b) = (barrier.clone(), barrier);
        let (x, y) = tokio::join!(
            run(move || {
                a.wait();
                std::thread::current().id()
            }),
            run(move || {
                b.wait();
                std::thread::current().id()
            })
        );
        assert_ne!(x.unwrap(), y.unwrap());
        // A deep recursion fits the stack these threads have.
        fn down(n: u32) -> u32 {
            let pad = std::hint::black_box([0u8; 1024]);
            if n == 0 {
                u32::from(pad[0])
            } else {
                down(n - 1) + u32::from(pad[1])
            }
        }
        assert_eq!(run(|| down(100_000)).await.unwrap(), 0);
    }
}
