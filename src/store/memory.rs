//! Keeping the process's resident memory close to what it uses. RocksDB allocates and frees
//! memtables, iterators and blocks from every thread; glibc's allocator keeps freed memory in
//! per-thread arenas (up to 8 per core) and rarely gives it back. On a node loading 100,000
//! consignments that was a quarter of its RSS (`malloc_trim` released 105 of 419 MB).
//! jemalloc was measured too: list pages faster, but 950–1,400 MB resident after the same
//! load (docs/PERFORMANCE.md). The calls into glibc are no-ops off Linux/glibc.
//!
//! The Rust side's small allocations come from mimalloc instead (decoded terms, JSON, HTTP
//! buffers: a fifth of a view's CPU was glibc's `malloc`/`free`); its large ones (a SPARQL
//! query's join tables) stay with glibc, which grows them in place with `mremap` and gives
//! them back with `malloc_trim` — all of them through mimalloc made the SPARQL aggregate
//! 17–36% slower. RocksDB's C++ keeps glibc's allocator, whose memtable blocks `malloc_trim`
//! gives back — the reason jemalloc for both was not kept. Measured in docs/PERFORMANCE.md,
//! "Allocator".

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use mimalloc::MiMalloc;

/// Every Rust allocation of the process (binaries, tests and the benchmark link this crate).
#[global_allocator]
static ALLOCATOR: Allocator = Allocator;

/// `mi_option_purge_delay` in mimalloc 2's `mimalloc.h` (the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// From this size on, an allocation is glibc's.
const LARGE: usize = 256 * 1024;

/// Bytes of the blocks mimalloc holds for Rust: glibc's counters (`mallinfo2`) do not see
/// them, and the SPARQL endpoint's memory limit needs both ([`heap_in_use`]).
static SMALL_IN_USE: AtomicUsize = AtomicUsize::new(0);

/// mimalloc below [`LARGE`] bytes, the system allocator from there on.
///
/// Who frees a block is decided by its address, not its size: Oxigraph hands RocksDB's error
/// messages — allocated by C's `malloc` — to Rust as `CString`s, which Rust then frees; such a
/// block goes back to glibc (mimalloc given it crashed the process).
pub struct Allocator;

fn small(size: usize) -> bool {
    size < LARGE
}

/// `ptr` as mimalloc returned it for `size` bytes, counted when it is a block.
fn counted(ptr: *mut u8, size: usize) -> *mut u8 {
    if !ptr.is_null() {
        SMALL_IN_USE.fetch_add(size, Ordering::Relaxed);
    }
    ptr
}

/// Whether mimalloc allocated `ptr` (a look-up in its segment map).
fn mimalloc_owns(ptr: *mut u8) -> bool {
    // SAFETY: only compares the address with mimalloc's reserved regions.
    unsafe { libmimalloc_sys::mi_is_in_heap_region(ptr.cast()) }
}

// SAFETY: every block is allocated and resized by the allocator that owns it and freed by the
// one whose region holds it; a resize across [`LARGE`], or of a block from C, allocates anew,
// copies and frees the old block.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if small(layout.size()) {
            counted(MiMalloc.alloc(layout), layout.size())
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if small(layout.size()) {
            counted(MiMalloc.alloc_zeroed(layout), layout.size())
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if small(layout.size()) && mimalloc_owns(ptr) {
            SMALL_IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            MiMalloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old_small, new_small) = (small(layout.size()), small(new_size));
        if !old_small && !new_small {
            return System.realloc(ptr, layout, new_size);
        }
        if old_small && new_small && mimalloc_owns(ptr) {
            let new = MiMalloc.realloc(ptr, layout, new_size);
            if !new.is_null() {
                SMALL_IN_USE.fetch_add(new_size, Ordering::Relaxed);
                SMALL_IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            }
            return new;
        }
        let moved = Layout::from_size_align_unchecked(new_size, layout.align());
        let new = self.alloc(moved);
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

/// The bytes the allocators have handed out and not had back: glibc's small and mmapped
/// chunks (C++ and large Rust blocks) and mimalloc's blocks. What the SPARQL endpoint's memory
/// limit watches grow.
pub fn heap_in_use() -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let glibc = unsafe {
        let info = libc::mallinfo2();
        info.uordblks + info.hblkhd
    };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let glibc = 0;
    glibc + SMALL_IN_USE.load(Ordering::Relaxed)
}

/// Caps glibc's arenas at the number of cores (at least 2): fewer arenas, less memory kept
/// free in each; and has mimalloc give freed pages back at once instead of after 10 ms (on a
/// node at rest 35 s after a load: 87 MB resident instead of 95–120). Call first thing in
/// `main`, before any thread starts.
pub fn tune_allocator() {
    // SAFETY: mi_option_set only changes a tuning parameter of the allocator.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
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
    // SAFETY: mi_collect only frees what mimalloc holds unused; no live allocation is touched.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the OS; no allocation is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::{heap_in_use, LARGE};

    /// What Oxigraph does with a RocksDB error: a string from C's `malloc`, freed by Rust.
    #[test]
    fn a_block_from_cs_malloc_goes_back_to_glibc() {
        // SAFETY: strdup copies a NUL-terminated literal; from_raw takes the only pointer.
        let message =
            unsafe { std::ffi::CString::from_raw(libc::strdup(c"IO error: lock hold".as_ptr())) };
        assert_eq!(message.to_str().unwrap(), "IO error: lock hold");
        let mut bytes = message.into_bytes();
        bytes.extend_from_slice(b": and more");
        assert_eq!(bytes, b"IO error: lock hold: and more");
    }

    /// The SPARQL memory limit sees the small blocks too (glibc's counters do not).
    #[test]
    fn small_blocks_count_in_the_heap_in_use() {
        let before = heap_in_use();
        let blocks: Vec<Vec<u8>> = (0..65_536).map(|_| vec![1u8; 1024]).collect();
        let grown = heap_in_use().saturating_sub(before);
        assert!(grown >= 32 << 20, "{grown} bytes");
        drop(blocks);
    }

    /// A block resized across [`LARGE`] moves between the allocators with its bytes, both ways.
    #[test]
    fn a_block_keeps_its_bytes_when_it_moves_between_the_allocators() {
        let bytes = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
        let mut v = bytes(LARGE - 1);
        v.reserve_exact(2);
        assert!(v.capacity() > LARGE);
        assert_eq!(v, bytes(LARGE - 1), "grown into glibc's");
        v.extend_from_slice(&[0; 2]);
        v.truncate(100);
        v.shrink_to_fit();
        assert_eq!(v, bytes(100), "shrunk back into mimalloc's");
        let zeroed = vec![0u64; LARGE];
        assert!(zeroed.iter().all(|&x| x == 0));
        let mut small = vec![7u8; 10];
        small.resize(4 * LARGE, 9);
        assert_eq!((small[9], small[10], small[4 * LARGE - 1]), (7, 9, 9));
    }
}
