//! Keeping the process's resident memory close to what it uses. RocksDB allocates and frees
//! memtables, iterators and blocks from every thread; glibc's allocator keeps freed memory in
//! per-thread arenas (up to 8 per core) and rarely gives it back. On a node loading 100,000
//! consignments that was a quarter of its RSS (`malloc_trim` released 105 of 419 MB).
//! jemalloc was measured too: list pages faster, but 950–1,400 MB resident after the same
//! load (docs/PERFORMANCE.md). Both calls are no-ops off Linux/glibc.

/// Caps the allocator's arenas at the number of cores (at least 2): fewer arenas, less memory
/// kept free in each. Call first thing in `main`, before any thread starts.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        // SAFETY: mallopt only changes a tuning parameter of the allocator.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, cores as libc::c_int);
        }
    }
}

/// Hands the allocator's free pages back to the OS: after a store flush (the memtables just
/// written out were freed) and after a SPARQL query (its joins can hold hundreds of MB).
/// Blocking (it walks the arenas): call it off the async threads.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the OS; no allocation is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}
