//! Shared-memory arenas: large payloads between ranks of one host travel by
//! reference.
//!
//! Every rank of a host owns one arena, a file in `/dev/shm` mapped by itself
//! and by every other rank of the host (it is unlinked as soon as they all
//! have it open, so nothing is left behind). A root copies its message into
//! its arena once; from then on a packet sent to a rank of the same host
//! carries a 24-byte descriptor (owner, slot, offset, length: see
//! `wire::ShmDesc`) over the Unix socket instead of its payload. The
//! receiving NI turns the descriptor back into `Bytes` that point into the
//! owner's arena, forwards those (FPFS: every child gets a descriptor to the
//! same bytes) and hands them to its host, which copies them into the user's
//! buffer: one copy per receiver instead of two kernel copies per hop.
//!
//! Slots are counted: the owner's own reference, plus one per descriptor in
//! flight or held by a receiver. A sender adds one *before* it sends a
//! descriptor and a receiver drops one when its last `Bytes` of the slot
//! goes, so a slot is free exactly when nobody can read it any more. The
//! owner allocates slots in a ring and reclaims them oldest first. When the
//! arena is full (a slow or dead receiver still holds the oldest slot) a
//! payload simply goes inline over the socket as before: shared memory is an
//! optimisation, never a dependency.
//!
//! Peers of one job trust each other (they hold the job token); still, every
//! descriptor is checked against the arena's bounds and the slot's recorded
//! length before anything is read, so a bad one is a protocol error, never a
//! stray memory access.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::sync::lock;
use crate::wire::ShmDesc;

/// Where arenas live.
pub const ARENA_DIR: &str = "/dev/shm";
/// How every arena's file name starts: `mcast-PID-RANK-NONCE`.
pub const ARENA_PREFIX: &str = "mcast-";

/// How the file names of the arenas process `pid` creates start (mclaunch
/// removes those of a rank that died before unlinking its own).
pub fn arena_prefix(pid: u32) -> String {
    format!("{ARENA_PREFIX}{pid}-")
}

/// Bytes of a slot's header: the reference count (u32), then the length of
/// the data (u64 at offset 8); data starts at this offset in the slot.
pub(crate) const SLOT_HEADER: u64 = 64;
/// Slots are aligned to this.
const ALIGN: u64 = 64;
/// Payloads smaller than this go inline (a descriptor saves nothing).
pub const SHM_MIN_PAYLOAD: usize = 16 * 1024;

/// One mapped arena.
pub(crate) struct Arena {
    base: *mut u8,
    len: usize,
    /// Our own arena's file until it is unlinked.
    path: Mutex<Option<CString>>,
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

fn last_err(what: &str) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Arena {
    fn map(fd: libc::c_int, len: usize, what: &str) -> std::io::Result<*mut u8> {
        // SAFETY: a fresh shared mapping of an open file; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_err(&format!("mapping {what}")));
        }
        Ok(p as *mut u8)
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
        let c = CString::new(path.clone()).map_err(std::io::Error::other)?;
        // SAFETY: plain system calls on a path we own; results checked.
        unsafe {
            let fd = libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            );
            if fd < 0 {
                return Err(last_err(&format!("creating {path}")));
            }
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                let e = last_err(&format!("sizing {path}"));
                libc::close(fd);
                libc::unlink(c.as_ptr());
                return Err(e);
            }
            let base = Self::map(fd, len, &path);
            libc::close(fd);
            match base {
                Ok(base) => Ok((
                    Arena {
                        base,
                        len,
                        path: Mutex::new(Some(c)),
                    },
                    path,
                )),
                Err(e) => {
                    libc::unlink(c.as_ptr());
                    Err(e)
                }
            }
        }
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
        let c = CString::new(path).map_err(std::io::Error::other)?;
        // SAFETY: plain system calls; results checked.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(last_err(&format!("opening {path}")));
            }
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 {
                let e = last_err(&format!("stat of {path}"));
                libc::close(fd);
                return Err(e);
            }
            let len = st.st_size as usize;
            if len < SLOT_HEADER as usize {
                libc::close(fd);
                return Err(std::io::Error::other(format!("{path} is too small")));
            }
            let base = Self::map(fd, len, path);
            libc::close(fd);
            Ok(Arena {
                base: base?,
                len,
                path: Mutex::new(None),
            })
        }
    }

    /// Remove our arena's file (the mappings stay valid).
    pub(crate) fn unlink(&self) {
        if let Some(c) = lock(&self.path).take() {
            // SAFETY: unlinking our own file.
            unsafe {
                libc::unlink(c.as_ptr());
            }
        }
    }

    fn contains(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let (b, p) = (self.base as usize, ptr as usize);
        (p >= b && p + len <= b + self.len).then(|| (p - b) as u64)
    }

    /// The reference count of the slot at `slot` (checked: in bounds, aligned).
    /// Whether a slot header at `slot` lies in the arena, aligned.
    fn slot_ok(&self, slot: u64) -> bool {
        slot & (ALIGN - 1) == 0
            && slot
                .checked_add(SLOT_HEADER)
                .is_some_and(|e| e <= self.len as u64)
    }

    fn count(&self, slot: u64) -> Option<&AtomicU32> {
        if !self.slot_ok(slot) {
            return None;
        }
        // SAFETY: in bounds and 64-byte aligned inside a page-aligned mapping.
        Some(unsafe { &*(self.base.add(slot as usize) as *const AtomicU32) })
    }

    /// The data length the owner recorded in the slot header.
    fn slot_len(&self, slot: u64) -> Option<&AtomicU64> {
        if !self.slot_ok(slot) {
            return None;
        }
        // SAFETY: as above; offset 8 is 8-byte aligned.
        Some(unsafe { &*(self.base.add(slot as usize + 8) as *const AtomicU64) })
    }

    fn bytes(&self, off: u64, len: usize) -> &[u8] {
        // SAFETY: callers check off + len <= self.len.
        unsafe { std::slice::from_raw_parts(self.base.add(off as usize), len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: unmapping our own mapping; no slices outlive the Arena
        // (every `Bytes` into it holds an `Arc<Arena>`).
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

/// The owner's ring of slots, oldest first.
#[derive(Debug, Default)]
struct Ring {
    head: u64,
    live: VecDeque<(u64, u64)>,
}

/// What this process knows of the host's arenas.
pub(crate) struct Shm {
    me: usize,
    /// Every arena of the host by owner rank (ours included).
    arenas: Vec<Option<Arc<Arena>>>,
    ring: Mutex<Ring>,
    /// Every live slot reference in this process: data start -> (owner,
    /// slot, data length). Lets a writer find the slot of any `Bytes` that
    /// points into an arena (including sub-slices of a root's message).
    held: Mutex<BTreeMap<usize, (usize, u64, usize)>>,
    /// Descriptors sent (payloads that did not cross a socket).
    pub(crate) sent: AtomicU64,
}

impl std::fmt::Debug for Shm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shm").field("me", &self.me).finish()
    }
}

/// The owner of `Bytes` that point into an arena: drops its slot reference
/// when the last of them goes.
struct SlotRef {
    shm: Arc<Shm>,
    owner: usize,
    slot: u64,
    data: u64,
    len: usize,
}

impl AsRef<[u8]> for SlotRef {
    fn as_ref(&self) -> &[u8] {
        match self.shm.arena(self.owner) {
            Some(a) => a.bytes(self.data, self.len),
            None => &[],
        }
    }
}

impl Drop for SlotRef {
    fn drop(&mut self) {
        if let Some(a) = self.shm.arena(self.owner) {
            lock(&self.shm.held).remove(&(a.base as usize + self.data as usize));
            if let Some(c) = a.count(self.slot) {
                c.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

impl Shm {
    /// `arenas[r]` is rank r's arena if r shares this host (ours at `me`).
    pub(crate) fn new(me: usize, arenas: Vec<Option<Arc<Arena>>>) -> Shm {
        Shm {
            me,
            arenas,
            ring: Mutex::new(Ring::default()),
            held: Mutex::new(BTreeMap::new()),
            sent: AtomicU64::new(0),
        }
    }

    fn arena(&self, owner: usize) -> Option<&Arena> {
        self.arenas.get(owner).and_then(|a| a.as_deref())
    }

    fn wrap(self: &Arc<Self>, owner: usize, slot: u64, data: u64, len: usize) -> Bytes {
        if let Some(a) = self.arena(owner) {
            lock(&self.held).insert(a.base as usize + data as usize, (owner, slot, len));
        }
        Bytes::from_owner(SlotRef {
            shm: self.clone(),
            owner,
            slot,
            data,
            len,
        })
    }

    /// Copy `data` into a fresh slot of our arena; `None` if it is full (or
    /// `data` is too small to be worth it).
    pub(crate) fn copy_in(self: &Arc<Self>, data: &[u8]) -> Option<Bytes> {
        if data.len() < SHM_MIN_PAYLOAD {
            return None;
        }
        let arena = self.arena(self.me)?;
        let total = (SLOT_HEADER + data.len() as u64).div_ceil(ALIGN) * ALIGN;
        let size = arena.len as u64;
        let slot = {
            let mut r = lock(&self.ring);
            while let Some(&(off, _)) = r.live.front() {
                match arena.count(off) {
                    Some(c) if c.load(Ordering::Acquire) == 0 => {
                        r.live.pop_front();
                    }
                    _ => break,
                }
            }
            let off = match r.live.front().map(|&(t, _)| t) {
                None => Some(0).filter(|_| total <= size),
                Some(tail) if r.head > tail => {
                    if r.head + total <= size {
                        Some(r.head)
                    } else if total <= tail {
                        Some(0)
                    } else {
                        None
                    }
                }
                Some(tail) => Some(r.head).filter(|&h| h + total <= tail),
            }?;
            r.live.push_back((off, total));
            r.head = off + total;
            off
        };
        arena.count(slot)?.store(1, Ordering::Release);
        arena
            .slot_len(slot)?
            .store(data.len() as u64, Ordering::Release);
        let at = slot + SLOT_HEADER;
        // SAFETY: the slot [slot, slot + total) is ours alone until its count
        // is published in a descriptor, and lies inside the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), arena.base.add(at as usize), data.len());
        }
        Some(self.wrap(self.me, slot, at, data.len()))
    }

    /// If `payload` points into an arena, take one more reference to its slot
    /// for a receiver and describe it.
    pub(crate) fn describe(&self, payload: &Bytes) -> Option<ShmDesc> {
        if payload.len() < SHM_MIN_PAYLOAD {
            return None;
        }
        let p = payload.as_ptr() as usize;
        let (owner, slot, start, len) = {
            let held = lock(&self.held);
            let (&start, &(owner, slot, len)) = held.range(..=p).next_back()?;
            (owner, slot, start, len)
        };
        if p + payload.len() > start + len {
            return None;
        }
        let arena = self.arena(owner)?;
        let data = arena.contains(payload.as_ptr(), payload.len())?;
        arena.count(slot)?.fetch_add(1, Ordering::AcqRel);
        self.sent.fetch_add(1, Ordering::Relaxed);
        Some(ShmDesc {
            owner: owner as u32,
            len: payload.len() as u32,
            slot,
            data,
        })
    }

    /// Turn a received descriptor into `Bytes` (taking over the reference
    /// the sender added for us).
    pub(crate) fn open_desc(self: &Arc<Self>, d: &ShmDesc) -> Result<Bytes, String> {
        let owner = d.owner as usize;
        let arena = self
            .arena(owner)
            .ok_or_else(|| format!("descriptor into rank {owner}'s arena, which is not shared"))?;
        let count = arena
            .count(d.slot)
            .ok_or_else(|| format!("descriptor slot {} out of bounds", d.slot))?;
        let slot_len = arena
            .slot_len(d.slot)
            .map_or(0, |l| l.load(Ordering::Acquire));
        let first = d.slot + SLOT_HEADER; // slot_ok: no overflow
        let slot_end = first.saturating_add(slot_len);
        let end = d.data.checked_add(d.len as u64);
        if d.data < first || end.is_none_or(|e| e > slot_end || e > arena.len as u64) {
            return Err(format!(
                "descriptor [{}, +{}) outside slot {} of {slot_len} bytes",
                d.data, d.len, d.slot
            ));
        }
        if count.load(Ordering::Acquire) == 0 {
            return Err(format!("descriptor into free slot {}", d.slot));
        }
        Ok(self.wrap(owner, d.slot, d.data, d.len as usize))
    }

    /// Release a reference taken by `describe` for a descriptor that was
    /// never sent.
    #[cfg(test)]
    pub(crate) fn undo(&self, d: &ShmDesc) {
        if let Some(c) = self.arena(d.owner as usize).and_then(|a| a.count(d.slot)) {
            c.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Remove our arena's file once every peer has it open.
    pub(crate) fn unlink_own(&self) {
        if let Some(a) = self.arena(self.me) {
            a.unlink();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_host(n: usize, len: usize) -> Vec<Arc<Shm>> {
        // Rank 0 owns an arena; every "rank" here maps it (same process).
        let (own, path) = Arena::create(0, len).expect("create");
        let own = Arc::new(own);
        let mut out = vec![Arc::new(Shm::new(0, vec![Some(own.clone())]))];
        for _ in 1..n {
            let peer = Arc::new(Arena::open(&path).expect("open"));
            out.push(Arc::new(Shm::new(1, vec![Some(peer)])));
        }
        own.unlink();
        out
    }

    #[test]
    fn descriptors_round_trip_and_slots_come_back() {
        let hosts = one_host(2, 1 << 20);
        let (owner, peer) = (&hosts[0], &hosts[1]);
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        for round in 0..50 {
            let b = owner.copy_in(&data).expect("room");
            let part = b.slice(20_000..60_000);
            let d = owner.describe(&part).expect("in the arena");
            assert_eq!(d.len, 40_000);
            let got = peer.open_desc(&d).expect("valid");
            assert_eq!(&got[..], &data[20_000..60_000], "round {round}");
            // Forwarding the received bytes describes the same slot.
            let d2 = peer.describe(&got).expect("still in the arena");
            assert_eq!((d2.slot, d2.data), (d.slot, d.data));
            peer.undo(&d2);
            drop((b, part, got));
        }
        // 50 rounds of 100 KB went through a 1 MiB arena: slots were reused.
    }

    #[test]
    fn a_full_arena_falls_back_and_recovers() {
        let hosts = one_host(1, 256 * 1024);
        let s = &hosts[0];
        let data = vec![7u8; 100_000];
        let a = s.copy_in(&data).expect("first");
        let b = s.copy_in(&data).expect("second");
        assert!(s.copy_in(&data).is_none(), "third does not fit");
        drop(a);
        let c = s.copy_in(&data).expect("the oldest slot came back");
        drop((b, c));
        assert!(
            s.copy_in(&[1u8; 10]).is_none(),
            "small payloads stay inline"
        );
    }

    #[test]
    fn bad_descriptors_are_refused() {
        let hosts = one_host(2, 1 << 20);
        let b = hosts[0].copy_in(&vec![1u8; 50_000]).expect("room");
        let d = hosts[0].describe(&b).expect("described");
        let bad = [
            ShmDesc { owner: 5, ..d },
            ShmDesc {
                slot: d.slot + 1,
                ..d
            },
            ShmDesc { slot: 1 << 40, ..d },
            ShmDesc { len: 60_000, ..d },
            ShmDesc {
                data: d.data - 8,
                ..d
            },
            ShmDesc {
                data: u64::MAX - 4,
                ..d
            },
        ];
        for x in bad {
            assert!(hosts[1].open_desc(&x).is_err(), "{x:?}");
        }
        hosts[0].undo(&d);
        let free = hosts[0].describe(&b).expect("described");
        hosts[0].undo(&free);
        drop(b);
        assert!(hosts[1].open_desc(&d).is_err(), "freed slot");
    }
}
