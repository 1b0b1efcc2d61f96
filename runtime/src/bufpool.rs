//! Large message buffers kept for reuse.
//!
//! A multicast of several packets is copied into one buffer when its last
//! packet arrives, and the caller gets that buffer as `Bytes`; a packet
//! read from a socket with no arena slot to land in gets a buffer of its
//! own. A fresh allocation of that size comes from the kernel as untouched
//! pages (glibc maps it, or trims its heap when it is freed), so filling it
//! costs a page fault per 4 KiB: with 4 MiB multicasts that was one fault
//! per page of every message received.
//!
//! Here a buffer whose last reference is dropped comes back to a small
//! process-wide pool (at most [`KEEP`] buffers and [`KEEP_BYTES`] in all),
//! and the next large message or packet goes into one of those, whose pages
//! are already mapped.
//! Buffers under [`MIN_BYTES`] are not pooled: the allocator serves those
//! from memory it keeps anyway.

use std::sync::Mutex;

use bytes::Bytes;

/// Smallest buffer worth keeping.
pub const MIN_BYTES: usize = 64 << 10;
/// Most buffers kept.
pub const KEEP: usize = 16;
/// Most bytes kept in all.
pub const KEEP_BYTES: usize = 16 << 20;

/// A pool of buffers; the runtime uses [`POOL`].
pub struct Pool {
    /// The kept buffers (empty, with their capacity).
    kept: Mutex<Vec<Vec<u8>>>,
}

/// The process's pool.
pub static POOL: Pool = Pool::new();

impl Pool {
    pub const fn new() -> Pool {
        Pool {
            kept: Mutex::new(Vec::new()),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A panic while holding the lock leaves only whole Vecs behind.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An empty buffer with room for `len` bytes: a kept one if one fits
    /// without leaving more than half of it unused, else a new one.
    pub fn take(&self, len: usize) -> Vec<u8> {
        if len >= MIN_BYTES {
            let mut k = self.kept();
            let best = (0..k.len())
                .filter(|&i| k[i].capacity() >= len && k[i].capacity() / 2 <= len)
                .min_by_key(|&i| k[i].capacity());
            if let Some(i) = best {
                return k.swap_remove(i);
            }
        }
        Vec::with_capacity(len)
    }

    /// `buf` as `Bytes` that give the buffer back to the pool when the last
    /// reference is dropped.
    pub fn freeze(&'static self, buf: Vec<u8>) -> Bytes {
        if buf.capacity() < MIN_BYTES {
            return Bytes::from(buf);
        }
        Bytes::from_owner(Kept { buf, pool: self })
    }

    fn put(&self, mut buf: Vec<u8>) {
        buf.clear();
        let mut k = self.kept();
        let held: usize = k.iter().map(Vec::capacity).sum();
        if k.len() < KEEP && held + buf.capacity() <= KEEP_BYTES {
            k.push(buf);
        }
    }

    /// Buffers kept now and their bytes.
    #[cfg(test)]
    pub fn kept_now(&self) -> (usize, usize) {
        let k = self.kept();
        (k.len(), k.iter().map(Vec::capacity).sum())
    }
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::new()
    }
}

/// A buffer on its way back to its pool.
struct Kept {
    buf: Vec<u8>,
    pool: &'static Pool,
}

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_large_buffer_is_reused_and_the_pool_stays_bounded() {
        static P: Pool = Pool::new();
        // Small buffers bypass the pool.
        drop(P.freeze(vec![1u8; 100]));
        assert_eq!(P.kept_now().0, 0);

        // A large one comes back once its last reference goes, and the next
        // take of a size it fits returns the same memory, empty.
        let mut v = P.take(1 << 20);
        v.extend_from_slice(&vec![7u8; 1 << 20]);
        let ptr = v.as_ptr();
        let b = P.freeze(v);
        assert_eq!(&b[..3], &[7, 7, 7]);
        let c = b.slice(10..20);
        drop(b);
        assert_eq!(P.kept_now().0, 0, "still referenced");
        drop(c);
        assert_eq!(P.kept_now(), (1, 1 << 20));
        let again = P.take(600 << 10);
        assert_eq!(again.as_ptr(), ptr);
        assert!(again.is_empty());
        drop(P.freeze(again));
        // Too small for it (most of it would sit unused) or too large: new
        // memory, and the kept one stays.
        let (tiny, big) = (P.take(MIN_BYTES), P.take(2 << 20));
        assert_ne!(tiny.as_ptr(), ptr);
        assert_ne!(big.as_ptr(), ptr);
        assert_eq!(P.kept_now().0, 1);

        // Never more than KEEP buffers or KEEP_BYTES.
        let many: Vec<Bytes> = (0..KEEP + 3)
            .map(|_| P.freeze(Vec::with_capacity(KEEP_BYTES / 3)))
            .collect();
        drop(many);
        let (n, bytes) = P.kept_now();
        assert!(n <= KEEP && bytes <= KEEP_BYTES, "{n} buffers, {bytes} B");
    }
}
