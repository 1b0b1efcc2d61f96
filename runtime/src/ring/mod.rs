//! Shared-memory rings: the packet path between ranks of one host.
//!
//! Every rank owns one *ring segment*, a file in `/dev/shm` beside its arena
//! (`<arena>.rings`), mapped by every rank of the host and unlinked as soon as
//! they all have it, like the arena. It holds one single-producer,
//! single-consumer byte ring per possible sender, and the owner's doorbell:
//!
//! ```text
//! segment: [ header: magic, version, ranks, ring bytes (64 B) ]
//!          [ bell: u32, the futex word (own 64-byte line)      ]
//!          [ sleeping: u32, the owner's threads asleep on the bell;
//!            then u32, those asleep in the runtime (line)       ]
//!          flags: per sender s, `FLAG_SLOTS` lines (line s·16 + c:
//!            sender s's barrier flags for communicator slot c:
//!            arrive: u64, release: u64)
//!          ring 0, ring 1, ..., ring n-1      (ring s: sender s)
//! ring:    [ tail: u64, written by the sender (own line)        ]
//!          [ head: u64, written by the owner (own line)         ]
//!          [ waiting: u32, the sender has bytes the ring could
//!            not take (own line)                                ]
//!          [ data: `cap` bytes, cap a power of two              ]
//! ```
//!
//! A ring is a byte stream, like a pipe: the sender appends the packet's wire
//! encoding (header, route, payload; or header, route and a 24-byte arena
//! descriptor for a payload in an arena, `FLAG_SHM`) as far as there is room,
//! keeps the rest in its own memory and appends it later, so a packet of any
//! size goes through a ring of any size and the sender never waits. The
//! owner parses the stream (one copy out of the ring per packet), frees the
//! room at once, and hands each packet to its NI.
//!
//! Doorbell: after publishing bytes, a sender increments the owner's bell
//! and, only if the owner said it sleeps, wakes it with `FUTEX_WAKE` (futexes
//! work across processes on shared memory) — or, when the owner has sockets
//! to other hosts to watch as well and so sleeps in epoll, pokes it with a
//! heartbeat on its Unix socket (`Bell::Poke`; the caller sends it). The owner polls its bell (one
//! cache line for all senders), then sleeps with `FUTEX_WAIT` on the value it
//! last drained at; the sender's increment (sequentially consistent, as is
//! the owner's `sleeping` store) makes that wait return at once if it came
//! after the owner's last look. A sender whose bytes did not fit raises the
//! ring's `waiting` flag; the owner, having freed room, rings the sender's
//! bell, so the sender appends the rest without polling.
//!
//! Barrier flags: on one host a barrier needs no packets. A rank that
//! arrives stores the barrier's number in its arrive flag in the releasing
//! rank's segment and rings its bell; that rank, once every member's flag
//! holds the number, stores it in its release flag in each member's segment
//! and rings theirs (`Comm::barrier`). Each line has one writer (sender s)
//! and one reader (the owner); a communicator uses slot = its id, so the
//! communicators one rank is in at once (their ids are distinct, see
//! `comm::group`) never share a line. A flag is only compared with the
//! number the reader expects, so a peer that writes anything can at worst
//! stall a barrier (which then times out), never corrupt memory.
//!
//! Nothing a peer writes is trusted: indices are checked against the ring's
//! size (a head or tail that moves backwards or past the other is a
//! protocol error), every offset is masked into the ring, every packet
//! header is decoded and checked like one from a socket.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::shmfile::{Mapping, Pages};

mod stream;
pub use stream::{Rx, Sent, Taken, Tx};

/// What ringing a doorbell asks of the ringer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bell {
    /// Done (the owner was awake, or is woken from its futex).
    Rung,
    /// The owner sleeps in its runtime: poke it through its socket.
    Poke,
}

/// Segment header magic ("MCRINGS2": with the barrier flags).
const MAGIC: u64 = u64::from_le_bytes(*b"MCRINGS2");
const LINE: usize = 64;
/// Segment header, bell line, sleeping line.
const SEG_HEAD: usize = 3 * LINE;
/// Ring header: tail, head, waiting lines.
const RING_HEAD: usize = 3 * LINE;
/// Barrier flag lines per sender: communicators with ids below this use
/// the flags (slot = id); others use messages.
pub const FLAG_SLOTS: usize = 16;

/// A barrier flag (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// The sender arrived (in the releasing rank's segment; between two
    /// ranks, in the other's: the exchange).
    Arrive,
    /// The sender released the owner (in a member's segment).
    Release,
}
/// Smallest and largest ring, in data bytes.
pub const MIN_RING_BYTES: usize = 4 << 10;
pub const MAX_RING_BYTES: usize = 1 << 30;

/// Ring bytes per sender when `MCAST_RING_BYTES` is unset: 32 MiB for the
/// host's n² rings, each between 4 KiB and 256 KiB (a power of two).
pub fn auto_ring_bytes(ranks: usize) -> usize {
    let n = ranks.max(1) as u64;
    let share = (32u64 << 20) / (n * n);
    let share = share.clamp(MIN_RING_BYTES as u64, 256 << 10);
    1usize << (63 - share.leading_zeros())
}

/// The file of a rank's ring segment, beside its arena.
pub fn segment_path(arena: &str) -> String {
    format!("{arena}.rings")
}

/// One mapped ring segment (ours or a peer's).
pub struct Segment {
    base: *mut u8,
    len: usize,
    pub(super) ranks: usize,
    pub(super) cap: usize,
    /// The file mapped (`None`: a heap copy stands in, for tests and
    /// fuzzing).
    map: Option<Mapping>,
    _heap: Option<Vec<u64>>,
}

// Plain shared memory: every access is bounds-checked or atomic.
unsafe impl Send for Segment {}
unsafe impl Sync for Segment {}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("ranks", &self.ranks)
            .field("cap", &self.cap)
            .finish()
    }
}

/// Bytes of the flag lines of a segment for `ranks` senders.
fn flags_len(ranks: usize) -> Option<usize> {
    ranks.checked_mul(FLAG_SLOTS * LINE)
}

fn seg_len(ranks: usize, cap: usize) -> Option<usize> {
    ranks
        .checked_mul(RING_HEAD + cap)?
        .checked_add(flags_len(ranks)?)?
        .checked_add(SEG_HEAD)
}

impl Segment {
    fn init(&self) {
        // SAFETY: the header lies in the mapping (len >= SEG_HEAD).
        unsafe {
            *(self.base as *mut u64) = MAGIC;
            *(self.base.add(8) as *mut u64) = self.ranks as u64;
            *(self.base.add(16) as *mut u64) = self.cap as u64;
        }
    }

    /// Create a segment at `path` for `ranks` senders of `cap` bytes each,
    /// its pages allocated at once: a ring's first pass through its pages
    /// would otherwise fault on every page, at the writer and at the reader
    /// (4 ranks, 1 B: about 0.4 µs a timed bcast in the first thousand
    /// against 0.25 after).
    pub fn create(path: &str, ranks: usize, cap: usize) -> std::io::Result<Segment> {
        if !cap.is_power_of_two() || !(MIN_RING_BYTES..=MAX_RING_BYTES).contains(&cap) {
            return Err(std::io::Error::other(format!(
                "ring size {cap}: a power of two from {MIN_RING_BYTES} to {MAX_RING_BYTES}"
            )));
        }
        let len = seg_len(ranks, cap).ok_or_else(|| std::io::Error::other("rings too large"))?;
        let map = Mapping::create(path, len, Pages::Now)?;
        let s = Segment {
            base: map.base(),
            len,
            ranks,
            cap,
            map: Some(map),
            _heap: None,
        };
        s.init();
        Ok(s)
    }

    /// Map a peer's segment; its header must describe `ranks` rings that fit.
    pub fn open(path: &str, ranks: usize) -> std::io::Result<Segment> {
        let map = Mapping::open(path, SEG_HEAD, Pages::Now)?;
        let (base, len) = (map.base(), map.len());
        // SAFETY: len >= SEG_HEAD.
        let (magic, r, cap) = unsafe {
            (
                *(base as *const u64),
                *(base.add(8) as *const u64),
                *(base.add(16) as *const u64),
            )
        };
        let s = Segment {
            base,
            len,
            ranks,
            cap: cap as usize,
            map: Some(map),
            _heap: None,
        };
        let cap_ok = s.cap.is_power_of_two() && (MIN_RING_BYTES..=MAX_RING_BYTES).contains(&s.cap);
        if magic != MAGIC || r != ranks as u64 || !cap_ok || seg_len(ranks, s.cap) != Some(len) {
            return Err(std::io::Error::other(format!(
                "{path} is not a ring segment for {ranks} ranks"
            )));
        }
        Ok(s)
    }

    /// A segment in heap memory (one process: tests and fuzzing).
    pub fn heap(ranks: usize, cap: usize) -> Segment {
        let len = seg_len(ranks, cap).expect("small");
        let mut v = vec![0u64; len.div_ceil(8)];
        let s = Segment {
            base: v.as_mut_ptr() as *mut u8,
            len,
            ranks,
            cap,
            map: None,
            _heap: Some(v),
        };
        s.init();
        s
    }

    /// Remove our segment's file (the mappings stay valid).
    pub fn unlink(&self) {
        if let Some(m) = &self.map {
            m.unlink();
        }
    }

    /// Data bytes per ring.
    pub fn cap(&self) -> usize {
        self.cap
    }

    fn word32(&self, off: usize) -> &AtomicU32 {
        assert!(off + 4 <= self.len && off.is_multiple_of(4));
        // SAFETY: in bounds (checked) and aligned within an aligned mapping.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    fn word64(&self, off: usize) -> &AtomicU64 {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: as above.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    fn bell(&self) -> &AtomicU32 {
        self.word32(LINE)
    }

    /// How many of the owner's threads sleep on the futex. A count, not a
    /// flag: the host thread and the background thread may both be asleep
    /// (the host's wait runs while the background thread still drives), and
    /// one waking must not hide the other from the next ringer.
    fn sleeping(&self) -> &AtomicU32 {
        self.word32(2 * LINE)
    }

    /// How many of the owner's threads sleep in the runtime (epoll), to be
    /// poked through the socket.
    fn sleeping_in_runtime(&self) -> &AtomicU32 {
        self.word32(2 * LINE + 4)
    }

    /// Offset of ring `s`'s header (`s` < ranks, checked by callers).
    fn ring(&self, s: usize) -> usize {
        SEG_HEAD + self.ranks * FLAG_SLOTS * LINE + s * (RING_HEAD + self.cap)
    }

    /// Barrier flag `which` of sender `s` for communicator slot `slot`
    /// (`None` if either is out of range).
    pub fn flag(&self, s: usize, slot: usize, which: Flag) -> Option<&AtomicU64> {
        if s >= self.ranks || slot >= FLAG_SLOTS {
            return None;
        }
        let line = SEG_HEAD + (s * FLAG_SLOTS + slot) * LINE;
        Some(self.word64(line + 8 * (which as usize)))
    }

    pub(super) fn tail(&self, s: usize) -> &AtomicU64 {
        self.word64(self.ring(s))
    }

    pub(super) fn head(&self, s: usize) -> &AtomicU64 {
        self.word64(self.ring(s) + LINE)
    }

    pub(super) fn waiting(&self, s: usize) -> &AtomicU32 {
        self.word32(self.ring(s) + 2 * LINE)
    }

    /// Copy `src` into ring `s` at stream position `pos` (wrapping).
    pub(super) fn put(&self, s: usize, pos: u64, src: &[u8]) {
        let data = self.ring(s) + RING_HEAD;
        let at = (pos as usize) & (self.cap - 1);
        let first = src.len().min(self.cap - at);
        assert!(data + self.cap <= self.len && src.len() <= self.cap);
        // SAFETY: both pieces lie in ring s's data area (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.add(data + at), first);
            if first < src.len() {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(first),
                    self.base.add(data),
                    src.len() - first,
                );
            }
        }
    }

    /// Copy `dst.len()` bytes out of ring `s` from stream position `pos`.
    pub(super) fn get(&self, s: usize, pos: u64, dst: &mut [u8]) {
        // SAFETY: `dst` is valid for writes of its length.
        unsafe { self.get_raw(s, pos, dst.as_mut_ptr(), dst.len()) }
    }

    /// [`Segment::get`] into memory not yet initialized (a buffer's spare
    /// capacity), which it initializes whole.
    pub(super) fn get_uninit(&self, s: usize, pos: u64, dst: &mut [MaybeUninit<u8>]) {
        // SAFETY: `dst` is valid for writes of its length; `u8` and
        // `MaybeUninit<u8>` have the same layout.
        unsafe { self.get_raw(s, pos, dst.as_mut_ptr().cast(), dst.len()) }
    }

    /// # Safety
    /// `dst` must be valid for writes of `n` bytes.
    unsafe fn get_raw(&self, s: usize, pos: u64, dst: *mut u8, n: usize) {
        let data = self.ring(s) + RING_HEAD;
        let at = (pos as usize) & (self.cap - 1);
        let first = n.min(self.cap - at);
        assert!(data + self.cap <= self.len && n <= self.cap);
        // SAFETY: both pieces lie in ring s's data area (checked above),
        // and `dst` takes `n` bytes (the caller's promise).
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(data + at), dst, first);
            if first < n {
                std::ptr::copy_nonoverlapping(self.base.add(data), dst.add(first), n - first);
            }
        }
    }

    /// Ring this segment's doorbell (a sender published bytes, or room came
    /// free): wake the owner if it sleeps on the futex. Returns
    /// [`Bell::Poke`] if the owner sleeps in its runtime instead (it has
    /// sockets to other hosts to watch too): the caller must then poke it
    /// through its socket.
    pub fn ring_bell(&self) -> Bell {
        self.bell().fetch_add(1, Ordering::SeqCst);
        if self.sleeping().load(Ordering::SeqCst) != 0 {
            futex_wake(self.bell());
        }
        match self.sleeping_in_runtime().load(Ordering::SeqCst) {
            0 => Bell::Rung,
            _ => Bell::Poke,
        }
    }

    /// The bell's value now (take it *before* draining).
    pub fn bell_now(&self) -> u32 {
        self.bell().load(Ordering::SeqCst)
    }

    /// Sleep until the bell moves from `seen` or `max` passes (returns at
    /// once if it has moved already).
    pub fn sleep(&self, seen: u32, max: Duration) {
        self.sleeping().fetch_add(1, Ordering::SeqCst);
        if self.bell().load(Ordering::SeqCst) == seen {
            futex_wait(self.bell(), seen, max);
        }
        self.sleeping().fetch_sub(1, Ordering::SeqCst);
    }

    /// The owner is about to sleep in its runtime (epoll), where a poke on
    /// its socket wakes it: say so. Returns `false` if the bell has moved
    /// from `seen` already (do not sleep). [`Segment::awake`] undoes it.
    pub fn sleep_in_runtime(&self, seen: u32) -> bool {
        self.sleeping_in_runtime().fetch_add(1, Ordering::SeqCst);
        self.bell().load(Ordering::SeqCst) == seen
    }

    /// The owner is awake (after [`Segment::sleep_in_runtime`]).
    pub fn awake(&self) {
        self.sleeping_in_runtime().fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether anything is unread in ring `s` (for tests).
    pub fn unread(&self, s: usize) -> u64 {
        let t = self.tail(s).load(Ordering::Acquire);
        t.wrapping_sub(self.head(s).load(Ordering::Acquire))
    }
}

fn futex_wait(word: &AtomicU32, seen: u32, max: Duration) {
    let ts = libc::timespec {
        tv_sec: max.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: max.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 in shared memory with a
    // relative timeout; a spurious or early return is harmless.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 in shared memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        );
    }
}

/// Fuzzing and tests: feed `chunks` of bytes, one after another, through a
/// 4 KiB ring from sender 1 to a reader, as a sender that writes anything
/// would (`skew` moves the tail past what was written: an impossible index
/// when it is large). Every packet that comes out with `FLAG_SHM` has its
/// descriptor decoded. Returns the packets taken; never panics.
#[doc(hidden)]
pub fn fuzz_stream(chunks: &[&[u8]], skew: u64) -> usize {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut rx = Rx::default();
    let mut tail = 0u64;
    let mut taken = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        let chunk = &chunk[..chunk.len().min(MIN_RING_BYTES)];
        seg.put(1, tail, chunk);
        tail = tail.wrapping_add(chunk.len() as u64);
        let t = if i + 1 == chunks.len() {
            tail.wrapping_add(skew)
        } else {
            tail
        };
        seg.tail(1).store(t, std::sync::atomic::Ordering::Release);
        let mut out = |(p, flags): Taken| {
            if flags == crate::wire::FLAG_SHM {
                crate::wire::ShmDesc::decode(&p.payload).map_err(|e| e.to_string())?;
            }
            taken += 1;
            Ok(())
        };
        if rx.drain(&seg, 1, &mut |_| Ok(()), &mut out).is_err() {
            break;
        }
    }
    taken
}

#[cfg(test)]
mod tests;
