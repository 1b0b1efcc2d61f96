//! Single-copy transfers within a host (issue 17, item 3): what a rank of
//! this host pays to get a large payload, with mcast's arenas (the root
//! copies the message into its shared-memory arena once, each receiver
//! copies it out) against Linux cross-memory attach (`process_vm_readv`:
//! each receiver copies straight from the root's private buffer, as Open
//! MPI's vader does with `btl_vader_single_copy_mechanism=cma`).
//!
//! `process_vm_readv` reads from this process's own pid: the same kernel
//! path (pin the remote pages, copy) without a second process to
//! coordinate. Per message with r receivers on the host, the arena costs
//! one copy in plus r copies out, CMA r kernel copies, and CMA also needs
//! the root to wait until every receiver has read its buffer.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// A shared anonymous mapping of `len` bytes (what an arena is made of).
struct Shared {
    ptr: *mut u8,
    len: usize,
}

impl Shared {
    fn new(len: usize) -> Shared {
        // SAFETY: a fresh anonymous mapping; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED, "mmap");
        Shared {
            ptr: ptr.cast(),
            len,
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn copies(c: &mut Criterion) {
    let mut g = c.benchmark_group("single_copy");
    for len in [256usize << 10, 1 << 20, 4 << 20] {
        let src: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let arena = Shared::new(len);
        let mut dst = vec![0u8; len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(BenchmarkId::new("arena_copy_in", len), |b| {
            // SAFETY: both ranges are `len` bytes and do not overlap.
            b.iter(|| unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), arena.ptr, len) })
        });
        g.bench_function(BenchmarkId::new("arena_copy_out", len), |b| {
            // SAFETY: as above.
            b.iter(|| unsafe { std::ptr::copy_nonoverlapping(arena.ptr, dst.as_mut_ptr(), len) })
        });
        g.bench_function(BenchmarkId::new("process_vm_readv", len), |b| {
            b.iter(|| {
                let local = libc::iovec {
                    iov_base: dst.as_mut_ptr().cast(),
                    iov_len: len,
                };
                let remote = libc::iovec {
                    iov_base: src.as_ptr() as *mut libc::c_void,
                    iov_len: len,
                };
                // SAFETY: both iovecs describe `len` bytes this process owns.
                let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
                assert_eq!(n, len as isize, "process_vm_readv");
            })
        });
        assert_eq!(dst, src);
    }
    g.finish();
}

criterion_group!(benches, copies);
criterion_main!(benches);
