//! One arena: a file in `/dev/shm`, created by its owner and mapped by
//! every rank of the host.

use std::sync::atomic::AtomicU64;

use super::ALIGN;
use crate::shmfile::{Mapping, Pages};

/// Where arenas live.
pub const ARENA_DIR: &str = "/dev/shm";
/// How every arena's file name starts: `mcast-PID-RANK-NONCE`.
pub const ARENA_PREFIX: &str = "mcast-";

/// How the file names of the arenas process `pid` creates start (mclaunch
/// removes those of a rank that died before unlinking its own).
pub fn arena_prefix(pid: u32) -> String {
    format!("{ARENA_PREFIX}{pid}-")
}

/// One mapped arena.
pub(crate) struct Arena {
    pub(super) base: *mut u8,
    pub(super) len: usize,
    map: Mapping,
}

// The mapping is plain shared memory; all access goes through bounds-checked
// slices and atomics.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena").field("len", &self.len).finish()
    }
}

impl Arena {
    fn of(map: Mapping) -> Arena {
        Arena {
            base: map.base(),
            len: map.len(),
            map,
        }
    }

    /// Create this rank's arena of `len` bytes (pages are only allocated
    /// when first written).
    pub(crate) fn create(rank: usize, len: usize) -> std::io::Result<(Arena, String)> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = format!(
            "{ARENA_DIR}/{}{rank}-{nanos:08x}",
            arena_prefix(std::process::id())
        );
        Ok((
            Arena::of(Mapping::create(&path, len, Pages::OnTouch)?),
            path,
        ))
    }

    /// Map a peer's arena.
    pub(crate) fn open(path: &str) -> std::io::Result<Arena> {
        let ours = path
            .strip_prefix(ARENA_DIR)
            .and_then(|p| p.strip_prefix('/'))
            .is_some_and(|name| name.starts_with(ARENA_PREFIX));
        if !ours || path.contains("..") {
            return Err(std::io::Error::other(format!("not an mcast arena: {path}")));
        }
        Ok(Arena::of(Mapping::open(
            path,
            ALIGN as usize,
            Pages::OnTouch,
        )?))
    }

    /// Remove our arena's file (the mappings stay valid).
    pub(crate) fn unlink(&self) {
        self.map.unlink();
    }

    pub(super) fn contains(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let (b, p) = (self.base as usize, ptr as usize);
        (p >= b && p + len <= b + self.len).then(|| (p - b) as u64)
    }

    /// Whether a slot header of `header` bytes at `slot` lies in the arena,
    /// aligned.
    pub(super) fn slot_ok(&self, slot: u64, header: u64) -> bool {
        slot & (ALIGN - 1) == 0
            && slot
                .checked_add(header)
                .is_some_and(|e| e <= self.len as u64)
    }

    /// The u64 at `at`, if it lies in the arena, 8-byte aligned.
    pub(super) fn word(&self, at: u64) -> Option<&AtomicU64> {
        let fits = at & 7 == 0 && at.checked_add(8).is_some_and(|e| e <= self.len as u64);
        // SAFETY: in bounds and 8-byte aligned inside a page-aligned mapping.
        fits.then(|| unsafe { &*(self.base.add(at as usize) as *const AtomicU64) })
    }

    pub(super) fn bytes(&self, off: u64, len: usize) -> &[u8] {
        // SAFETY: callers check off + len <= self.len.
        unsafe { std::slice::from_raw_parts(self.base.add(off as usize), len) }
    }
}
